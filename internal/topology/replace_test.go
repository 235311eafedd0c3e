package topology

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// failed places ps under req on nodes, then builds the tree again without
// the nodes named in down, the placement taken, and says which of its
// domains were lost.
func failed(t *testing.T, nodes []Node, ps PodSet, req Request, down ...string) (*Tree, *Assignment, []bool) {
	t.Helper()
	a, err := build(t, nodes).Place(ps, req)
	if err != nil {
		t.Fatal(err)
	}
	var left []Node
	for _, n := range nodes {
		if slices.Contains(down, n.Name) {
			n.Ready = false
		}
		left = append(left, n)
	}
	tr := build(t, left)
	tr.TakeDomains(a.Domains, ps)
	lost := make([]bool, len(a.Domains))
	for i, d := range a.Domains {
		lost[i] = slices.Contains(down, d.Values[2])
	}
	return tr, a, lost
}

func count(ds []Domain) (n int32) {
	for _, d := range ds {
		n += d.Count
	}
	return n
}

// A gang of 6 pods of 4 cpu that requires a rack, on racks of 4 hosts of 8
// cpu, fills three hosts of one rack; one of them fails: its 2 pods move to
// the fourth host of the same rack, and the other domains stay as they were.
func TestReplaceKeepsTheRequiredDomain(t *testing.T) {
	nodes := makeNodes(1, 2, 4, 8)
	ps := gang(6, 4)
	req := Request{Mode: Required, Level: rackLabel}
	tr, a, lost := failed(t, nodes, ps, req, "b0-r0-h0")
	if !slices.Contains(lost, true) {
		t.Fatalf("placement %v does not use b0-r0-h0", a.Domains)
	}
	got, err := tr.Replace(a.Domains, lost, ps, req)
	if err != nil {
		t.Fatal(err)
	}
	if count(got.Domains) != 6 {
		t.Fatalf("domains %v hold %d pods; want 6", got.Domains, count(got.Domains))
	}
	for _, d := range got.Domains {
		if d.Values[1] != "r0" || d.Values[2] == "b0-r0-h0" {
			t.Errorf("domain %v: want a live host of rack r0", d.Values)
		}
	}
	if got.Nodes["b0-r0-h3"] != 2 || len(got.Nodes) != 1 {
		t.Errorf("new pods per node %v; want 2 on b0-r0-h3", got.Nodes)
	}
	for i, d := range a.Domains {
		if !lost[i] && !slices.ContainsFunc(got.Domains, func(x Domain) bool { return slices.Equal(x.Values, d.Values) && x.Count == d.Count }) {
			t.Errorf("kept domain %v changed: %v", d, got.Domains)
		}
	}
	// The new room is taken: a second call finds the rack full.
	if _, err := tr.Replace([]Domain{{Values: []string{"b0", "r0", "b0-r0-h0"}, Count: 1}}, []bool{true}, ps, req); err == nil {
		t.Error("the replacement's room was not taken from the tree")
	}
}

// When the rack has no room left, nothing moves to another rack: the gang
// would be split. The message names the lost host and the rack.
func TestReplaceRefusesAnotherRequiredDomain(t *testing.T) {
	nodes := makeNodes(1, 2, 4, 8)
	ps := gang(8, 4)
	req := Request{Mode: Required, Level: rackLabel}
	tr, a, lost := failed(t, nodes, ps, req, "b0-r0-h1")
	_, err := tr.Replace(a.Domains, lost, ps, req)
	var nf *NoFit
	if !errors.As(err, &nf) {
		t.Fatalf("got %v; want NoFit", err)
	}
	const want = "2 pods of 4 cpu lost with kubernetes.io/hostname b0-r0-h1 have no room in topology.berth.dev/rack r0"
	if nf.Message != want {
		t.Errorf("message %q; want %q", nf.Message, want)
	}
}

// A preferred rack widens as placement does: a full rack sends the lost
// pods to the block, and a full block anywhere.
func TestReplaceWidensAPreferredDomain(t *testing.T) {
	nodes := makeNodes(2, 1, 2, 8)
	ps := gang(4, 4)
	req := Request{Mode: Preferred, Level: rackLabel}
	tr, a, lost := failed(t, nodes, ps, req, "b0-r0-h0")
	got, err := tr.Replace(a.Domains, lost, ps, req)
	if err != nil {
		t.Fatal(err)
	}
	if count(got.Domains) != 4 || got.Nodes["b1-r0-h0"]+got.Nodes["b1-r0-h1"] != 2 {
		t.Errorf("domains %v, new pods %v; want the 2 lost pods in block b1", got.Domains, got.Nodes)
	}
}

// Slices stay whole: a lost host's pods stay in the rack of their slice,
// or find no room, even when the required block has room in another rack.
func TestReplaceKeepsSlicesInTheirDomain(t *testing.T) {
	nodes := makeNodes(1, 2, 2, 8)
	ps := gang(4, 4)
	req := Request{Mode: Required, Level: blockLabel, SliceLevel: rackLabel, SliceSize: 4}
	tr, a, lost := failed(t, nodes, ps, req, "b0-r0-h0")
	if _, err := tr.Replace(a.Domains, lost, ps, req); err == nil {
		t.Fatalf("lost pods of a slice in rack r0 moved out of it: %v", a.Domains)
	}
	req.SliceSize = 2
	ps = gang(2, 4)
	tr, a, lost = failed(t, makeNodes(1, 1, 3, 8), ps, req, "b0-r0-h0")
	got, err := tr.Replace(a.Domains, lost, ps, req)
	if err != nil || count(got.Domains) != 2 || got.Nodes["b0-r0-h0"] != 0 {
		t.Errorf("got %v, %v; want 2 pods off b0-r0-h0 in rack r0", got, err)
	}
}

func TestReplaceRefusesAnUnknownLevel(t *testing.T) {
	tr := build(t, makeNodes(1, 1, 1, 8))
	if _, err := tr.Replace(nil, nil, gang(1, 1), Request{Mode: Required, Level: "zone"}); err == nil {
		t.Error("an unknown level was accepted")
	}
}

// FuzzReplace places a random gang on a random tree, fails random nodes
// under it and replaces their pods, checking what must always hold: the
// pods add up, none is left on a failed node, no node is given more than
// its room, the kept domains are untouched, and a required (or slice)
// domain is not left; a NoFit only when that domain lacks room.
func FuzzReplace(f *testing.F) {
	f.Add(uint64(1), uint8(2), uint8(4), uint8(4), uint8(2))
	f.Add(uint64(9), uint8(1), uint8(2), uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, blocks, racks, hosts, fails uint8) {
		rng := rand.New(rand.NewPCG(seed, seed>>3))
		nodes := makeNodes(int(blocks%3)+1, int(racks%4)+1, int(hosts%5)+1, 0)
		for i := range nodes {
			nodes[i].Free["cpu"] = rng.Int64N(17) * 1000
		}
		ps := PodSet{Count: int32(rng.IntN(12) + 1), Requests: map[string]int64{"cpu": rng.Int64N(4)*1000 + 1000}}
		req := randomRequest(rng, ps.Count)
		a, err := build(t, nodes).Place(ps, req)
		if err != nil {
			return // nothing placed, nothing to lose
		}
		var down []string
		for range int(fails%3) + 1 {
			down = append(down, a.Domains[rng.IntN(len(a.Domains))].Values[2])
		}
		var left []Node
		for _, n := range nodes {
			if !slices.Contains(down, n.Name) {
				left = append(left, n)
			}
		}
		tr := build(t, left)
		tr.TakeDomains(a.Domains, ps)
		free := map[string]int64{}
		for name, n := range tr.nodes {
			free[name] = n.Free["cpu"]
		}
		lost := make([]bool, len(a.Domains))
		for i, d := range a.Domains {
			lost[i] = slices.Contains(down, d.Values[2])
		}
		got, err := tr.Replace(a.Domains, lost, ps, req)
		var nf *NoFit
		scope := -1
		switch {
		case req.SliceSize > 0:
			scope = indexOf(req.SliceLevel)
		case req.Mode == Required:
			scope = indexOf(req.Level)
		}
		if errors.As(err, &nf) {
			if scope < 0 && req.Mode == Unconstrained {
				var room int64
				for _, n := range free {
					room += max(n, 0) / ps.Requests["cpu"]
				}
				var need int64
				for i, d := range a.Domains {
					if lost[i] {
						need += int64(d.Count)
					}
				}
				if room >= need {
					t.Fatalf("NoFit %q, but the nodes have room for %d of the %d lost pods", nf.Message, room, need)
				}
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if count(got.Domains) != ps.Count {
			t.Fatalf("domains %v hold %d pods; want %d", got.Domains, count(got.Domains), ps.Count)
		}
		for _, d := range got.Domains {
			if slices.Contains(down, d.Values[2]) {
				t.Fatalf("pods left on failed node %s: %v", d.Values[2], got.Domains)
			}
		}
		for name, k := range got.Nodes {
			if int64(k)*ps.Requests["cpu"] > free[name] {
				t.Fatalf("node %s given %d pods of %d milli-cpu with %d free", name, k, ps.Requests["cpu"], free[name])
			}
		}
		for i, d := range a.Domains {
			if !lost[i] && !slices.ContainsFunc(got.Domains, func(x Domain) bool { return slices.Equal(x.Values, d.Values) && x.Count >= d.Count }) {
				t.Fatalf("kept domain %v changed: %v", d, got.Domains)
			}
		}
		if scope >= 0 {
			for name := range got.Nodes {
				n := tr.nodes[name]
				if !slices.ContainsFunc(a.Domains, func(d Domain) bool {
					return slices.Contains(down, d.Values[2]) && d.Values[scope] == n.Labels[levels[scope]]
				}) {
					t.Fatalf("a lost pod went to %s, outside the %s domains of the failed nodes", name, levels[scope])
				}
			}
		}
	})
}
