package scheduler

import (
	"slices"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/topology"
)

// A cycle places with the node source's latest view, not the last one
// SetNodes handed over: a pod bound to rack r0 a moment ago sends a gang
// that needs a whole rack to r1. Waiting workloads get their next look at
// the following SetNodes, even when it brings nothing new itself.
func TestCycleTakesTheLatestNodes(t *testing.T) {
	s := New(clock.RealClock{})
	s.SetTopology("dc", []string{BlockLabel, RackLabel, HostLabel})
	s.SetFlavor(MakeFlavor("tas").Label("pool", "tas").Topology("dc").Obj())
	s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("tas").Resource("cpu", "1000").Obj()).Obj())
	s.SetLocalQueue(queue.LocalQueue{Key: "default/main", ClusterQueue: "cq"})
	nodes := Nodes("tas", 1, 2, 2, "8")
	s.SetNodes(nodes, nil)

	busy := nodes[0]
	busy.Free = map[string]int64{"cpu": 0, topology.PodsResource: 109_000}
	var pending []topology.Node
	s.SetNodeSource(func() ([]topology.Node, []string) {
		out := pending
		pending = nil
		return out, nil
	})
	pending = []topology.Node{busy}
	s.WorkloadPending(MakeWorkload("gang", "cq").PodSet("main", 4).Request("cpu", "4").
		Topology(topology.Required, RackLabel).Obj(), "default/main")
	ds := s.Cycle()
	if len(ds) != 1 || ds[0].Admit == nil {
		t.Fatalf("not admitted:\n%s", Describe(ds))
	}
	for _, d := range ds[0].Admit.PodSets[0].Topology.Domains {
		if d.Values[1] != "r1" {
			t.Fatalf("placed in %v; want rack r1, the one with room", d.Values)
		}
	}
	if len(pending) != 0 {
		t.Errorf("the cycle left %d node changes with the source", len(pending))
	}

	// A second gang finds no rack and is set aside. The busy node frees up
	// and a cycle takes it, for a third workload that fits nowhere: the
	// second is not looked at again until the ticker's SetNodes, though the
	// source has nothing new by then.
	s.WorkloadPending(MakeWorkload("second", "cq").PodSet("main", 4).Request("cpu", "4").
		Topology(topology.Required, RackLabel).Obj(), "default/main")
	if ds := s.Cycle(); len(ds) != 1 || ds[0].Pending == nil || ds[0].Pending.Reason != core.NoFit {
		t.Fatalf("second gang:\n%s", Describe(ds))
	}
	pending = []topology.Node{nodes[0]}
	s.WorkloadPending(MakeWorkload("third", "cq").PodSet("main", 8).Request("cpu", "4").
		Topology(topology.Required, BlockLabel).Obj(), "default/main")
	if ds := s.Cycle(); len(ds) != 1 || ds[0].Workload.Key != "default/third" || ds[0].Pending == nil {
		t.Fatalf("third gang:\n%s", Describe(ds))
	}
	if len(pending) != 0 {
		t.Fatalf("the cycle did not take the freed node")
	}
	if ds := s.Cycle(); len(ds) != 0 {
		t.Fatalf("a set-aside workload was looked at before SetNodes:\n%s", Describe(ds))
	}
	s.SetNodes(nil, nil)
	ds = s.Cycle()
	if len(ds) != 1 || ds[0].Workload.Key != "default/second" || ds[0].Admit == nil {
		t.Fatalf("after SetNodes, want the second gang admitted in r0:\n%s", Describe(ds))
	}
}

// Repairs looks only when a node's health changed or a failure delay ran
// out: a node going not Ready is repaired once the delay has passed, by the
// injected clock, and the repaired placement is the one the next look sees.
func TestRepairsWaitForTheFailureDelay(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(Epoch)
	s := New(clk)
	s.SetNodeFailureDelay(10 * time.Second)
	s.SetTopology("dc", []string{BlockLabel, RackLabel, HostLabel})
	s.SetFlavor(MakeFlavor("tas").Label("pool", "tas").Topology("dc").Obj())
	s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("tas").Resource("cpu", "1000").Obj()).Obj())
	s.SetLocalQueue(queue.LocalQueue{Key: "default/main", ClusterQueue: "cq"})
	nodes := Nodes("tas", 1, 1, 4, "8")
	s.SetNodes(nodes, nil)
	s.WorkloadPending(MakeWorkload("gang", "cq").PodSet("main", 4).Request("cpu", "4").
		Topology(topology.Required, RackLabel).Obj(), "default/main")
	ds := s.Cycle()
	if len(ds) != 1 || ds[0].Admit == nil {
		t.Fatalf("not admitted:\n%s", Describe(ds))
	}
	// Until the node feed has seen every node, a node missing says nothing.
	s.SetNodes(nil, nodeNames(nodes))
	if rs := s.Repairs(); len(rs) != 0 {
		t.Fatalf("repairs before the node feed synced: %+v", rs)
	}
	s.SetNodes(nodes, nil)
	s.SetNodeSource(func() ([]topology.Node, []string) { return nil, nil })
	if rs := s.Repairs(); len(rs) != 0 {
		t.Fatalf("repairs with every node Ready: %+v", rs)
	}
	host := ds[0].Admit.PodSets[0].Topology.Domains[0].Values[2]
	down := nodes[slices.IndexFunc(nodes, func(n topology.Node) bool { return n.Name == host })]
	down.Ready, down.NotReadySince = false, Epoch
	s.SetNodes([]topology.Node{down}, nil)
	clk.SetTime(Epoch.Add(9 * time.Second))
	if rs := s.Repairs(); len(rs) != 0 {
		t.Fatalf("repaired within the delay: %+v", rs)
	}
	clk.SetTime(Epoch.Add(10 * time.Second))
	rs := s.Repairs()
	if len(rs) != 1 || rs[0].Evict != "" || len(rs[0].PodSets["main"]) == 0 {
		t.Fatalf("at the delay: %+v; want the gang's pods moved", rs)
	}
	if again := s.Repairs(); len(again) != 0 {
		t.Errorf("repaired twice: %+v", again)
	}
}

func nodeNames(nodes []topology.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}
