package core_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/topology"
)

// topologyCluster has one ClusterQueue of 1,000 cpu on flavor "tas", whose
// nodes (2 blocks x 4 racks x 4 hosts of 8 cpu) are in Topology "dc".
func topologyCluster(t *testing.T) *core.Cluster {
	t.Helper()
	c := core.NewCluster()
	c.SetTopology("dc", []string{BlockLabel, RackLabel, HostLabel})
	c.SetFlavor(MakeFlavor("tas").Label("pool", "tas").Topology("dc").Obj())
	c.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("tas").Resource("cpu", "1000").Obj()).Obj())
	for _, n := range Nodes("tas", 2, 4, 4, "8") {
		c.SetNode(n)
	}
	return c
}

func racksOf(a *topology.Assignment) []string {
	var out []string
	for _, d := range a.Domains {
		if !slices.Contains(out, d.Values[1]) {
			out = append(out, d.Values[1])
		}
	}
	return out
}

// Gangs that require a rack each get a rack of their own, in one cycle;
// one that no rack can hold waits, saying how much the best rack has.
func TestCycleRequiresARack(t *testing.T) {
	c := topologyCluster(t)
	var heads []*core.Workload
	for _, name := range []string{"a", "b"} {
		heads = append(heads, MakeWorkload(name, "cq").PodSet("main", 8).Request("cpu", "4").
			Topology(topology.Required, RackLabel).Obj())
	}
	ds := c.Cycle(heads, Epoch)
	var racks []string
	for _, d := range ds {
		if d.Admit == nil {
			t.Fatalf("not admitted:\n%s", Describe(ds))
		}
		ta := d.Admit.PodSets[0].Topology
		if ta == nil || len(racksOf(ta)) != 1 {
			t.Fatalf("%s: topology assignment %+v; want one rack", d.Workload.Key, ta)
		}
		racks = append(racks, racksOf(ta)[0])
	}
	if racks[0] == racks[1] {
		t.Errorf("both gangs in rack %s", racks[0])
	}
	// A 9-pod gang of 4 cpu fits no rack of 32 cpu, though the quota has room.
	big := MakeWorkload("big", "cq").PodSet("main", 9).Request("cpu", "4").Topology(topology.Required, RackLabel).Obj()
	ds = c.Cycle([]*core.Workload{big}, Epoch)
	if p := ds[0].Pending; p == nil || p.Reason != core.NoFit ||
		p.Message != "needs 9 pods of 4 cpu in one topology.berth.dev/rack; the best topology.berth.dev/rack, r2, has room for 8 pods" {
		t.Errorf("9 pods of 4 cpu: %s", Describe(ds))
	}
	if got := c.Usage("cq")[FR("tas", "cpu")]; got != 64_000 {
		t.Errorf("usage %d milli-cpu, want the two gangs' 64 cpu", got)
	}
}

// After a restart the admitted placements come back from the API as
// domains, and still hold their room: every rack but one is taken.
func TestAdmittedPlacementsHoldTheirRoom(t *testing.T) {
	c := topologyCluster(t)
	ps := topology.PodSet{Requests: map[string]int64{"cpu": 8000}}
	for r := range 7 {
		rack := []string{"b0", "b0", "b0", "b0", "b1", "b1", "b1"}[r]
		var domains []topology.Domain
		for h := range 4 {
			name := rack + "-r" + string(rune('0'+r%4)) + "-h" + string(rune('0'+h))
			domains = append(domains, topology.Domain{Values: []string{rack, "r" + string(rune('0'+r)), name}, Count: 1})
		}
		c.AddAdmitted(core.Admitted{Key: "ns/old-" + string(rune('a'+r)), ClusterQueue: "cq",
			Usage:      core.Usage{FR("tas", "cpu"): 32_000},
			Placements: []core.Placement{{Flavor: "tas", PodSet: ps, Domains: domains}}})
	}
	ds := c.Cycle([]*core.Workload{
		MakeWorkload("one", "cq").PodSet("main", 4).Request("cpu", "8").Topology(topology.Required, RackLabel).Obj(),
		MakeWorkload("two", "cq").PodSet("main", 4).Request("cpu", "8").Topology(topology.Required, RackLabel).Created(1).Obj(),
	}, Epoch)
	if ds[0].Admit == nil || !slices.Equal(racksOf(ds[0].Admit.PodSets[0].Topology), []string{"r7"}) {
		t.Errorf("first: %s; want admitted in the one free rack, r7", Describe(ds))
	}
	if ds[1].Pending == nil || ds[1].Pending.Reason != core.NoFit {
		t.Errorf("second: %s; want no rack left", Describe(ds))
	}
}

// Lesson 1: a Topology without levels (stored by an older version, or
// written to etcd directly) makes its flavor's queues inactive with a
// reason naming it; nothing panics, and fixing it lets them admit again.
func TestTopologyWithoutLevels(t *testing.T) {
	c := topologyCluster(t)
	c.SetTopology("dc", nil)
	if got := c.Inactive("cq"); got != "ResourceFlavor tas: Topology dc has no levels" {
		t.Errorf("inactive %q", got)
	}
	w := MakeWorkload("w", "cq").PodSet("main", 2).Request("cpu", "1").Topology(topology.Required, RackLabel).Obj()
	if ds := c.Cycle([]*core.Workload{w}, Epoch); ds[0].Pending == nil || ds[0].Pending.Reason != core.QueueInactive {
		t.Errorf("with an empty topology: %s", Describe(ds))
	}
	c.DeleteTopology("dc")
	if got := c.Inactive("cq"); got != "ResourceFlavor tas: Topology dc not found" {
		t.Errorf("inactive %q", got)
	}
	c.SetTopology("dc", []string{BlockLabel, RackLabel, HostLabel})
	if ds := c.Cycle([]*core.Workload{w}, Epoch); ds[0].Admit == nil {
		t.Errorf("fixed: %s", Describe(ds))
	}
}

// A pod set that asks for topology is given only a flavor with one; a
// level its flavor's topology lacks is said plainly.
func TestTopologyRequestNeedsATopologyFlavor(t *testing.T) {
	c := topologyCluster(t)
	c.SetFlavor(MakeFlavor("plain").Obj())
	c.SetClusterQueue(MakeClusterQueue("plain").ResourceGroup(MakeFlavorQuotas("plain").Resource("cpu", "10").Obj()).Obj())
	w := MakeWorkload("w", "plain").PodSet("main", 1).Request("cpu", "1").Topology(topology.Required, RackLabel).Obj()
	ds := c.Cycle([]*core.Workload{w}, Epoch)
	if p := ds[0].Pending; p == nil || p.Reason != core.Inadmissible || !strings.Contains(p.Message, "has no topology") {
		t.Errorf("topology request on a plain flavor: %s", Describe(ds))
	}
	w = MakeWorkload("z", "cq").PodSet("main", 1).Request("cpu", "1").Topology(topology.Required, "zone").Obj()
	ds = c.Cycle([]*core.Workload{w}, Epoch)
	if p := ds[0].Pending; p == nil || p.Reason != core.Inadmissible || !strings.Contains(p.Message, `level "zone" is not one of`) {
		t.Errorf("unknown level: %s", Describe(ds))
	}
}
