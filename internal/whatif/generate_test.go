package whatif_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/whatif"
)

// The same recipe makes the same trace; its arrivals keep the rate, its
// team mix the weights, and bad recipes are refused naming what is wrong.
func TestGenerate(t *testing.T) {
	r := whatif.Recipe{LocalQueues: []string{"a/q", "b/q"}, Weights: []float64{3, 1}, Workloads: 4000, Rate: 2, RunMean: 60,
		PodsMin: 1, PodsMax: 4, CPU: "500m", Priorities: []int32{0, 100}, Seed: 7}
	one, err := whatif.Generate(r)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := whatif.Generate(r)
	if !reflect.DeepEqual(one, two) {
		t.Fatal("the same seed made two traces")
	}
	teamA, last := 0, one[len(one)-1].Arrival
	for i, w := range one {
		if w.Namespace == "a" {
			teamA++
		}
		if i > 0 && w.Arrival < one[i-1].Arrival || w.PodSets[0].Count < 1 || w.PodSets[0].Count > 4 || w.Run < 1 {
			t.Fatalf("workload %d: %+v", i, w)
		}
	}
	if share := float64(teamA) / float64(len(one)); share < 0.72 || share > 0.78 {
		t.Errorf("team a has %.2f of the arrivals, want about 0.75", share)
	}
	if rate := float64(len(one)) / last; rate < 1.8 || rate > 2.2 {
		t.Errorf("%.2f arrivals a second, want about 2", rate)
	}
	for _, bad := range []struct {
		change func(*whatif.Recipe)
		want   string
	}{
		{func(r *whatif.Recipe) { r.LocalQueues, r.Weights = []string{"noslash"}, nil }, `local queue "noslash": want namespace/name`},
		{func(r *whatif.Recipe) { r.Rate = 0 }, "rate"},
		{func(r *whatif.Recipe) { r.PodsMax = 0 }, "pods: 1 to 0"},
		{func(r *whatif.Recipe) { r.Weights = []float64{1} }, "weights: 1 for 2 local queues"},
	} {
		r := r
		bad.change(&r)
		if _, err := whatif.Generate(r); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v; want %q", err, bad.want)
		}
	}
}

// BenchmarkReplay replays generated traces against ten ClusterQueues of
// one cohort, each with a LocalQueue; run with -benchtime=1x for one
// replay of each size.
func BenchmarkReplay(b *testing.B) {
	cfg, lqs := benchConfig(b, "apiVersion: berth.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: default}\n", 10, 10, "50")
	for _, n := range []int{10000, 100000} {
		// 500 cpu of quota, 2.5 cpu a workload on average for 100 s: 2
		// arrivals a second keep it about full.
		trace, err := whatif.Generate(whatif.Recipe{LocalQueues: lqs, Workloads: n, Rate: 2, RunMean: 100, PodsMin: 1, PodsMax: 4,
			CPU: "1", Priorities: []int32{0, 0, 0, 100}, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("workloads=%d", n), func(b *testing.B) {
			for b.Loop() {
				r, err := whatif.Replay(cfg, start, trace, whatif.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.Cycles), "cycles")
				b.ReportMetric(float64(r.Preemptions), "preemptions")
			}
		})
	}
}

// BenchmarkReplayWeek replays the shape issue 51 names, a week of a busy
// cluster: 500,000 workloads over seven days in a daily pattern (none at
// midnight, twice the mean at midday), 50 ClusterQueues in 5 cohorts, and
// 5,000 nodes of 8 cpu in 50 blocks of 10 racks that the flavor places by
// topology, each gang in a rack when it asks. The quota (40,000 cpu, all
// of the nodes) is about 65 % used on average: the lines grow through the
// day's peak and drain at night. Run with -benchtime=1x.
func BenchmarkReplayWeek(b *testing.B) {
	cfg, lqs := benchConfig(b, `apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: default}
spec: {topologyName: dc}
---
apiVersion: berth.dev/v1beta1
kind: Topology
metadata: {name: dc}
spec:
  levels:
  - nodeLabel: topology.berth.dev/block
  - nodeLabel: topology.berth.dev/rack
  - nodeLabel: kubernetes.io/hostname
`, 50, 10, "800")
	var nodes []whatif.Node
	for blk := range 50 {
		for r := range 10 {
			for h := range 10 {
				name := fmt.Sprintf("b%d-r%d-h%d", blk, r, h)
				nodes = append(nodes, whatif.Node{Name: name, Allocatable: map[string]string{"cpu": "8", "pods": "110"},
					Labels: map[string]string{"topology.berth.dev/block": fmt.Sprintf("b%d", blk),
						"topology.berth.dev/rack": fmt.Sprintf("b%d-r%d", blk, r), "kubernetes.io/hostname": name}})
			}
		}
	}
	for _, n := range []int{20000, 50000, 500000} {
		// 500,000 in 604,800 s; 8.5 pods of 1 cpu on average for 3,700 s
		// ask 26,000 cpu on average, 65 % of the quota.
		trace, err := whatif.Generate(whatif.Recipe{LocalQueues: lqs, Workloads: n, Rate: 500000.0 / 604800, Daily: true,
			RunMean: 3700, PodsMin: 1, PodsMax: 16, CPU: "1", Priorities: []int32{0, 0, 0, 100}, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		rack := "topology.berth.dev/rack"
		for i := range trace {
			if i%3 == 0 {
				trace[i].PodSets[0].Topology = &berthv1.TopologyRequest{Required: &rack}
			}
		}
		b.Run(fmt.Sprintf("workloads=%d", n), func(b *testing.B) {
			for b.Loop() {
				r, err := whatif.Replay(cfg, start, trace, whatif.Options{Nodes: nodes})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.Cycles), "cycles")
				b.ReportMetric(float64(r.Preemptions), "preemptions")
			}
		})
	}
}

// benchConfig is head (the flavor and what it needs) and n ClusterQueues of
// quota cpu, perCohort to a cohort, preempting lower priorities within a
// queue and reclaiming in the cohort, each with LocalQueue main in
// namespace team<i>; it returns the configuration and the LocalQueues.
func benchConfig(b *testing.B, head string, n, perCohort int, quota string) (*whatif.Config, []string) {
	var doc strings.Builder
	doc.WriteString(head)
	var lqs []string
	for i := range n {
		fmt.Fprintf(&doc, `---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: cq%d}
spec:
  cohort: org%d
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: %q}]
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: team%d}
spec: {clusterQueue: cq%d}
`, i, i/perCohort, quota, i, i)
		lqs = append(lqs, fmt.Sprintf("team%d/main", i))
	}
	cfg, err := whatif.ParseConfig("bench", []byte(doc.String()))
	if err != nil {
		b.Fatal(err)
	}
	return cfg, lqs
}
