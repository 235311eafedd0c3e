package queues

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/budget"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/scheduler"
	. "github.com/berth-dev/berth/test/fixtures"
)

func TestClusterQueueStatusOf(t *testing.T) {
	cq := MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("a").Resource("cpu", "2").Resource("memory", "1Gi").Obj(),
		MakeFlavorQuotas("b").Resource("cpu", "2").Resource("memory", "1Gi").Obj()).Obj()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := scheduler.ClusterQueueStatus{Pending: 2, Inadmissible: 3, Reserving: 2, Admitted: 1,
		Usage:   core.Usage{{Flavor: "a", Resource: "cpu"}: 3000},
		Nominal: core.Usage{{Flavor: "a", Resource: "cpu"}: 2000, {Flavor: "b", Resource: "cpu"}: 2000}}
	got := ClusterQueueStatusOf(cq, st, now)
	if got.PendingWorkloads != 5 || got.ReservingWorkloads != 2 || got.AdmittedWorkloads != 1 {
		t.Errorf("counts %+v", got)
	}
	// Every flavor and covered resource is listed, zeros included; borrowing shows.
	if len(got.FlavorsUsage) != 2 || got.FlavorsUsage[0].Name != "a" || len(got.FlavorsUsage[1].Resources) != 2 {
		t.Fatalf("flavorsUsage %+v", got.FlavorsUsage)
	}
	cpu := got.FlavorsUsage[0].Resources[0]
	if cpu.Name != "cpu" || cpu.Total.String() != "3" || cpu.Borrowed.String() != "1" {
		t.Errorf("cpu usage %+v, want total 3, borrowed 1", cpu)
	}
	if c := got.Conditions[0]; c.Type != "Active" || c.Status != metav1.ConditionTrue {
		t.Errorf("Active condition %+v", c)
	}
	// An unchanged condition keeps its transition time: no needless writes.
	cq.Status = got
	again := ClusterQueueStatusOf(cq, st, now.Add(time.Hour))
	if !again.Conditions[0].LastTransitionTime.Equal(&got.Conditions[0].LastTransitionTime) {
		t.Error("an unchanged Active condition got a new transition time")
	}
	st.Inactive = "ResourceFlavor b not found"
	inactive := ClusterQueueStatusOf(cq, st, now)
	if c := inactive.Conditions[0]; c.Status != metav1.ConditionFalse || c.Reason != "FlavorNotFound" || c.Message != st.Inactive {
		t.Errorf("inactive condition %+v", c)
	}
}

// A stored object the core cannot use makes an inactive queue, not a crash.
func TestInvalidNamespaceSelectorMakesAnInactiveQueue(t *testing.T) {
	cq := MakeClusterQueue("cq").NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "team", Operator: "Bogus"}}}).Obj()
	got := ClusterQueueOf(cq)
	if got.Problem == "" || got.NamespaceSelector.Matches(labels.Set{"team": "a"}) {
		t.Fatalf("ClusterQueueOf with an invalid selector = %+v", got)
	}
	c := core.NewCluster()
	c.SetClusterQueue(got)
	if why := c.Inactive("cq"); why != got.Problem {
		t.Errorf("Inactive = %q, want the problem %q", why, got.Problem)
	}
	if got := ClusterQueueOf(MakeClusterQueue("open").Guarded().Obj()); got.Problem != "" || !got.NamespaceSelector.Matches(labels.Set{}) {
		t.Errorf("an empty selector must match every namespace: %+v", got)
	}
	nilSel := MakeClusterQueue("closed").NamespaceSelector(nil).Obj()
	if got := ClusterQueueOf(nilSel); got.NamespaceSelector.Matches(labels.Set{}) {
		t.Error("no selector must match no namespace")
	}
}

// A ClusterQueue or LocalQueue admits nothing until its in-use finalizer is
// on: deleted before then, it would go under the work it admitted.
func TestUnguardedQueuesAdmitNothing(t *testing.T) {
	if got := ClusterQueueOf(MakeClusterQueue("new").Obj()); !strings.Contains(got.Problem, "in-use finalizer") ||
		inactiveReason(got.Problem) != "WaitingForFinalizer" {
		t.Errorf("a ClusterQueue without the finalizer: problem %q (%s), want it inactive until guarded", got.Problem, inactiveReason(got.Problem))
	}
	if got := ClusterQueueOf(MakeClusterQueue("new").Guarded().Obj()); got.Problem != "" {
		t.Errorf("a guarded ClusterQueue: problem %q", got.Problem)
	}
	lq := MakeLocalQueue("lq", "ns", "cq").Obj()
	if got := LocalQueueOf(lq); !got.Unguarded {
		t.Errorf("a LocalQueue without the finalizer: %+v, want it unguarded", got)
	}
	lq.Finalizers = []string{InUseFinalizer}
	if got := LocalQueueOf(lq); got.Unguarded {
		t.Errorf("a guarded LocalQueue: %+v", got)
	}
	if got := FlavorOf(MakeResourceFlavor("rf").Obj()); !strings.Contains(got.Problem, "in-use finalizer") ||
		inactiveReason(got.Problem) != "WaitingForFinalizer" {
		t.Errorf("a ResourceFlavor without the finalizer: problem %q (%s), want no admission with it until guarded", got.Problem, inactiveReason(got.Problem))
	}
	if got := FlavorOf(MakeResourceFlavor("rf").Guarded().Obj()); got.Problem != "" {
		t.Errorf("a guarded ResourceFlavor: problem %q", got.Problem)
	}
}

// A ClusterQueue's budget ledger goes into its status and back without
// counting less than was spent (amounts rounded up), and the status says
// when a spent budget is free again.
func TestBudgetLedgerRoundTrip(t *testing.T) {
	spec := budget.Spec{Resource: "cpu", Hours: 1, Rolling: time.Hour, Stop: true}
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	l := spec.Charge(budget.Ledger{}, 3, t0)
	l = spec.Charge(l, 3, t0.Add(7*time.Second))
	l = spec.Charge(l, 0, t0.Add(20*time.Minute))
	cq := MakeClusterQueue("cq").Obj()
	var st berthv1.ClusterQueueStatus
	var cond metav1.Condition
	st.Budget, cond = BudgetStatusOf(spec, l, cq.Generation, t0.Add(20*time.Minute))
	meta.SetStatusCondition(&st.Conditions, cond)
	back, ok := LedgerOf(st.Budget)
	if !ok || len(back.Buckets) != len(l.Buckets) || !back.At.Equal(l.At) {
		t.Fatalf("ledger back %+v; want %+v", back, l)
	}
	now := t0.Add(20 * time.Minute)
	if spec.Spent(back, now) < spec.Spent(l, now) {
		t.Fatalf("read back, %v spent; written, %v", spec.Spent(back, now), spec.Spent(l, now))
	}
	c := meta.FindStatusCondition(st.Conditions, "BudgetSpent")
	if c == nil || c.Status != metav1.ConditionTrue || st.Budget.FreeAgainAt == nil {
		t.Fatalf("a spent budget's status: %+v, free again at %v", c, st.Budget.FreeAgainAt)
	}
}
