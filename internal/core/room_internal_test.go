package core

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/berth-dev/berth/internal/topology"
)

// The room a flavor keeps, changed as workloads are admitted and released
// and dropped when nodes change, is at every step what a tree built afresh
// from the nodes and the admitted placements would be: random admissions
// (pods of 1 to 3 cpu on random 8-cpu hosts, as many as their hosts hold),
// releases, re-admissions of a key, a node's labels changed, and its free
// room changed by pods berth does not place.
func TestKeptRoomMatchesARebuiltTree(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		c := NewCluster()
		c.SetTopology("dc", []string{"rack", "host"})
		c.SetFlavor(Flavor{Name: "tas", TopologyName: "dc"})
		var hosts []string
		for r := range 3 {
			for h := range 4 {
				name := fmt.Sprintf("r%d-h%d", r, h)
				hosts = append(hosts, name)
				c.SetNode(topology.Node{Name: name, Ready: true, Labels: map[string]string{"rack": fmt.Sprintf("r%d", r), "host": name},
					Free: map[string]int64{"cpu": 8000, topology.PodsResource: 110000}})
			}
		}
		used := map[string]int64{} // cpu per host, as placed
		base := map[string]int64{} // cpu per host before placements
		for _, h := range hosts {
			base[h] = 8000
		}
		held := map[string][]topology.Domain{}
		for step := range 200 {
			switch op := rng.IntN(10); {
			case op < 6: // admit, or admit a held key again elsewhere
				key := fmt.Sprintf("w%d", rng.IntN(15))
				for _, d := range held[key] {
					used[d.Values[1]] -= int64(d.Count) * 1000
				}
				delete(held, key)
				c.RemoveAdmitted(key)
				var domains []topology.Domain
				for range 1 + rng.IntN(2) {
					h := hosts[rng.IntN(len(hosts))]
					n := int32(1 + rng.IntN(3))
					if used[h]+int64(n)*1000 > base[h] || slices.ContainsFunc(domains, func(d topology.Domain) bool { return d.Values[1] == h }) {
						continue
					}
					used[h] += int64(n) * 1000
					domains = append(domains, topology.Domain{Values: []string{h[:2], h}, Count: n})
				}
				held[key] = domains
				c.AddAdmitted(Admitted{Key: key, ClusterQueue: "cq", Placements: []Placement{{Flavor: "tas",
					PodSet: topology.PodSet{Requests: map[string]int64{"cpu": 1000}}, Domains: domains}}})
			case op < 9: // release
				key := fmt.Sprintf("w%d", rng.IntN(15))
				for _, d := range held[key] {
					used[d.Values[1]] -= int64(d.Count) * 1000
				}
				delete(held, key)
				c.RemoveAdmitted(key)
			default:
				h := hosts[rng.IntN(len(hosts))]
				n := c.nodes[h]
				if rng.IntN(2) == 0 { // its labels change: the room is dropped
					n.Labels = map[string]string{"rack": n.Labels["rack"], "host": h, "step": fmt.Sprint(step)}
				} else { // pods not placed by berth come or go, in the room placements leave: the room follows
					n.Free = map[string]int64{"cpu": max(used[h], 8000-500*int64(rng.IntN(4))), topology.PodsResource: 110000 - 1000*int64(rng.IntN(4))}
					base[h] = n.Free["cpu"]
				}
				c.SetNode(n)
			}
			kept, err := c.newPlaces().tree(c.flavors["tas"])
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := c.privatePlaces().tree(c.flavors["tas"])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := kept.Rooms(), fresh.Rooms(); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: kept room\n%+v\nrebuilt\n%+v", seed, step, got, want)
			}
			for _, h := range hosts {
				if free := fresh.Rooms()[int(h[1]-'0')].Children[int(h[4]-'0')].Nodes[0].Free["cpu"]; free != base[h]-used[h] {
					t.Fatalf("seed %d step %d: host %s has %d milli-cpu free, want %d", seed, step, h, free, base[h]-used[h])
				}
			}
		}
	}
}
