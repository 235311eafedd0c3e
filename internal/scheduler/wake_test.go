package scheduler

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
)

// The cycle loop sleeps until NextWake; a workload evicted meanwhile with a
// backoff that ends sooner must wake it, or it would wait for an unrelated
// event (a Job resized on a quiet cluster stayed pending for minutes).
func TestHeldWorkloadWakesTheLoop(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	s := New(clk)
	s.SetFlavor(MakeFlavor("default").Obj())
	s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj())
	s.SetLocalQueue(queue.LocalQueue{Key: "default/main", ClusterQueue: "cq"})
	drain := func() bool {
		select {
		case <-s.Wake():
			return true
		default:
			return false
		}
	}
	drain()
	if _, ok := s.NextWake(); ok {
		t.Fatal("a workload is held before any was evicted")
	}

	late := MakeWorkload("late", "cq").PodSet("main", 1).Request("cpu", "1").Obj()
	late.NotBefore = clk.Now().Add(time.Minute)
	s.WorkloadPending(late, "default/main")
	if !drain() {
		t.Fatal("a held workload did not wake the loop, which would not know when to look again")
	}
	if at, ok := s.NextWake(); !ok || !at.Equal(late.NotBefore) {
		t.Fatalf("NextWake %v %v; want %v", at, ok, late.NotBefore)
	}
	other := MakeWorkload("later", "cq").PodSet("main", 1).Request("cpu", "1").Obj()
	other.NotBefore = clk.Now().Add(2 * time.Minute)
	s.WorkloadPending(other, "default/main")
	if drain() {
		t.Error("a workload held until after the time the loop waits for woke it for nothing")
	}
	soon := MakeWorkload("soon", "cq").PodSet("main", 1).Request("cpu", "1").Obj()
	soon.NotBefore = clk.Now().Add(time.Second)
	s.WorkloadPending(soon, "default/main")
	if !drain() {
		t.Error("a workload held until before the time the loop waits for did not wake it")
	}
}
