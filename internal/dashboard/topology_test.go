package dashboard_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

const rack = "topology.berth.dev/rack"

func tasNode(name, rackName string) corev1.Node {
	return *MakeNode(name, "cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi").Label("pool", "tas").Label(rack, rackName).Obj()
}

func cpuOf(t *testing.T, room []dashboard.Room) (alloc, free string) {
	t.Helper()
	for _, r := range room {
		if r.Resource == "cpu" {
			return r.Allocatable, r.Free
		}
	}
	t.Fatalf("no cpu in %+v", room)
	return "", ""
}

// The room shown is what placement counts on: allocatable less the pods
// bound there that no placement counts, less what admitted gangs hold;
// gangs are named in each domain with their pods there, summed up the
// levels; nodes outside the flavor are not drawn, and those placement
// leaves out are named.
func TestDrawTopologyShowsRoomAndGangsAsPlacementSeesThem(t *testing.T) {
	levels := []string{rack, corev1.LabelHostname}
	at := func(r, h string, n int32) berthv1.TopologyDomainAssignment {
		return berthv1.TopologyDomainAssignment{Values: []string{r, h}, Count: n}
	}
	notReady := tasNode("r2-h2", "r2")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	finished := MakeWorkload("done", "ns").Request("cpu", "1").Count(4).Reserved("cq").Placed("tas", levels, at("r2", "r2-h1", 4)).Obj()
	workload.SetFinished(finished, "Succeeded", "", time.Unix(10, 0))
	in := dashboard.TopologyInput{
		Flavor:   MakeResourceFlavor("tas").NodeLabel("pool", "tas").Topology("racks").Obj(),
		Topology: &berthv1.Topology{Spec: berthv1.TopologySpec{Levels: []berthv1.TopologyLevel{{NodeLabel: rack}, {NodeLabel: corev1.LabelHostname}}}},
		Nodes: []corev1.Node{tasNode("r1-h1", "r1"), tasNode("r1-h2", "r1"), tasNode("r2-h1", "r2"), notReady,
			*MakeNode("elsewhere", "cpu", "64").Label(rack, "r1").Obj()},
		Pods: []corev1.Pod{
			*MakePod("other", "ns").Node("r2-h1").Request("cpu", "500m").Obj(),
			*MakePod("gang-a-0", "ns").Node("r1-h1").Request("cpu", "1").Label(berthv1.TopologyPlacedLabel, "true").Obj(),
			*MakePod("ended", "ns").Node("r1-h2").Request("cpu", "2").Obj(),
		},
		Workloads: []berthv1.Workload{
			*MakeWorkload("a", "ns").Request("cpu", "1").Count(3).Reserved("cq-a").Placed("tas", levels, at("r1", "r1-h1", 2), at("r1", "r1-h2", 1)).Obj(),
			*MakeWorkload("b", "ns").Request("cpu", "1").Count(3).Reserved("cq-b").Placed("tas", levels, at("r2", "r2-h1", 3)).Obj(),
			*MakeWorkload("elsewhere", "ns").Request("cpu", "1").Reserved("cq-a").Obj(),
			*finished,
			*MakeWorkload("pending", "ns").Request("cpu", "1").Obj(),
		},
	}
	in.Topology.Name = "racks"
	in.Pods[2].Status.Phase = corev1.PodSucceeded

	v, err := dashboard.DrawTopology(in)
	if err != nil {
		t.Fatal(err)
	}
	if v.Flavor != "tas" || v.Topology != "racks" || !slices.Equal(v.Levels, levels) {
		t.Errorf("view of %s/%s levels %v; want tas/racks %v", v.Flavor, v.Topology, v.Levels, levels)
	}
	if !slices.Equal(v.Left, []string{"r2-h2 (not Ready)"}) {
		t.Errorf("left out: %q; want the node not Ready alone (not the node outside the flavor)", v.Left)
	}
	if len(v.Domains) != 2 || v.Domains[0].Name != "r1" || v.Domains[1].Name != "r2" || v.Domains[0].Level != rack {
		t.Fatalf("racks: %+v; want r1 and r2", v.Domains)
	}
	r1, r2 := v.Domains[0], v.Domains[1]
	for _, c := range []struct {
		what        string
		room        []dashboard.Room
		alloc, free string
	}{
		{"rack r1", r1.Room, "8", "5"},
		{"host r1-h1", r1.Domains[0].Room, "4", "2"},
		{"node r1-h1", r1.Domains[0].Nodes[0].Room, "4", "2"},
		{"host r1-h2 (its ended pod takes nothing)", r1.Domains[1].Room, "4", "3"},
		{"rack r2 (the pod no placement counts takes its room)", r2.Room, "4", "500m"},
	} {
		if alloc, free := cpuOf(t, c.room); alloc != c.alloc || free != c.free {
			t.Errorf("%s: cpu %s free of %s; want %s of %s", c.what, free, alloc, c.free, c.alloc)
		}
	}
	want := map[string][]dashboard.GangView{
		"r1":    {{Workload: "ns/a", ClusterQueue: "cq-a", Pods: 3}},
		"r1-h1": {{Workload: "ns/a", ClusterQueue: "cq-a", Pods: 2}},
		"r1-h2": {{Workload: "ns/a", ClusterQueue: "cq-a", Pods: 1}},
		"r2":    {{Workload: "ns/b", ClusterQueue: "cq-b", Pods: 3}},
	}
	got := map[string][]dashboard.GangView{"r1": r1.Gangs, "r1-h1": r1.Domains[0].Gangs, "r1-h2": r1.Domains[1].Gangs, "r2": r2.Gangs}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("gangs in %s: %+v; want %+v", name, got[name], w)
		}
	}
	var resources []string
	for _, r := range r1.Room {
		resources = append(resources, r.Resource)
	}
	if !slices.Equal(resources, []string{"cpu", "memory", "pods"}) {
		t.Errorf("resources shown: %v; want cpu, memory, pods (not storage)", resources)
	}
	if _, err := json.Marshal(v); err != nil {
		t.Error(err)
	}
}

// A flavor whose Topology has no levels, or none at all, is an error
// naming it, not a panic.
func TestDrawTopologyRefusesWhatCannotBeDrawn(t *testing.T) {
	in := dashboard.TopologyInput{Flavor: MakeResourceFlavor("plain").Obj(), Topology: &berthv1.Topology{}}
	if _, err := dashboard.DrawTopology(in); err == nil || err.Error() != "ResourceFlavor plain has no topologyName" {
		t.Errorf("flavor without a topology: %v", err)
	}
	in.Flavor = MakeResourceFlavor("tas").NodeLabel("pool", "tas").Topology("racks").Obj()
	in.Topology.Name = "racks"
	if _, err := dashboard.DrawTopology(in); err == nil {
		t.Error("a Topology without levels was drawn")
	}
}
