package queues

import (
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/budget"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/scheduler"
	"github.com/berth-dev/berth/internal/workload"
)

// ClusterQueueStatusOf is the status a ClusterQueue should have. Conditions
// keep their transition times while they do not change.
func ClusterQueueStatusOf(cq *berthv1.ClusterQueue, st scheduler.ClusterQueueStatus, now time.Time) berthv1.ClusterQueueStatus {
	out := berthv1.ClusterQueueStatus{
		PendingWorkloads:   int32(st.Pending + st.Inadmissible),
		ReservingWorkloads: int32(st.Reserving),
		AdmittedWorkloads:  int32(st.Admitted),
		FlavorsUsage:       flavorsUsage(cq.Spec.ResourceGroups, st.Usage, st.Nominal),
		Conditions:         append([]metav1.Condition(nil), cq.Status.Conditions...),
	}
	active := metav1.Condition{Type: "Active", Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "can admit workloads", ObservedGeneration: cq.Generation, LastTransitionTime: metav1.NewTime(now)}
	if st.Inactive != "" {
		active.Status, active.Reason, active.Message = metav1.ConditionFalse, inactiveReason(st.Inactive), st.Inactive
	}
	meta.SetStatusCondition(&out.Conditions, active)
	return out
}

// BudgetStatusOf is the status of a queue's budget (its ledger) and its
// BudgetSpent condition. Amounts are rounded up to the thousandth: a ledger
// taken up again never counts less than was spent.
func BudgetStatusOf(spec budget.Spec, l budget.Ledger, generation int64, now time.Time) (*berthv1.BudgetStatus, metav1.Condition) {
	bs := &berthv1.BudgetStatus{SpentResourceHours: *milliUp(spec.Spent(l, now)), LastUpdate: metav1.NewTime(l.At), InUse: *milliUp(l.InUse)}
	for _, b := range l.Buckets {
		bs.Buckets = append(bs.Buckets, berthv1.BudgetBucket{Start: metav1.NewTime(b.Start), ResourceHours: *milliUp(b.Hours)})
	}
	c := metav1.Condition{Type: "BudgetSpent", Status: metav1.ConditionFalse, Reason: "Available", ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now), Message: "within its budget of " + spec.Describe()}
	if spec.Exhausted(l, now) {
		at, _ := spec.FreeAt(l, now)
		t := metav1.NewTime(at)
		bs.FreeAgainAt = &t
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, "Spent", spec.Why(l, now)
	}
	return bs, c
}

// LedgerOf reads the ledger a ClusterQueue's status keeps; false when it
// keeps none. Amounts that cannot be spent (negative) read as nothing.
func LedgerOf(st *berthv1.BudgetStatus) (budget.Ledger, bool) {
	if st == nil || st.LastUpdate.IsZero() {
		return budget.Ledger{}, false
	}
	l := budget.Ledger{At: st.LastUpdate.Time, InUse: max(0, st.InUse.AsApproximateFloat64())}
	for _, b := range st.Buckets {
		l.Buckets = append(l.Buckets, budget.Bucket{Start: b.Start.Time, Hours: max(0, b.ResourceHours.AsApproximateFloat64())})
	}
	sort.SliceStable(l.Buckets, func(i, j int) bool { return l.Buckets[i].Start.Before(l.Buckets[j].Start) })
	return l, true
}

func milliUp(v float64) *resource.Quantity {
	return resource.NewMilliQuantity(int64(math.Ceil(min(v, math.MaxInt64/1000)*1000)), resource.DecimalSI)
}

// LocalQueueStatusOf is the status a LocalQueue should have; cqInactive says
// why its ClusterQueue cannot admit ("" when it can).
func LocalQueueStatusOf(lq *berthv1.LocalQueue, st scheduler.LocalQueueStatus, cqInactive string, now time.Time) berthv1.LocalQueueStatus {
	out := berthv1.LocalQueueStatus{
		PendingWorkloads:   int32(st.Pending),
		ReservingWorkloads: int32(st.Reserving),
		AdmittedWorkloads:  int32(st.Admitted),
		FlavorsUsage:       flavorsUsage(nil, st.Usage, nil),
		Conditions:         append([]metav1.Condition(nil), lq.Status.Conditions...),
	}
	active := metav1.Condition{Type: "Active", Status: metav1.ConditionTrue, Reason: "Ready",
		Message:            "can submit workloads to ClusterQueue " + lq.Spec.ClusterQueue,
		ObservedGeneration: lq.Generation, LastTransitionTime: metav1.NewTime(now)}
	switch {
	case lq.Spec.StopPolicy == berthv1.Hold || lq.Spec.StopPolicy == berthv1.HoldAndDrain:
		active.Status, active.Reason, active.Message = metav1.ConditionFalse, "Stopped", "stopped by its stopPolicy "+string(lq.Spec.StopPolicy)
	case cqInactive != "":
		active.Status, active.Reason, active.Message = metav1.ConditionFalse, "ClusterQueueInactive", cqInactive
	}
	meta.SetStatusCondition(&out.Conditions, active)
	return out
}

// CohortStatusOf is the status a Cohort should have: Active is False while
// its parents form a cycle (cycle lists it and the cohorts after it), which
// stops admission in every ClusterQueue below until fixed.
func CohortStatusOf(co *berthv1.Cohort, cycle []string, now time.Time) berthv1.CohortStatus {
	out := berthv1.CohortStatus{Conditions: append([]metav1.Condition(nil), co.Status.Conditions...)}
	active := metav1.Condition{Type: "Active", Status: metav1.ConditionTrue, Reason: "Ready",
		Message: "its ClusterQueues can admit", ObservedGeneration: co.Generation, LastTransitionTime: metav1.NewTime(now)}
	if len(cycle) > 0 {
		active.Status, active.Reason = metav1.ConditionFalse, "CohortCycle"
		active.Message = "its parents form a cycle (" + strings.Join(append(cycle, cycle[0]), " -> ") +
			"); no ClusterQueue below it admits anything until a parent is changed"
	}
	meta.SetStatusCondition(&out.Conditions, active)
	return out
}

func inactiveReason(msg string) string {
	switch {
	case strings.Contains(msg, "does not exist"):
		return "ClusterQueueDoesNotExist"
	case strings.Contains(msg, "stopPolicy"):
		return "Stopped"
	case strings.HasPrefix(msg, "AdmissionCheck") && strings.HasSuffix(msg, "not found"):
		return "AdmissionCheckNotFound"
	case strings.HasPrefix(msg, "AdmissionCheck"):
		return "AdmissionCheckInactive"
	case strings.Contains(msg, "has no levels"):
		return "TopologyWithoutLevels"
	case strings.Contains(msg, "Topology"):
		return "TopologyNotFound"
	case strings.HasSuffix(msg, unguarded):
		return "WaitingForFinalizer"
	case strings.Contains(msg, "ResourceFlavor"):
		return "FlavorNotFound"
	case strings.Contains(msg, "cycle"):
		return "CohortCycle"
	default:
		return "InvalidSpec"
	}
}

// flavorsUsage lists usage by flavor and resource: every flavor and covered
// resource of the groups (zeros included) and any other flavor in use.
func flavorsUsage(groups []berthv1.ResourceGroup, usage, nominal core.Usage) []berthv1.FlavorUsage {
	byFlavor := map[string]map[string]int64{}
	var order []string
	add := func(f, r string, v int64) {
		if byFlavor[f] == nil {
			byFlavor[f] = map[string]int64{}
			order = append(order, f)
		}
		byFlavor[f][r] += v
	}
	for _, rg := range groups {
		for _, f := range rg.Flavors {
			for _, r := range rg.CoveredResources {
				add(f.Name, string(r), 0)
			}
		}
	}
	extra := make([]core.FlavorResource, 0, len(usage))
	for fr := range usage {
		extra = append(extra, fr)
	}
	sort.Slice(extra, func(i, j int) bool {
		if extra[i].Flavor != extra[j].Flavor {
			return extra[i].Flavor < extra[j].Flavor
		}
		return extra[i].Resource < extra[j].Resource
	})
	for _, fr := range extra {
		add(fr.Flavor, fr.Resource, usage[fr])
	}
	out := make([]berthv1.FlavorUsage, 0, len(order))
	for _, f := range order {
		fu := berthv1.FlavorUsage{Name: f}
		var rs []string
		for r := range byFlavor[f] {
			rs = append(rs, r)
		}
		sort.Strings(rs)
		for _, r := range rs {
			v := byFlavor[f][r]
			ru := berthv1.ResourceUsage{Name: corev1.ResourceName(r), Total: workload.Quantity(r, v)}
			if nominal != nil {
				if n := nominal[core.FlavorResource{Flavor: f, Resource: r}]; v > n {
					ru.Borrowed = workload.Quantity(r, v-n)
				}
			}
			fu.Resources = append(fu.Resources, ru)
		}
		out = append(out, fu)
	}
	return out
}
