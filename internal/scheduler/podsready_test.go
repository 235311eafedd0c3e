package scheduler

import (
	"testing"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
)

// Blocked behind a gang whose pods are not Ready, a workload is set aside;
// the API showing the gang's pods Ready brings it back and wakes the loop.
func TestPodsReadyUnblocksTheQueue(t *testing.T) {
	s := New(clock.RealClock{})
	s.SetBlockUntilPodsReady(true)
	s.SetFlavor(MakeFlavor("default").Obj())
	s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj())
	s.SetLocalQueue(queue.LocalQueue{Key: "default/main", ClusterQueue: "cq"})
	s.WorkloadPending(MakeWorkload("gang", "cq").PodSet("main", 2).Request("cpu", "1").AwaitsPods().Obj(), "default/main")
	ds := s.Cycle()
	if len(ds) != 1 || ds[0].Admit == nil {
		t.Fatalf("gang not admitted:\n%s", Describe(ds))
	}
	gang := core.Admitted{Key: "default/gang", ClusterQueue: "cq", Usage: ds[0].Admit.Usage, PodsPending: true}
	s.WorkloadAdmitted(gang, "default/main")

	s.WorkloadPending(MakeWorkload("next", "cq").PodSet("main", 1).Request("cpu", "1").Obj(), "default/main")
	ds = s.Cycle()
	if len(ds) != 1 || ds[0].Pending == nil || ds[0].Pending.Reason != core.WaitingForPodsReady {
		t.Fatalf("behind the gang:\n%s", Describe(ds))
	}
	if ds = s.Cycle(); len(ds) != 0 {
		t.Fatalf("set aside, it is not looked at again until something changes:\n%s", Describe(ds))
	}
	drain(s.Wake())
	gang.PodsPending = false
	s.WorkloadAdmitted(gang, "default/main")
	select {
	case <-s.Wake():
	default:
		t.Fatal("the gang's pods Ready did not wake the admission loop")
	}
	if ds = s.Cycle(); len(ds) != 1 || ds[0].Admit == nil {
		t.Fatalf("after the gang's pods are Ready:\n%s", Describe(ds))
	}
}

func drain(c <-chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
