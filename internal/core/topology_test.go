package core_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// rackCluster has one block of two racks of two 8-cpu hosts (16 cpu a
// rack), in a ClusterQueue of quota cpu that preempts lower priorities.
func rackCluster(t *testing.T, quota string) *core.Cluster {
	t.Helper()
	c := core.NewCluster()
	c.SetTopology("dc", []string{BlockLabel, RackLabel, HostLabel})
	c.SetFlavor(MakeFlavor("tas").Label("pool", "tas").Topology("dc").Obj())
	c.SetClusterQueue(MakeClusterQueue("cq").Preemption(core.PreemptLowerPriority, core.PreemptNever).
		ResourceGroup(MakeFlavorQuotas("tas").Resource("cpu", quota).Obj()).Obj())
	for _, n := range Nodes("tas", 1, 2, 2, "8") {
		c.SetNode(n)
	}
	return c
}

// placed is a running low-priority workload whose pods of 4 cpu are on the
// named hosts (b0-r<rack>-h<host>), admitted at Epoch plus at.
func placed(name string, at time.Duration, hosts ...string) core.Admitted {
	a := Running(name, "cq").Use("tas", "cpu", strconv.Itoa(4*len(hosts))).AdmittedAt(at).Obj()
	var domains []topology.Domain
	for _, h := range hosts {
		rack := h[3:5]
		domains = append(domains, topology.Domain{Values: []string{"b0", rack, h}, Count: 1})
	}
	a.Placements = []core.Placement{{Flavor: "tas", PodSet: topology.PodSet{Requests: map[string]int64{"cpu": 4000}}, Domains: domains}}
	return a
}

func victimKeys(d core.Decision) []string {
	var out []string
	for _, v := range d.Preempt {
		out = append(out, v.Key)
	}
	slices.Sort(out)
	return out
}

// A gang whose quota fits but that no rack can hold preempts lower
// priority workloads until one rack has room, in the usual order (the most
// recently admitted first), and no more; before, it waited with no
// preemption at all.
func TestPreemptionMakesRoomInOneDomain(t *testing.T) {
	c := rackCluster(t, "100")
	c.AddAdmitted(placed("low-r0", 0, "b0-r0-h0", "b0-r0-h0"))
	c.AddAdmitted(placed("low-r1", time.Second, "b0-r1-h0", "b0-r1-h1"))
	c.AddAdmitted(placed("low-r1-small", 2*time.Second, "b0-r1-h1"))
	gang := MakeWorkload("gang", "cq").Priority(10).PodSet("main", 4).Request("cpu", "4").Topology(topology.Required, RackLabel).Obj()
	ds := c.Cycle([]*core.Workload{gang}, Epoch)
	if p := ds[0].Pending; p == nil || p.Reason != core.Preempting {
		t.Fatalf("want it preempting: %s", Describe(ds))
	}
	// The newest two free r1 whole; r0's workload is not needed then.
	if got := victimKeys(ds[0]); !slices.Equal(got, []string{"default/low-r1", "default/low-r1-small"}) {
		t.Fatalf("victims %v; want r1's two, the most recently admitted, which free r1", got)
	}
	c.RemoveAdmitted("default/low-r1")
	c.RemoveAdmitted("default/low-r1-small")
	ds = c.Cycle([]*core.Workload{gang}, Epoch)
	if ds[0].Admit == nil || !slices.Equal(racksOf(ds[0].Admit.PodSets[0].Topology), []string{"r1"}) {
		t.Errorf("after the evictions: %s; want admitted in r1", Describe(ds))
	}
}

// Preemption for quota picks victims whose room lets the gang fit in one
// rack: taking by quota alone (newest first) would evict workloads in both
// racks, leaving neither with room, and the gang would wait with its
// victims gone.
func TestPreemptionForQuotaChoosesVictimsByTheirDomain(t *testing.T) {
	c := rackCluster(t, "28")
	c.AddAdmitted(placed("a-r0", 0, "b0-r0-h0", "b0-r0-h1"))
	c.AddAdmitted(placed("d-r1", time.Second, "b0-r1-h0"))
	c.AddAdmitted(placed("b-r1", 2*time.Second, "b0-r1-h0", "b0-r1-h1"))
	c.AddAdmitted(placed("c-r0", 3*time.Second, "b0-r0-h1"))
	gang := MakeWorkload("gang", "cq").Priority(10).PodSet("main", 4).Request("cpu", "4").Topology(topology.Required, RackLabel).Obj()
	ds := c.Cycle([]*core.Workload{gang}, Epoch)
	if got := victimKeys(ds[0]); !slices.Equal(got, []string{"default/b-r1", "default/d-r1"}) {
		t.Fatalf("victims %v; want rack r1's two, which free it whole: %s", got, Describe(ds))
	}
	c.RemoveAdmitted("default/b-r1")
	c.RemoveAdmitted("default/d-r1")
	ds = c.Cycle([]*core.Workload{gang}, Epoch)
	if ds[0].Admit == nil || !slices.Equal(racksOf(ds[0].Admit.PodSets[0].Topology), []string{"r1"}) {
		t.Errorf("after the evictions: %s; want admitted in r1", Describe(ds))
	}
}

// No set of victims the policies allow frees a rack: nothing is evicted,
// and the message says why it waits.
func TestNoPreemptionWhenNoDomainCanBeFreed(t *testing.T) {
	c := rackCluster(t, "100")
	hi := placed("high-r0", 0, "b0-r0-h0")
	hi.Priority = 20
	c.AddAdmitted(hi)
	hi = placed("high-r1", 0, "b0-r1-h0")
	hi.Priority = 20
	c.AddAdmitted(hi)
	gang := MakeWorkload("gang", "cq").Priority(10).PodSet("main", 4).Request("cpu", "4").Topology(topology.Required, RackLabel).Obj()
	ds := c.Cycle([]*core.Workload{gang}, Epoch)
	p := ds[0].Pending
	if p == nil || p.Reason != core.NoFit || len(ds[0].Preempt) != 0 ||
		!strings.Contains(p.Message, "needs 4 pods of 4 cpu in one topology.berth.dev/rack") ||
		!strings.HasSuffix(p.Message, "; no admitted workload may be preempted to make room") {
		t.Errorf("%s", Describe(ds))
	}
}

// A steerable pod set without a topology request, admitted in a flavor with
// a topology, is placed anyway (anywhere), so its room is counted: a gang
// admitted in the same cycle does not get the same hosts, and one that
// would not fit on the nodes waits, though the quota has room. A pod set
// that cannot be steered (a plain Pod's) is admitted on quota alone.
func TestSteerablePodSetsArePlacedInTopologyFlavors(t *testing.T) {
	c := rackCluster(t, "100")
	plain := MakeWorkload("plain", "cq").PodSet("main", 3).Request("cpu", "8").Steerable().Obj()
	gang := MakeWorkload("gang", "cq").PodSet("main", 2).Request("cpu", "8").Topology(topology.Required, RackLabel).Created(1).Obj()
	ds := c.Cycle([]*core.Workload{plain, gang}, Epoch)
	if ds[0].Admit == nil || ds[0].Admit.PodSets[0].Topology == nil {
		t.Fatalf("the steerable pod set: %s; want admitted with a placement", Describe(ds))
	}
	var hosts int32
	for _, d := range ds[0].Admit.PodSets[0].Topology.Domains {
		hosts += d.Count
	}
	if hosts != 3 {
		t.Errorf("placed %d pods, want 3", hosts)
	}
	// Three of the four 8-cpu hosts are taken: no rack has two free.
	if p := ds[1].Pending; p == nil || p.Reason != core.NoFit {
		t.Errorf("the gang after it: %s; want it waiting for a rack", Describe(ds))
	}
	more := MakeWorkload("more", "cq").PodSet("main", 2).Request("cpu", "8").Steerable().Obj()
	if ds := c.Cycle([]*core.Workload{more}, Epoch); ds[0].Pending == nil || ds[0].Pending.Reason != core.NoFit {
		t.Errorf("2 more pods of 8 cpu on one free host: %s; want NoFit", Describe(ds))
	}
	pod := MakeWorkload("pod", "cq").PodSet("main", 2).Request("cpu", "8").Obj()
	if ds := c.Cycle([]*core.Workload{pod}, Epoch); ds[0].Admit == nil || ds[0].Admit.PodSets[0].Topology != nil {
		t.Errorf("a pod set that cannot be steered: %s; want admitted on quota, unplaced", Describe(ds))
	}
}
