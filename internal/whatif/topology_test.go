package whatif_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/whatif"
)

// placedYAML is queueYAML with its flavor in Topology dc (racks, then
// hosts) and 100 cpu: quota never binds, the nodes do.
func placedYAML() string {
	return strings.Replace(queueYAML("100", "preemption: {withinClusterQueue: Never}"), "metadata: {name: default}\n",
		`metadata: {name: default}
spec: {topologyName: dc}
---
apiVersion: berth.dev/v1beta1
kind: Topology
metadata: {name: dc}
spec:
  levels:
  - nodeLabel: topology.berth.dev/rack
  - nodeLabel: kubernetes.io/hostname
`, 1)
}

// racks are 2 racks of 2 nodes of 8 cpu.
func racks() []whatif.Node {
	var out []whatif.Node
	for r := range 2 {
		for h := range 2 {
			name := fmt.Sprintf("r%d-h%d", r, h)
			out = append(out, whatif.Node{Name: name, Allocatable: map[string]string{"cpu": "8", "pods": "110"},
				Labels: map[string]string{"topology.berth.dev/rack": fmt.Sprintf("r%d", r), "kubernetes.io/hostname": name}})
		}
	}
	return out
}

// gang is n pods of 4 cpu that require one rack.
func gang(name string, arrival, run float64, n int32) whatif.Workload {
	rack := "topology.berth.dev/rack"
	w := wl(name, arrival, run, "4", 0)
	w.PodSets[0].Count = n
	w.PodSets[0].Topology = &berthv1.TopologyRequest{Required: &rack}
	return w
}

// Worked by hand: a rack holds 4 pods of 4 cpu. g1 takes one rack at 0 s,
// g2 the other at 1 s; g3 waits for g1's rack, free at 10 s (a wait of
// 8 s), though the quota has room all along; a gang of 5 never fits in a
// rack. Asking for no placement, in a flavor without a topology, the
// quota alone binds and all start at once.
func TestReplayPlacesGangsOnTheTracesNodes(t *testing.T) {
	trace := []whatif.Workload{gang("g1", 0, 10, 4), gang("g2", 1, 10, 4), gang("g3", 2, 10, 4), gang("wide", 3, 10, 5)}
	r, err := whatif.Replay(parse(t, "placed", placedYAML()), start, trace, whatif.Options{Nodes: racks()})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"team/g1":   {admitted: true, finished: true},
		"team/g2":   {admitted: true, finished: true},
		"team/g3":   {admitted: true, wait: 8, finished: true},
		"team/wide": {wait: r.End - 3},
	})

	for i := range trace {
		trace[i].PodSets[0].Topology = nil
	}
	plain, err := whatif.Replay(config(t, "plain", "100", "Never"), start, trace, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, plain, map[string]want{
		"team/g3":   {admitted: true, finished: true},
		"team/wide": {admitted: true, finished: true},
	})
}

// A configuration that places by topology needs the trace's nodes, and a
// flavor's Topology in the configuration.
func TestATopologyNeedsNodesAndItsObject(t *testing.T) {
	_, err := whatif.Replay(parse(t, "placed", placedYAML()), start, []whatif.Workload{gang("g1", 0, 10, 4)}, whatif.Options{})
	if err == nil || !strings.Contains(err.Error(), "placed: ResourceFlavor default: spec.topologyName: topology-aware placement needs the trace's nodes, and this trace has none") {
		t.Errorf("no nodes: %v", err)
	}
	lost := strings.Replace(placedYAML(), "metadata: {name: dc}", "metadata: {name: other}", 1)
	if _, err := whatif.ParseConfig("lost", []byte(lost)); err == nil || !strings.Contains(err.Error(), "lost: ResourceFlavor default: spec.topologyName: Topology dc is not in the configuration") {
		t.Errorf("missing Topology: %v", err)
	}
}

// Nodes and topology requests survive a trace's round trip; a bad one is
// refused naming the line and the field.
func TestTraceKeepsNodesAndTopologyRequests(t *testing.T) {
	var buf bytes.Buffer
	if err := whatif.WriteTrace(&buf, whatif.Header{Start: start, Nodes: racks()}, []whatif.Workload{gang("g1", 0, 10, 4)}); err != nil {
		t.Fatal(err)
	}
	h, got, err := whatif.ReadTrace(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != whatif.Version || len(h.Nodes) != 4 || h.Nodes[3].Labels["topology.berth.dev/rack"] != "r1" || h.Nodes[3].Allocatable["cpu"] != "8" {
		t.Errorf("header %+v", h)
	}
	if len(got) != 1 || got[0].PodSets[0].Topology == nil || *got[0].PodSets[0].Topology.Required != "topology.berth.dev/rack" {
		t.Errorf("workloads %+v", got)
	}
	head := `{"format":"berth.dev/trace","version":2,"start":"2026-11-01T00:00:00Z"}` + "\n"
	for _, tc := range []struct{ text, want string }{
		{head + `{"node":{"name":"n","allocatable":{"cpu":"lots"}}}`, "line 2: node n: allocatable[cpu]"},
		{head + `{"node":{"name":"n","allocatable":{},"zone":"a"}}`, `line 2: json: unknown field "zone"`},
		{head + `{"node":{"name":"n","allocatable":{}}}` + "\n" + `{"node":{"name":"n","allocatable":{}}}`, "line 3: node n: already on line 2"},
		{head + `{"name":"w","namespace":"team","localQueue":"main","arrival":0,"run":1,"podSets":[{"name":"main","count":4,"requests":{},"topology":{"required":"r","preferred":"r"}}]}`,
			"line 2: workload team/w: podSets[0].topology: set one of required, preferred and unconstrained"},
		{head + `{"name":"w","namespace":"team","localQueue":"main","arrival":0,"run":1,"podSets":[{"name":"main","count":4,"requests":{},"topology":{"required":"r","sliceRequiredLevel":"h","sliceSize":3}}]}`,
			"line 2: workload team/w: podSets[0].topology.sliceSize: 3 does not divide the count 4"},
	} {
		if _, _, err := whatif.ReadTrace(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.text, err, tc.want)
		}
	}
	// A version 1 trace, from before nodes, is read as it is.
	if _, ws, err := whatif.ReadTrace(strings.NewReader(strings.Replace(head, `"version":2`, `"version":1`, 1) +
		`{"name":"node","namespace":"team","localQueue":"main","arrival":0,"run":1,"podSets":[{"name":"main","count":1,"requests":{}}]}`)); err != nil || len(ws) != 1 {
		t.Errorf("version 1 with a workload named node: %v %v", ws, err)
	}
}
