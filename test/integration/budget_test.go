package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// tinyBudget is 0.002 cpu-hours (7.2 cpu-seconds) per rolling minute,
// admitting nothing once spent: one Job of 1 cpu spends it in seconds.
func tinyBudget() *berthv1.Budget {
	return &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("0.002"), Window: berthv1.RollingBudget,
		Period: &metav1.Duration{Duration: time.Minute}, WhenSpent: berthv1.StopAdmitting}
}

// A ClusterQueue's budget of 0.002 cpu-hours (7.2 cpu-seconds) per rolling
// minute is spent by one Job of 1 cpu within seconds: the queue says so in
// its status and admits nothing more, the Job that runs runs on, and a
// budget raised lets the waiting Job in.
func TestSpentBudgetStopsAdmission(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	q := MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj()
	q.Spec.Budget = tinyBudget()
	env.Create(t, q)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	first := MakeJob("first", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, first)
	firstWL := jobWorkload(t, env, first).Name
	waitAdmitted(t, env, env.Namespace, firstWL)

	var got *berthv1.ClusterQueue
	testenv.Eventually(t, wait, func() error {
		var err error
		if got, err = clusterQueue(env, cq); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, "BudgetSpent")
		if c == nil || c.Status != metav1.ConditionTrue || got.Status.Budget == nil || got.Status.Budget.FreeAgainAt == nil {
			return fmt.Errorf("ClusterQueue %s: BudgetSpent %+v, budget %+v", cq, c, got.Status.Budget)
		}
		return nil
	})
	if spent := got.Status.Budget.SpentResourceHours; spent.Cmp(resource.MustParse("0.002")) < 0 {
		t.Errorf("spent %s of 0.002 cpu-hours with BudgetSpent True", spent.String())
	}
	active := meta.FindStatusCondition(got.Status.Conditions, "Active")
	if active == nil || active.Status != metav1.ConditionFalse || !strings.Contains(active.Message, "its budget of 0.002 cpu-hours per 1m0s (rolling) is spent: it admits nothing until") {
		t.Fatalf("Active condition of a ClusterQueue whose budget is spent: %+v", active)
	}

	second := MakeJob("second", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, second)
	secondWL := jobWorkload(t, env, second).Name
	waitPending(t, env, env.Namespace, secondWL, "its budget of 0.002 cpu-hours")
	if wl, err := getWorkload(env, env.Namespace, firstWL); err != nil || wl.Status.Admission == nil {
		t.Fatalf("the Job admitted before the budget was spent was stopped: %v %s", err, describe(wl))
	}

	// A budget raised has room: the waiting Job goes at once.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"budget":{"resourceHours":"10"}}}`))
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, secondWL)
}

// A LocalQueue's budget of 0.002 cpu-hours is spent by its one Job: its
// next Job waits, saying why, while the other LocalQueue of the same
// ClusterQueue goes on; the LocalQueue's status says it is spent.
func TestSpentLocalQueueBudgetStopsOnlyThatQueue(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	capped := MakeLocalQueue("capped", env.Namespace, cq).Obj()
	capped.Spec.Budget = tinyBudget()
	env.Create(t, capped)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	first := MakeJob("first", env.Namespace).Queue("capped").Request("cpu", "1").Obj()
	env.Create(t, first)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, first).Name)
	testenv.Eventually(t, wait, func() error {
		var lq berthv1.LocalQueue
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "capped"}, &lq); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(lq.Status.Conditions, "BudgetSpent"); c == nil || c.Status != metav1.ConditionTrue || lq.Status.Budget == nil {
			return fmt.Errorf("LocalQueue capped: BudgetSpent %+v, budget %+v", c, lq.Status.Budget)
		}
		return nil
	})
	second := MakeJob("second", env.Namespace).Queue("capped").Request("cpu", "1").Obj()
	env.Create(t, second)
	waitPending(t, env, env.Namespace, jobWorkload(t, env, second).Name,
		"LocalQueue "+env.Namespace+"/capped: its budget of 0.002 cpu-hours per 1m0s (rolling) is spent: it admits nothing until")
	other := MakeJob("other", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, other)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, other).Name)
}

// With whenSpent NoBorrowing, a spent budget keeps a ClusterQueue within
// its nominal quota: a Job that would fit only by borrowing from its
// cohort waits, saying why, while one that fits within the quota it has
// left is admitted.
func TestSpentBudgetStopsBorrowing(t *testing.T) {
	env := testenv.New(t)
	rf, cq, lender, co := env.Name("rf"), env.Name("cq"), env.Name("lender"), env.Name("co")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(lender).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	q := MakeClusterQueue(cq).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj()
	q.Spec.Budget = tinyBudget()
	q.Spec.Budget.WhenSpent = berthv1.NoBorrowing
	env.Create(t, q)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	first := MakeJob("first", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, first)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, first).Name)
	testenv.Eventually(t, wait, func() error {
		got, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, "BudgetSpent"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ClusterQueue %s: BudgetSpent %+v", cq, c)
		}
		return nil
	})

	// 1 of 2 cpu used: 2 more fit only by borrowing from the lender.
	big := MakeJob("big", env.Namespace).Queue("main").Request("cpu", "2").Obj()
	env.Create(t, big)
	waitPending(t, env, env.Namespace, jobWorkload(t, env, big).Name,
		"is spent: it admits only within its nominal quota, without borrowing until")
	small := MakeJob("small", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, small)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, small).Name)
}

// With whenSpent LowerPriority, a spent budget lets a ClusterQueue borrow
// still, but at its spentPriority: its Job of priority 100 is admitted at
// 0, and another queue of the cohort reclaims the borrowed quota with work
// of priority 50, which could not preempt it at its own priority.
func TestSpentBudgetLowersPriority(t *testing.T) {
	env := testenv.New(t)
	rf, cq, other, co := env.Name("rf"), env.Name("cq"), env.Name("other"), env.Name("co")
	high, mid := env.Name("high"), env.Name("mid")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: high}, Value: 100})
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: mid}, Value: 50})
	env.Create(t, MakeResourceFlavor(rf).Obj())
	o := MakeClusterQueue(other).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj()
	o.Spec.Preemption = &berthv1.ClusterQueuePreemption{ReclaimWithinCohort: berthv1.PreemptionLowerPriority}
	env.Create(t, o)
	q := MakeClusterQueue(cq).Cohort(co).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj()
	q.Spec.Budget = tinyBudget()
	q.Spec.Budget.WhenSpent, q.Spec.Budget.SpentPriority = berthv1.LowerPriority, ptr(int32(0))
	env.Create(t, q)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeLocalQueue("other", env.Namespace, other).Obj())

	first := MakeJob("first", env.Namespace).Queue("main").Label(berthv1.PriorityClassLabel, high).Request("cpu", "1").Obj()
	env.Create(t, first)
	firstWL := jobWorkload(t, env, first).Name
	if wl := waitAdmitted(t, env, env.Namespace, firstWL); wl.Status.Admission.Priority != nil {
		t.Fatalf("admitted with budget left, at priority %d", *wl.Status.Admission.Priority)
	}
	testenv.Eventually(t, wait, func() error {
		got, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, "BudgetSpent"); c == nil || c.Status != metav1.ConditionTrue ||
			!strings.Contains(c.Message, "is spent: it admits at priority 0 at most until") {
			return fmt.Errorf("ClusterQueue %s: BudgetSpent %+v", cq, c)
		}
		return nil
	})

	// 1 of 2 cpu used: 2 more borrow 1 from the other queue, at priority 0.
	big := MakeJob("big", env.Namespace).Queue("main").Label(berthv1.PriorityClassLabel, high).Request("cpu", "2").Obj()
	env.Create(t, big)
	bigWL := jobWorkload(t, env, big).Name
	wl := waitAdmitted(t, env, env.Namespace, bigWL)
	if p := wl.Status.Admission.Priority; p == nil || *p != 0 || wl.Spec.Priority == nil || *wl.Spec.Priority != 100 {
		t.Fatalf("admitted with the budget spent: at priority %v, its own %v", p, wl.Spec.Priority)
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved); c == nil ||
		!strings.Contains(c.Message, "at priority 0: its budget is spent") {
		t.Fatalf("QuotaReserved does not say it was lowered: %+v", c)
	}

	// The other queue's work of priority 50 takes its quota back.
	reclaimer := MakeJob("reclaimer", env.Namespace).Queue("other").Label(berthv1.PriorityClassLabel, mid).Request("cpu", "4").Obj()
	env.Create(t, reclaimer)
	waitAdmitted(t, env, env.Namespace, jobWorkload(t, env, reclaimer).Name)
	if wl, err := getWorkload(env, env.Namespace, bigWL); err != nil || workload.HasQuota(wl) {
		t.Fatalf("the Job admitted at the lowered priority still holds quota beside the reclaimer: %v %s", err, describe(wl))
	}
	if wl, err := getWorkload(env, env.Namespace, firstWL); err != nil || !workload.HasQuota(wl) {
		t.Fatalf("the Job admitted before the budget was spent lost its quota: %v %s", err, describe(wl))
	}
}
