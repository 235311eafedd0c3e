package queues

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// A budget's whenSpent reaches the core as it says; a stored LowerPriority
// without its priority (the API refuses it, an older object may have it)
// is the queue's problem, not a budget lowering to some default.
func TestBudgetOf(t *testing.T) {
	b := &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("10"), Window: berthv1.CalendarMonthBudget}
	for _, tc := range []struct {
		when    berthv1.BudgetAction
		prio    *int32
		stop    bool
		lowerTo *int32
		problem string
	}{
		{when: berthv1.NoBorrowing},
		{when: berthv1.StopAdmitting, stop: true},
		{when: berthv1.LowerPriority, prio: ptr(int32(-3)), lowerTo: ptr(int32(-3))},
		{when: berthv1.LowerPriority, problem: "spec.budget.spentPriority"},
	} {
		b.WhenSpent, b.SpentPriority = tc.when, tc.prio
		spec, problem := BudgetOf(b)
		if tc.problem != "" {
			if spec != nil || !strings.Contains(problem, tc.problem) {
				t.Errorf("%s without a priority: %+v %q", tc.when, spec, problem)
			}
			continue
		}
		if problem != "" || spec.Stop != tc.stop || (spec.LowerTo == nil) != (tc.lowerTo == nil) ||
			(spec.LowerTo != nil && *spec.LowerTo != *tc.lowerTo) {
			t.Errorf("%s: %+v %q", tc.when, spec, problem)
		}
	}
}

func ptr[T any](v T) *T { return &v }
