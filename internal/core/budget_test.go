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
