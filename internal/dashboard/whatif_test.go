package dashboard_test

import (
	"math"
	"strings"
	"testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/whatif"
	. "github.com/berth-dev/berth/test/fixtures"
)

// twoWorkloads are two workloads of 2 cpu, arriving together in LocalQueue
// team/main and running a minute each.
func twoWorkloads() []whatif.Workload {
	job := func(name string) whatif.Workload {
		return whatif.Workload{Name: name, Namespace: "team", LocalQueue: "main", Run: 60,
			PodSets: []whatif.PodSet{{Name: "main", Count: 2, Requests: map[string]string{"cpu": "1"}}}}
	}
	return []whatif.Workload{job("first"), job("second")}
}

// twoJobs is twoWorkloads' trace file.
func twoJobs(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	if err := whatif.WriteTrace(&b, whatif.Header{Start: t0}, twoWorkloads()); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// cluster is a cluster whose queues are ClusterQueue cq of 2 cpu for
// team/main, and a queue of its own elsewhere that a replay would refuse;
// and whose history is twoWorkloads, one more not finished yet.
var cluster = dashboard.WhatIfCluster{Queues: queues, History: func() (whatif.Recording, error) {
	return whatif.Recording{Start: t0, Workloads: twoWorkloads(), Skipped: map[string]int{whatif.SkipNotFinished: 1}}, nil
}}

func queues() (*whatif.Config, error) {
	return &whatif.Config{Name: whatif.ThisCluster,
		Flavors: []berthv1.ResourceFlavor{*MakeResourceFlavor("default").Obj(), *MakeResourceFlavor("other").Obj()},
		ClusterQueues: []berthv1.ClusterQueue{
			*MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj(),
			*MakeClusterQueue("checked").AdmissionChecks("approval").ResourceGroup(MakeFlavorQuotas("other").Resource("cpu", "2").Obj()).Obj(),
		},
		LocalQueues: []berthv1.LocalQueue{MakeLocalQueue("main", "team", "cq").LocalQueue},
	}, nil
}

const doubled = `
apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "4"}]}]
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: team}
spec: {clusterQueue: cq}
`

// The page's question, worked by hand: with the cluster's 2 cpu the
// second workload waits for the first (a minute), with 4 it does not.
func TestWhatIfComparesThisClusterWithAPlan(t *testing.T) {
	v, err := dashboard.WhatIf(dashboard.WhatIfRequest{Trace: twoJobs(t), TraceName: "two.jsonl", Plans: []dashboard.WhatIfPlan{
		{ThisCluster: true}, {Name: "doubled.yaml", YAML: doubled},
	}}, cluster)
	if err != nil {
		t.Fatal(err)
	}
	c := v.Comparison
	if v.Workloads != 2 || c.A != whatif.ThisCluster || c.B != "doubled.yaml" {
		t.Fatalf("workloads %d, plans %q and %q; want 2, %q and doubled.yaml", v.Workloads, c.A, c.B, whatif.ThisCluster)
	}
	var cq *whatif.Pair
	for i := range c.Groups {
		if c.Groups[i].By == "ClusterQueue" && c.Groups[i].Name == "cq" {
			cq = &c.Groups[i]
		}
	}
	if cq == nil {
		t.Fatalf("no group for ClusterQueue cq in %+v", c.Groups)
	}
	if cq.A.Admitted != 2 || cq.A.Mean != 30 || cq.A.Max != 60 || cq.B.Admitted != 2 || cq.B.Max != 0 {
		t.Errorf("ClusterQueue cq: this cluster %+v, doubled %+v; want waits 0 and 60 s, then none", cq.A, cq.B)
	}
	if len(c.Changed) != 1 || c.Changed[0].Key != "team/second" || c.Changed[0].A != 60 || c.Changed[0].B != 0 {
		t.Errorf("changed: %+v; want team/second, 60 s to 0", c.Changed)
	}
	if len(v.Chart.Panels) < 3 || len(v.Chart.Panels[0].Series) != 2 {
		t.Fatalf("chart: %+v; want waiting, waits and quota panels, a line per plan", v.Chart)
	}
	peak := 0.0
	for _, p := range v.Chart.Panels[0].Series[0].Points {
		peak = math.Max(peak, p.Y)
	}
	if peak != 1 {
		t.Errorf("workloads waiting under this cluster's queues peak at %v; want 1", peak)
	}
}

// Bad requests are refused naming what is wrong; a plan with the same
// name twice is told apart.
func TestWhatIfRefusesWhatItCannotReplay(t *testing.T) {
	trace := twoJobs(t)
	for _, c := range []struct {
		name string
		req  dashboard.WhatIfRequest
		want string
	}{
		{"no trace", dashboard.WhatIfRequest{Plans: []dashboard.WhatIfPlan{{ThisCluster: true}, {ThisCluster: true}}}, "trace: required"},
		{"a trace and the history", dashboard.WhatIfRequest{Trace: trace, History: true, Plans: []dashboard.WhatIfPlan{{ThisCluster: true}, {ThisCluster: true}}},
			"trace: either a trace file or this cluster's history, not both"},
		{"one plan", dashboard.WhatIfRequest{Trace: trace, Plans: []dashboard.WhatIfPlan{{ThisCluster: true}}}, "plans: two to compare (1 given)"},
		{"not a trace", dashboard.WhatIfRequest{Trace: "{}\n", TraceName: "x.jsonl", Plans: []dashboard.WhatIfPlan{{ThisCluster: true}, {ThisCluster: true}}}, "x.jsonl: "},
		{"both", dashboard.WhatIfRequest{Trace: trace, Plans: []dashboard.WhatIfPlan{{ThisCluster: true, YAML: doubled, Name: "d.yaml"}, {ThisCluster: true}}},
			"plan 1 (d.yaml): either this cluster's queues or a file"},
		{"neither", dashboard.WhatIfRequest{Trace: trace, Plans: []dashboard.WhatIfPlan{{ThisCluster: true}, {Name: "empty.yaml"}}},
			"plan 2 (empty.yaml): a configuration file, or this cluster's queues"},
		{"a refused plan", dashboard.WhatIfRequest{Trace: trace, Plans: []dashboard.WhatIfPlan{{ThisCluster: true},
			{Name: "bad.yaml", YAML: strings.Replace(doubled, "kind: LocalQueue", "kind: Job", 1)}}}, "plan 2: bad.yaml: document 3: Job main"},
	} {
		_, err := dashboard.WhatIf(c.req, cluster)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error holding %q", c.name, err, c.want)
		}
	}
	v, err := dashboard.WhatIf(dashboard.WhatIfRequest{Trace: trace, Plans: []dashboard.WhatIfPlan{{ThisCluster: true}, {ThisCluster: true}}}, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if v.Comparison.A == v.Comparison.B {
		t.Errorf("two plans both named %q", v.Comparison.A)
	}
}

// The cluster's own history instead of a trace: the same answer, and what
// was left out of it.
func TestWhatIfReplaysThisClustersHistory(t *testing.T) {
	v, err := dashboard.WhatIf(dashboard.WhatIfRequest{History: true, Plans: []dashboard.WhatIfPlan{
		{ThisCluster: true}, {Name: "doubled.yaml", YAML: doubled},
	}}, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if c := v.Comparison.Changed; v.Workloads != 2 || len(c) != 1 || c[0].Key != "team/second" || c[0].A != 60 || c[0].B != 0 {
		t.Errorf("%d workloads, changed %+v; want 2, team/second 60 s to 0", v.Workloads, c)
	}
	if v.Left[whatif.SkipNotFinished] != 1 {
		t.Errorf("left out: %v; want the one not finished", v.Left)
	}
	empty := dashboard.WhatIfCluster{Queues: queues, History: func() (whatif.Recording, error) {
		return whatif.Recording{Skipped: map[string]int{whatif.SkipNotFinished: 3}}, nil
	}}
	_, err = dashboard.WhatIf(dashboard.WhatIfRequest{History: true, Plans: []dashboard.WhatIfPlan{{ThisCluster: true}, {ThisCluster: true}}}, empty)
	if err == nil || !strings.Contains(err.Error(), "no workload that ran to its end yet") {
		t.Errorf("an empty history: %v; want it refused, saying why", err)
	}
}
