package queues

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/scheduler"
	fixtures "github.com/berth-dev/berth/test/fixtures"
)

// A ClusterQueue's status write (berth makes one per queue every second while
// it admits) must not rebuild the quota tree nor give every set-aside
// workload another look; a spec change must.
func TestOnlySpecChangesReachTheScheduler(t *testing.T) {
	sched := scheduler.New(clock.RealClock{})
	c := &Controller{sched: sched, evict: func([]string, string, string) {}, tending: map[objRef]bool{}}
	h := handler(c.setClusterQueue, c.deleteClusterQueue, nil)

	old := fixtures.MakeClusterQueue("cq").Guarded().ResourceGroup(fixtures.MakeFlavorQuotas("rf").Resource("cpu", "1").Obj()).Obj()
	old.Generation = 1
	sched.SetFlavor(MakeFlavor("rf").Obj())
	h.OnAdd(old, false)
	sched.SetLocalQueue(queue.LocalQueue{Key: "ns/lq", ClusterQueue: "cq"})
	// Too big for the queue: looked at once, then set aside.
	sched.WorkloadPending(MakeWorkload("ns/big", "cq").PodSet("main", 1).Request("cpu", "2").Obj(), "ns/lq")
	if ds := sched.Cycle(); len(ds) != 1 || ds[0].Admit != nil {
		t.Fatalf("first cycle: %s", Describe(ds))
	}

	statusOnly := old.DeepCopy()
	statusOnly.Status.PendingWorkloads = 1
	statusOnly.Status.Conditions = append(statusOnly.Status.Conditions, activeCondition())
	h.OnUpdate(old, statusOnly)
	if ds := sched.Cycle(); len(ds) != 0 {
		t.Errorf("a status-only update requeued set-aside workloads: %s", Describe(ds))
	}

	bigger := statusOnly.DeepCopy()
	bigger.Generation = 2
	bigger.Spec.ResourceGroups = fixtures.MakeClusterQueue("cq").ResourceGroup(
		fixtures.MakeFlavorQuotas("rf").Resource("cpu", "2").Obj()).Obj().Spec.ResourceGroups
	h.OnUpdate(statusOnly, bigger)
	if ds := sched.Cycle(); len(ds) != 1 || ds[0].Admit == nil {
		t.Errorf("after the quota was raised: %s, want the workload admitted", Describe(ds))
	}
}

func activeCondition() metav1.Condition {
	return metav1.Condition{Type: "Active", Status: metav1.ConditionTrue, Reason: "Ready"}
}

// A queue admits once its in-use finalizer is on: that metadata-only update
// reaches the scheduler.
func TestGuardingAQueueReachesTheScheduler(t *testing.T) {
	sched := scheduler.New(clock.RealClock{})
	c := &Controller{sched: sched, evict: func([]string, string, string) {}, tending: map[objRef]bool{}}
	h := handler(c.setClusterQueue, c.deleteClusterQueue, nil)
	bare := fixtures.MakeClusterQueue("cq").ResourceGroup(fixtures.MakeFlavorQuotas("rf").Resource("cpu", "1").Obj()).Obj()
	sched.SetFlavor(MakeFlavor("rf").Obj())
	h.OnAdd(bare, false)
	sched.SetLocalQueue(queue.LocalQueue{Key: "ns/lq", ClusterQueue: "cq"})
	sched.WorkloadPending(MakeWorkload("ns/w", "cq").PodSet("main", 1).Request("cpu", "1").Obj(), "ns/lq")
	if ds := sched.Cycle(); len(ds) == 1 && ds[0].Admit != nil {
		t.Fatalf("admitted through a queue without its in-use finalizer: %s", Describe(ds))
	}
	guarded := bare.DeepCopy()
	guarded.Finalizers = []string{InUseFinalizer}
	h.OnUpdate(bare, guarded)
	if ds := sched.Cycle(); len(ds) != 1 || ds[0].Admit == nil {
		t.Errorf("once guarded: %s, want the workload admitted", Describe(ds))
	}
}

// Nothing is admitted with a flavor before its in-use finalizer is on: the
// queues naming it say why, and admit once it is guarded.
func TestGuardingAFlavorReachesTheScheduler(t *testing.T) {
	sched := scheduler.New(clock.RealClock{})
	c := &Controller{sched: sched, evict: func([]string, string, string) {}, tending: map[objRef]bool{}}
	h := handler(c.setFlavor, c.deleteFlavor, nil)
	bare := fixtures.MakeResourceFlavor("rf").Obj()
	h.OnAdd(bare, false)
	sched.SetClusterQueue(ClusterQueueOf(fixtures.MakeClusterQueue("cq").Guarded().
		ResourceGroup(fixtures.MakeFlavorQuotas("rf").Resource("cpu", "1").Obj()).Obj()))
	sched.SetLocalQueue(queue.LocalQueue{Key: "ns/lq", ClusterQueue: "cq"})
	sched.WorkloadPending(MakeWorkload("ns/w", "cq").PodSet("main", 1).Request("cpu", "1").Obj(), "ns/lq")
	if ds := sched.Cycle(); len(ds) == 1 && ds[0].Admit != nil {
		t.Fatalf("admitted with a flavor without its in-use finalizer: %s", Describe(ds))
	}
	if why := sched.ClusterQueueStatus("cq").Inactive; !strings.Contains(why, "ResourceFlavor rf is waiting for its in-use finalizer") {
		t.Errorf("the queue's reason: %q, want it to name the unguarded flavor", why)
	}
	guarded := bare.DeepCopy()
	guarded.Finalizers = []string{InUseFinalizer}
	h.OnUpdate(bare, guarded)
	if ds := sched.Cycle(); len(ds) != 1 || ds[0].Admit == nil {
		t.Errorf("once guarded: %s, want the workload admitted", Describe(ds))
	}
}
