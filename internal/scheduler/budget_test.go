package scheduler

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/budget"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
)

// budgeted is a scheduler with ClusterQueue cq of 4 cpu and a budget of 1.9
// cpu-hours per rolling hour that stops it when spent.
func budgeted(clk *clocktesting.FakePassiveClock) *Scheduler {
	s := New(clk)
	s.SetFlavor(MakeFlavor("default").Obj())
	cq := MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj()).Obj()
	cq.Budget = &budget.Spec{Resource: "cpu", Hours: 1.9, Rolling: time.Hour, Stop: true}
	s.SetClusterQueue(cq)
	s.SetLocalQueue(queue.LocalQueue{Key: "default/main", ClusterQueue: "cq"})
	return s
}

// Two cpu held for an hour spend the budget: the queue admits nothing
// more, says why, and a scheduler started afresh from the ledger (a
// restart or a new leader) charges the time it did not see and holds back
// too; once the window forgets the spending, the waiting workload goes.
func TestBudgetStopsTheQueueAcrossARestart(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	s := budgeted(clk)
	s.ChargeBudgets()
	s.WorkloadPending(MakeWorkload("first", "").PodSet("main", 1).Request("cpu", "2").Obj(), "default/main")
	if got := admittedKeys(s.Cycle()); got != "default/first" {
		t.Fatalf("admitted %q with the budget untouched; want first", got)
	}
	for range 50 { // 50 minutes at 2 cpu: 1.67 of 1.9 cpu-hours
		clk.SetTime(clk.Now().Add(time.Minute))
		s.ChargeBudgets()
	}
	spec, ledger, _ := s.Budget(BudgetOwner{Name: "cq"})
	if spec.Exhausted(ledger, clk.Now()) {
		t.Fatalf("spent %v of 2 cpu-hours after 50 minutes at 2 cpu", spec.Spent(ledger, clk.Now()))
	}

	// The controller stops here, with the ledger its status keeps, and
	// comes back 20 minutes later; first's Workload was deleted meanwhile,
	// so nothing holds quota now. The 20 minutes are charged at the rate
	// the ledger last saw: first may have held its 2 cpu all along.
	clk.SetTime(clk.Now().Add(20 * time.Minute))
	again := budgeted(clk)
	again.TakeUpLedger(BudgetOwner{Name: "cq"}, ledger)
	again.ChargeBudgets()
	spec, ledger, _ = again.Budget(BudgetOwner{Name: "cq"})
	if got := spec.Spent(ledger, clk.Now()); got < 1.9 {
		t.Fatalf("spent %v in the last hour at 2 cpu, 20 minutes of it across a restart; want about 2", got)
	}
	again.WorkloadPending(MakeWorkload("second", "").PodSet("main", 1).Request("cpu", "1").Obj(), "default/main")
	d := again.Cycle()
	if len(d) != 1 || d[0].Admit != nil || !strings.Contains(d[0].Pending.Message, "its budget of 1.9 cpu-hours per 1h0m0s (rolling) is spent: it admits nothing until") {
		t.Fatalf("with the budget spent: %+v %+v", d, d[0].Pending)
	}

	// An hour and a slice later the window has forgotten it.
	clk.SetTime(clk.Now().Add(time.Hour + 3*time.Minute))
	again.ChargeBudgets()
	if got := admittedKeys(again.Cycle()); got != "default/second" {
		t.Fatalf("admitted %q once the window forgot the spending; want second", got)
	}
}

// A LocalQueue whose budget is spent takes nothing more while the other
// LocalQueues of its ClusterQueue go on; its waiting workloads say why,
// and go once the window frees some.
func TestLocalQueueBudget(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	s := New(clk)
	s.SetFlavor(MakeFlavor("default").Obj())
	s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "8").Obj()).Obj())
	s.SetLocalQueue(queue.LocalQueue{Key: "default/capped", ClusterQueue: "cq"})
	s.SetLocalQueue(queue.LocalQueue{Key: "default/free", ClusterQueue: "cq"})
	s.SetLocalQueueBudget("default/capped", &budget.Spec{Resource: "cpu", Hours: 1, Rolling: time.Hour, Stop: true})
	s.ChargeBudgets()
	s.WorkloadPending(MakeWorkload("c-1", "").PodSet("main", 1).Request("cpu", "2").Obj(), "default/capped")
	if got := admittedKeys(s.Cycle()); got != "default/c-1" {
		t.Fatalf("admitted %q; want c-1", got)
	}
	for range 31 { // 2 cpu for 31 minutes: past 1 cpu-hour
		clk.SetTime(clk.Now().Add(time.Minute))
		s.ChargeBudgets()
	}
	s.WorkloadPending(MakeWorkload("c-2", "").PodSet("main", 1).Request("cpu", "1").Obj(), "default/capped")
	s.WorkloadPending(MakeWorkload("f-1", "").PodSet("main", 1).Request("cpu", "1").Obj(), "default/free")
	if got := admittedKeys(s.Cycle()); got != "default/f-1" {
		t.Fatalf("admitted %q with capped's budget spent; want f-1 alone", got)
	}
	if p := s.queues.Pending("default/c-2"); p == nil || !strings.Contains(p.Message, "LocalQueue default/capped: its budget of 1 cpu-hours per 1h0m0s (rolling) is spent") {
		t.Fatalf("c-2 waits with %+v", p)
	}
	s.WorkloadGone("default/c-1")
	s.ChargeBudgets() // the leader charges every second
	clk.SetTime(clk.Now().Add(time.Hour + 3*time.Minute))
	s.ChargeBudgets()
	if got := admittedKeys(s.Cycle()); got != "default/c-2" {
		t.Fatalf("admitted %q once the window forgot the spending; want c-2", got)
	}
}
