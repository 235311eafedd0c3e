package whatif_test

import (
	"fmt"
	"os"
	"time"

	"github.com/berth-dev/berth/internal/whatif"
)

// Two 4-cpu workloads on a 4-cpu queue: the second waits for the first.
func ExampleReplay() {
	cfg, err := whatif.ParseConfig("plan.yaml", []byte(`
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
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: 4}]}]
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: team}
spec: {clusterQueue: cq}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	four := []whatif.PodSet{{Name: "main", Count: 1, Requests: map[string]string{"cpu": "4"}}}
	trace := []whatif.Workload{
		{Name: "first", Namespace: "team", LocalQueue: "main", Arrival: 0, Run: 60, PodSets: four},
		{Name: "second", Namespace: "team", LocalQueue: "main", Arrival: 10, Run: 60, PodSets: four},
	}
	r, err := whatif.Replay(cfg, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), trace, whatif.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range r.Workloads {
		fmt.Printf("%s waited %vs\n", o.Key, o.Wait)
	}
	_ = whatif.WriteSummary(os.Stdout, r)
	// Output:
	// team/first waited 0s
	// team/second waited 50s
	// config plan.yaml: 2 workloads, 0 preemptions, last event at 2m0s
	// BY            NAME       WORKLOADS  ADMITTED  NOT ADMITTED  MEAN WAIT  P50   P95  MAX  PREEMPTED
	// ClusterQueue  cq         2          2         0             25s        0.0s  50s  50s  0
	// LocalQueue    team/main  2          2         0             25s        0.0s  50s  50s  0
	// priority      0          2          2         0             25s        0.0s  50s  50s  0
	//
	// CLUSTERQUEUE  FLAVOR   RESOURCE  USED OF NOMINAL  BORROWED
	// cq            default  cpu       4 of 4 (100 %)   0
}
