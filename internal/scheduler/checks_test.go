package scheduler

import (
	"testing"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
)

// A workload admitted in a queue with admission checks counts as reserving,
// not admitted, until the API shows its checks passed.
func TestReservingUntilChecksPass(t *testing.T) {
	s := New(clock.RealClock{})
	s.SetFlavor(MakeFlavor("default").Obj())
	s.SetAdmissionCheck("budget", true)
	s.SetClusterQueue(MakeClusterQueue("cq").AdmissionChecks("budget").
		ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj())
	s.SetLocalQueue(queue.LocalQueue{Key: "default/main", ClusterQueue: "cq"})
	s.WorkloadPending(MakeWorkload("w", "cq").PodSet("main", 1).Request("cpu", "1").Obj(), "default/main")
	ds := s.Cycle()
	if len(ds) != 1 || ds[0].Admit == nil {
		t.Fatalf("not admitted:\n%s", Describe(ds))
	}
	counts := func() [4]int {
		cq, lq := s.ClusterQueueStatus("cq"), s.LocalQueueStatus("default/main")
		return [4]int{cq.Reserving, cq.Admitted, lq.Reserving, lq.Admitted}
	}
	if got := counts(); got != [4]int{1, 0, 1, 0} {
		t.Errorf("after the cycle: ClusterQueue reserving, admitted, LocalQueue reserving, admitted = %v; want 1 0 1 0", got)
	}
	a := core.Admitted{Key: "default/w", ClusterQueue: "cq", Usage: ds[0].Admit.Usage, ChecksPending: true}
	s.WorkloadAdmitted(a, "default/main")
	if got := counts(); got != [4]int{1, 0, 1, 0} {
		t.Errorf("written, checks pending: %v; want 1 0 1 0", got)
	}
	a.ChecksPending = false
	s.WorkloadAdmitted(a, "default/main")
	if got := counts(); got != [4]int{1, 1, 1, 1} {
		t.Errorf("checks passed: %v; want 1 1 1 1", got)
	}
	s.WorkloadGone("default/w")
	if got := counts(); got != [4]int{} {
		t.Errorf("gone: %v; want all 0", got)
	}
}
