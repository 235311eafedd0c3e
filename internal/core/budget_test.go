package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

// A ClusterQueue whose budget is spent with NoBorrowing admits within its
// nominal quota only, saying why; with Stop, nothing; and what it admitted
// before runs on.
func TestSpentBudget(t *testing.T) {
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	setup := func() *core.Cluster {
		c := core.NewCluster()
		c.SetFlavor(MakeFlavor("default").Obj())
		c.SetClusterQueue(MakeClusterQueue("team").Cohort("co").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj())
		c.SetClusterQueue(MakeClusterQueue("idle").Cohort("co").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "8").Obj()).Obj())
		return c
	}
	big := func() *core.Workload {
		return MakeWorkload("big", "team").PodSet("main", 1).Request("cpu", "3").Obj()
	}
	small := func() *core.Workload {
		return MakeWorkload("small", "team").PodSet("main", 1).Request("cpu", "2").Obj()
	}

	c := setup()
	if d := c.Cycle([]*core.Workload{big()}, now); d[0].Admit == nil {
		t.Fatalf("with budget left, 3 cpu are not admitted by borrowing: %+v", d[0].Pending)
	}

	c = setup()
	c.SetBudgetSpent("team", &core.Spent{Why: "budget spent (the test's)"})
	// A change of the queue keeps it spent.
	c.SetClusterQueue(MakeClusterQueue("team").Cohort("co").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj())
	d := c.Cycle([]*core.Workload{big()}, now)
	if d[0].Admit != nil || d[0].Pending.Reason != core.NoFit || !strings.HasSuffix(d[0].Pending.Message, "; budget spent (the test's)") {
		t.Fatalf("spent with NoBorrowing, a workload that must borrow: %+v %+v", d[0].Admit, d[0].Pending)
	}
	if d := c.Cycle([]*core.Workload{small()}, now); d[0].Admit == nil {
		t.Fatalf("spent with NoBorrowing, one within nominal quota is not admitted: %+v", d[0].Pending)
	}

	c.SetBudgetSpent("team", &core.Spent{Stop: true, Why: "budget spent, stop"})
	if why := c.Inactive("team"); why != "budget spent, stop" {
		t.Fatalf("spent with Stop: inactive %q", why)
	}
	if got := c.AdmittedIn("team"); len(got) != 1 {
		t.Fatalf("spent with Stop, what it admitted is gone: %v", got)
	}
	c.SetBudgetSpent("team", nil)
	if why := c.Inactive("team"); why != "" || c.BudgetSpent("team") != "" {
		t.Fatalf("with budget again, inactive %q", why)
	}
}

// Spent with LowerPriority, a ClusterQueue still borrows, but what it
// admits is admitted at the lower priority: another queue's work of middle
// priority may reclaim it, and its own high-priority work preempts no
// more than work of that priority could.
func TestSpentBudgetLowersPriority(t *testing.T) {
	now := Epoch.Add(time.Hour)
	low := int32(0)
	spent := &core.Spent{Priority: &low, Why: "budget spent: it admits at priority 0 at most"}
	setup := func(spend bool) *core.Cluster {
		c := core.NewCluster()
		c.SetFlavor(MakeFlavor("default").Obj())
		c.SetClusterQueue(MakeClusterQueue("team").Cohort("co").Preemption(core.PreemptLowerPriority, core.PreemptNever).
			ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj())
		c.SetClusterQueue(MakeClusterQueue("other").Cohort("co").Preemption(core.PreemptNever, core.PreemptLowerPriority).
			ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "8").Obj()).Obj())
		if spend {
			c.SetBudgetSpent("team", spent)
		}
		return c
	}
	big := MakeWorkload("big", "team").Priority(100).PodSet("main", 1).Request("cpu", "3").Obj()
	reclaimer := MakeWorkload("reclaimer", "other").Priority(50).PodSet("main", 1).Request("cpu", "8").Obj()

	for _, spend := range []bool{false, true} {
		c := setup(spend)
		d := c.Cycle([]*core.Workload{big}, now)
		if d[0].Admit == nil {
			t.Fatalf("spent %v: 3 cpu are not admitted by borrowing: %+v", spend, d[0].Pending)
		}
		if got := d[0].Admit.Priority; spend != (got != nil) || (got != nil && *got != 0) {
			t.Fatalf("spent %v: admitted at priority %v", spend, got)
		}
		if d[0].Workload != big || big.Priority != 100 {
			t.Fatal("the decision is not about the workload given, as it was given")
		}
		d = c.Cycle([]*core.Workload{reclaimer}, now.Add(time.Second))
		if preempted := len(d[0].Preempt) == 1 && d[0].Preempt[0].Key == big.Key; preempted != spend {
			t.Fatalf("spent %v: priority 50 reclaiming from big: %s preempting %+v", spend, Describe(d), d[0].Preempt)
		}
	}

	// Within its own queue, high-priority work competes at the low priority.
	for _, spend := range []bool{false, true} {
		c := setup(spend)
		c.SetClusterQueue(MakeClusterQueue("team").Preemption(core.PreemptLowerPriority, core.PreemptNever).
			ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj())
		c.AddAdmitted(Running("mid", "team").Priority(50).Use("default", "cpu", "2").Obj())
		hi := MakeWorkload("hi", "team").Priority(100).PodSet("main", 1).Request("cpu", "2").Obj()
		d := c.Cycle([]*core.Workload{hi}, now)
		if preempted := len(d[0].Preempt) == 1; preempted != !spend {
			t.Fatalf("spent %v: priority 100 against priority 50 in its queue: %s", spend, Describe(d))
		}
		if spend && !strings.Contains(d[0].Pending.Message, spent.Why) {
			t.Fatalf("held back, it does not say the budget is why: %s", d[0].Pending.Message)
		}
	}

	// Work already of the low priority or below is admitted as it is.
	c := setup(true)
	d := c.Cycle([]*core.Workload{MakeWorkload("least", "team").Priority(-1).PodSet("main", 1).Request("cpu", "3").Obj()}, now)
	if d[0].Admit == nil || d[0].Admit.Priority != nil {
		t.Fatalf("priority -1 under a spent budget of priority 0: %s %+v", Describe(d), d[0].Admit)
	}
}
