package cli

import (
	"strings"
	"testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
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

func TestStopReportSaysWhatHappensToAdmittedWork(t *testing.T) {
	lq := queueRef{kind: "LocalQueue", name: "jobs", namespace: "team-a"}
	for policy, want := range map[berthv1.StopPolicy]string{
		berthv1.Hold:           "LocalQueue team-a/jobs stopped: it admits nothing new; its 3 admitted workloads keep running",
		berthv1.HoldAndDrain:   "LocalQueue team-a/jobs stopped and draining: it admits nothing new, and its 3 admitted workloads are evicted and queue again",
		berthv1.StopPolicyNone: "LocalQueue team-a/jobs resumed: it admits again",
	} {
		if got := stopReport(lq, policy, 3); got != want {
			t.Errorf("%s: %q, want %q", policy, got, want)
		}
	}
}
