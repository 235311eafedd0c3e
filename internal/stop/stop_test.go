package stop_test

import (
	"testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/stop"
)

func TestQueueDoneSaysWhatHappensToAdmittedWork(t *testing.T) {
	for policy, want := range map[berthv1.StopPolicy]string{
		berthv1.Hold:           "LocalQueue team-a/jobs stopped: it admits nothing new; its 3 admitted workloads keep running",
		berthv1.HoldAndDrain:   "LocalQueue team-a/jobs stopped and draining: it admits nothing new, and its 3 admitted workloads are evicted and queue again",
		berthv1.StopPolicyNone: "LocalQueue team-a/jobs resumed: it admits again",
	} {
		if got := stop.QueueDone("LocalQueue team-a/jobs", policy, 3); got != want {
			t.Errorf("%s: %q, want %q", policy, got, want)
		}
	}
}

func TestWorkloadDoneSaysWhereItsQuotaGoes(t *testing.T) {
	for _, c := range []struct {
		active, admitted bool
		want             string
	}{
		{false, true, "w stopped: it gives its quota back, and waits out of its queue until resumed"},
		{false, false, "w stopped: it waits out of its queue until resumed"},
		{true, false, "w resumed: it queues again"},
	} {
		if got := stop.WorkloadDone("w", c.active, c.admitted); got != c.want {
			t.Errorf("active %v admitted %v: %q, want %q", c.active, c.admitted, got, c.want)
		}
	}
}
