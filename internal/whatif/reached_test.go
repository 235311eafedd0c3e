package whatif_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/whatif"
)

// A cluster's queues, cut to what a trace reaches: the ClusterQueue its
// LocalQueue leads to and its whole cohort tree (through a parent cohort),
// with their flavors and topologies; a queue of another tree that a replay
// would refuse (admission checks) is left out, so the replay goes on.
func TestAConfigIsCutToWhatATraceReaches(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`
apiVersion: berth.dev/v1beta1
kind: Topology
metadata: {name: racks}
spec: {levels: [{nodeLabel: rack}]}
---
apiVersion: berth.dev/v1beta1
kind: Topology
metadata: {name: unused}
spec: {levels: [{nodeLabel: zone}]}
---
apiVersion: berth.dev/v1beta1
kind: Cohort
metadata: {name: org}
---
apiVersion: berth.dev/v1beta1
kind: Cohort
metadata: {name: research}
spec: {parent: org}
---
apiVersion: berth.dev/v1beta1
kind: Cohort
metadata: {name: elsewhere}
`)
	for _, q := range []struct{ cq, cohort, flavor, lq, topology string }{
		{"train", "research", "gpu", "team/train", ""},
		{"serve", "org", "racked", "ops/serve", "racks"},
		{"checked", "elsewhere", "spot", "other/checked", "unused"},
		{"alone", "", "cheap", "other/alone", ""},
	} {
		topology := ""
		if q.topology != "" {
			topology = "spec: {topologyName: " + q.topology + "}"
		}
		ns, lq, _ := strings.Cut(q.lq, "/")
		fmt.Fprintf(&doc, `---
apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: %s}
%s
---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: %s}
spec:
  cohort: %q
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: %s, resources: [{name: cpu, nominalQuota: "4"}]}]
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: %s, namespace: %s}
spec: {clusterQueue: %s}
`, q.flavor, topology, q.cq, q.cohort, q.flavor, lq, ns, q.cq)
	}
	cfg := parse(t, "cluster", doc.String())
	// As a cluster may hold it; a replay refuses it.
	cfg.ClusterQueues[slices.IndexFunc(cfg.ClusterQueues, func(c berthv1.ClusterQueue) bool { return c.Name == "checked" })].Spec.AdmissionChecks = []string{"approval"}
	if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), "ClusterQueue checked: spec.admissionChecks") {
		t.Fatalf("the whole cluster: %v; want the admission checks refused", err)
	}

	trace := []whatif.Workload{{Name: "w", Namespace: "team", LocalQueue: "train", Run: 10,
		PodSets: []whatif.PodSet{{Name: "main", Count: 1, Requests: map[string]string{"cpu": "1"}}}}}
	got := cfg.Reached(trace)
	names := func(n int, name func(int) string) []string {
		var out []string
		for i := range n {
			out = append(out, name(i))
		}
		slices.Sort(out)
		return out
	}
	for what, pair := range map[string][2][]string{
		"ClusterQueues": {names(len(got.ClusterQueues), func(i int) string { return got.ClusterQueues[i].Name }), {"serve", "train"}},
		"Cohorts":       {names(len(got.Cohorts), func(i int) string { return got.Cohorts[i].Name }), {"org", "research"}},
		"LocalQueues":   {names(len(got.LocalQueues), func(i int) string { return got.LocalQueues[i].Namespace + "/" + got.LocalQueues[i].Name }), {"ops/serve", "team/train"}},
		"Flavors":       {names(len(got.Flavors), func(i int) string { return got.Flavors[i].Name }), {"gpu", "racked"}},
		"Topologies":    {names(len(got.Topologies), func(i int) string { return got.Topologies[i].Name }), {"racks"}},
	} {
		if !slices.Equal(pair[0], pair[1]) {
			t.Errorf("%s reached: %v; want %v", what, pair[0], pair[1])
		}
	}
	if err := got.Check(); err != nil {
		t.Fatalf("what the trace reaches: %v", err)
	}
	node := whatif.Node{Name: "n", Labels: map[string]string{"rack": "r1"}, Allocatable: map[string]string{"cpu": "8"}}
	r, err := whatif.Replay(got, start, trace, whatif.Options{Nodes: []whatif.Node{node}})
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Workloads[0]; o.ClusterQueue != "train" || o.Admitted == nil {
		t.Errorf("replayed: %+v; want admitted in train", o)
	}
}
