package cli

import (
	"strings"
	"testing"
)

func TestParseQueueKind(t *testing.T) {
	for in, want := range map[string]string{"cq": "ClusterQueue", "ClusterQueue": "ClusterQueue", "lq": "LocalQueue",
		"queue": "LocalQueue", "wl": "Workload", "workloads": "Workload", "Job": "Job",
		"jobset": "JobSet", "sts": "StatefulSet", "StatefulSets": "StatefulSet"} {
		if got, err := parseQueueKind(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := parseQueueKind("deployment"); err == nil || !strings.Contains(err.Error(), "clusterqueue (cq), localqueue (lq), workload (wl), job, jobset or statefulset (sts)") {
		t.Errorf("deployment: %v, want an error naming what is accepted", err)
	}
}
