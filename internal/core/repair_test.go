package core_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/topology"
)

const failureDelay = 30 * time.Second

// admitGang admits a gang of n pods of 4 cpu that requires a rack, and
// returns the hosts its placement uses.
func admitGang(t *testing.T, c *core.Cluster, name string, n int32) []string {
	t.Helper()
	ds := c.Cycle([]*core.Workload{MakeWorkload(name, "cq").PodSet("main", n).Request("cpu", "4").
		Topology(topology.Required, RackLabel).Obj()}, Epoch)
	if ds[0].Admit == nil {
		t.Fatalf("not admitted:\n%s", Describe(ds))
	}
	var hosts []string
	for _, d := range ds[0].Admit.PodSets[0].Topology.Domains {
		hosts = append(hosts, d.Values[2])
	}
	return hosts
}

func notReady(name string, since time.Time) topology.Node {
	for _, n := range Nodes("tas", 2, 4, 4, "8") {
		if n.Name == name {
			n.Ready, n.NotReadySince = false, since
			return n
		}
	}
	panic("no node " + name)
}

// A host under a gang that requires a rack goes NotReady: for the failure
// delay nothing happens (and the caller is told when to look again); then
// its pods get the free host of the same rack, once, and the rest stay put.
func TestRepairMovesLostPodsWithinTheRack(t *testing.T) {
	c := topologyCluster(t)
	hosts := admitGang(t, c, "a", 6) // 3 of a rack's 4 hosts
	down := hosts[0]
	c.SetNode(notReady(down, Epoch))
	rs, next := c.Repairs(Epoch.Add(10*time.Second), failureDelay)
	if len(rs) != 0 || !next.Equal(Epoch.Add(failureDelay)) {
		t.Fatalf("within the delay: repairs %+v, next %v; want none, next at %v", rs, next, Epoch.Add(failureDelay))
	}
	rs, next = c.Repairs(Epoch.Add(failureDelay), failureDelay)
	if len(rs) != 1 || rs[0].Evict != "" || !next.IsZero() {
		t.Fatalf("repairs %+v, next %v; want one move", rs, next)
	}
	r := rs[0]
	if r.Key != "default/a" || !slices.Equal(r.Lost, []string{HostLabel + " " + down}) {
		t.Errorf("repair of %s, lost %v; want default/a, lost %s", r.Key, r.Lost, down)
	}
	var n int32
	rack := strings.Split(down, "-h")[0]
	for _, d := range r.PodSets["main"] {
		n += d.Count
		if d.Values[2] == down || !strings.HasPrefix(d.Values[2], rack+"-") {
			t.Errorf("domain %v: want a live host of %s", d.Values, rack)
		}
	}
	if n != 6 {
		t.Errorf("domains %v hold %d pods; want 6", r.PodSets["main"], n)
	}
	if rs, _ := c.Repairs(Epoch.Add(time.Minute), failureDelay); len(rs) != 0 {
		t.Errorf("repaired again: %+v", rs)
	}
}

// A gang filling its rack has nowhere to go in it when a host is deleted
// (no delay for a deleted node): it is to be evicted, saying why, and is
// reported once.
func TestRepairEvictsWhenTheRackIsFull(t *testing.T) {
	c := topologyCluster(t)
	hosts := admitGang(t, c, "full", 8)
	c.DeleteNode(hosts[1])
	rs, _ := c.Repairs(Epoch, failureDelay)
	if len(rs) != 1 || rs[0].Evict == "" || rs[0].PodSets != nil {
		t.Fatalf("repairs %+v; want an eviction", rs)
	}
	if want := "2 pods of 4 cpu lost with " + HostLabel + " " + hosts[1] + " have no room in " + RackLabel; !strings.HasPrefix(rs[0].Evict, want) {
		t.Errorf("evict %q; want it to start %q", rs[0].Evict, want)
	}
	if !c.Evicting("default/full") {
		t.Error("not marked evicting")
	}
	if rs, _ := c.Repairs(Epoch, failureDelay); len(rs) != 0 {
		t.Errorf("reported again: %+v", rs)
	}
}

// A node that is cordoned, or comes back Ready within the delay, loses
// nothing.
func TestRepairLeavesHealthyNodesAlone(t *testing.T) {
	c := topologyCluster(t)
	hosts := admitGang(t, c, "a", 6)
	cordoned := notReady(hosts[0], time.Time{})
	cordoned.Ready, cordoned.Unschedulable = true, true
	c.SetNode(cordoned)
	c.SetNode(notReady(hosts[1], Epoch))
	back := notReady(hosts[1], time.Time{})
	back.Ready = true
	c.SetNode(back)
	if rs, next := c.Repairs(Epoch.Add(time.Hour), failureDelay); len(rs) != 0 || !next.IsZero() {
		t.Errorf("repairs %+v, next %v; want none", rs, next)
	}
}
