package topology

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// FuzzPlace places random gangs on random trees, one after another with
// Take, and checks what must always hold: no node is given more than its
// free capacity, counts add up, a required level is one domain, slices are
// whole, and a NoFit is only returned when no domain of the required level
// holds the gang.
func FuzzPlace(f *testing.F) {
	f.Add(uint64(1), uint8(2), uint8(4), uint8(4), uint8(5))
	f.Add(uint64(7), uint8(1), uint8(1), uint8(1), uint8(1))
	f.Add(uint64(42), uint8(3), uint8(2), uint8(8), uint8(20))
	f.Fuzz(func(t *testing.T, seed uint64, blocks, racks, hosts, gangs uint8) {
		rng := rand.New(rand.NewPCG(seed, seed>>1))
		nodes := makeNodes(int(blocks%4)+1, int(racks%5)+1, int(hosts%6)+1, 0)
		initial := map[string]int64{}
		for i := range nodes {
			cpu := rng.Int64N(33) * 500 // 0 to 16 cpu in halves
			nodes[i].Free["cpu"] = cpu
			initial[nodes[i].Name] = cpu
			nodes[i].Free[PodsResource] = rng.Int64N(12) * 1000
		}
		tr, err := Build(levels, nodes)
		if err != nil {
			t.Fatal(err)
		}
		used := map[string]int64{}
		pods := map[string]int64{}
		for range int(gangs%12) + 1 {
			ps := PodSet{Count: int32(rng.IntN(24) + 1), Requests: map[string]int64{"cpu": rng.Int64N(8)*500 + 500}}
			req := randomRequest(rng, ps.Count)
			// Each domain's room for the request, counted before placing.
			roomBefore := map[string]int64{}
			var total int64
			if req.Mode == Required {
				li := indexOf(req.Level)
				for _, d := range tr.at(li) {
					roomBefore[key(d.values)] = roomOf(tr, d, ps, req)
				}
			} else {
				for _, d := range tr.roots {
					total += roomOf(tr, d, ps, req)
				}
			}
			a, err := tr.Place(ps, req)
			var nf *NoFit
			switch {
			case errors.As(err, &nf):
				if req.Mode != Required && total*sliceOf(req) >= int64(ps.Count) {
					t.Fatalf("NoFit %q, but the nodes have room for %d units of %+v", nf.Message, total, req)
				}
				if req.Mode == Required {
					for k, room := range roomBefore {
						if room*sliceOf(req) >= int64(ps.Count) {
							t.Fatalf("NoFit %q, but domain %s has room for %d units of %+v", nf.Message, k, room, req)
						}
					}
				}
				continue
			case err != nil:
				t.Fatalf("%+v %+v: %v", ps, req, err)
			}
			var sum int32
			for name, k := range a.Nodes {
				sum += k
				used[name] += int64(k) * ps.Requests["cpu"]
				pods[name] += int64(k)
			}
			if sum != ps.Count {
				t.Fatalf("placed %d of %d pods", sum, ps.Count)
			}
			if req.Mode == Required {
				li := indexOf(req.Level)
				for _, d := range a.Domains {
					if key(d.Values[:li+1]) != key(a.Domains[0].Values[:li+1]) {
						t.Fatalf("required %s: domains %+v", req.Level, a.Domains)
					}
				}
			}
			if req.SliceSize > 0 {
				li := indexOf(req.SliceLevel)
				per := map[string]int32{}
				for _, d := range a.Domains {
					per[key(d.Values[:li+1])] += d.Count
				}
				for k, n := range per {
					if n%req.SliceSize != 0 {
						t.Fatalf("slice domain %s holds %d pods, not slices of %d", k, n, req.SliceSize)
					}
				}
			}
			tr.Take(a, ps)
		}
		for i := range nodes {
			n := nodes[i].Name
			if used[n] > initial[n] {
				t.Fatalf("node %s: %d milli-cpu placed on %d free", n, used[n], initial[n])
			}
		}
		for name, n := range tr.nodes {
			if n.Free[PodsResource] < 0 || n.Free["cpu"] < 0 {
				t.Fatalf("node %s over-committed: %v (placed %d pods)", name, n.Free, pods[name])
			}
		}
	})
}

func randomRequest(rng *rand.Rand, count int32) Request {
	req := Request{Mode: []Mode{Required, Preferred, Unconstrained}[rng.IntN(3)]}
	li := 0
	if req.Mode != Unconstrained {
		li = rng.IntN(len(levels))
		req.Level = levels[li]
	}
	if rng.IntN(3) == 0 {
		size := []int32{1, 2, 4}[rng.IntN(3)]
		if count%size == 0 {
			si := li + rng.IntN(len(levels)-li)
			req.SliceLevel, req.SliceSize = levels[si], size
		}
	}
	return req
}

func indexOf(level string) int {
	for i, l := range levels {
		if l == level {
			return i
		}
	}
	return -1
}

func key(values []string) string { return fmt.Sprint(values) }

func sliceOf(req Request) int64 {
	if req.SliceSize > 0 {
		return int64(req.SliceSize)
	}
	return 1
}

// roomOf counts, by brute force over nodes, the units (slices, or pods) of
// ps that domain d holds for req.
func roomOf(tr *Tree, d *domain, ps PodSet, req Request) int64 {
	size := sliceOf(req)
	sliceLevel := len(levels) - 1
	if req.SliceSize > 0 {
		sliceLevel = indexOf(req.SliceLevel)
	}
	// Pods per slice-level domain under d, then whole slices of each.
	per := map[string]int64{}
	for _, n := range tr.nodes {
		vals := make([]string, len(levels))
		for i, l := range levels {
			vals[i] = n.Labels[l]
		}
		if key(vals[:len(d.values)]) != key(d.values) {
			continue
		}
		cut := max(sliceLevel, len(d.values)-1)
		per[key(vals[:cut+1])] += fit(&n.Node, ps)
	}
	var units int64
	for _, p := range per {
		units += p / size
	}
	return units
}
