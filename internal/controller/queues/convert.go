package queues

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/admissionfairsharing"
	"github.com/berth-dev/berth/internal/budget"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
)

// ClusterQueueOf translates a ClusterQueue for the core. A stored object the
// core cannot use (an invalid namespaceSelector) becomes an inactive queue with
// the problem as the reason, never an error that stops the controller.
func ClusterQueueOf(cq *berthv1.ClusterQueue) core.ClusterQueue {
	out := core.ClusterQueue{
		Name:            cq.Name,
		Cohort:          cq.Spec.Cohort,
		Strategy:        core.BestEffortFIFO,
		ResourceGroups:  groupsOf(cq.Spec.ResourceGroups),
		Stopped:         cq.Spec.StopPolicy == berthv1.Hold || cq.Spec.StopPolicy == berthv1.HoldAndDrain,
		AdmissionChecks: cq.Spec.AdmissionChecks,
	}
	if cq.Spec.QueueingStrategy == berthv1.StrictFIFO {
		out.Strategy = core.StrictFIFO
	}
	if ff := cq.Spec.FlavorFungibility; ff != nil {
		out.TryNextFlavorWhenCanBorrow = ff.WhenCanBorrow == "TryNextFlavor"
		out.PreemptWhenCanPreempt = ff.WhenCanPreempt == "Preempt"
	}
	if p := cq.Spec.Preemption; p != nil {
		out.Preemption = core.Preemption{
			WithinClusterQueue:  core.PreemptionPolicy(p.WithinClusterQueue),
			ReclaimWithinCohort: core.PreemptionPolicy(p.ReclaimWithinCohort),
		}
		if b := p.BorrowWithinCohort; b != nil {
			out.Preemption.BorrowWithinCohort = core.PreemptionPolicy(b.Policy)
			out.Preemption.MaxPriorityThreshold = b.MaxPriorityThreshold
		}
	}
	out.FairWeight = weightOf(cq.Spec.FairSharing)
	out.AdmissionFairSharing = cq.Spec.AdmissionScope != nil && cq.Spec.AdmissionScope.AdmissionMode == berthv1.UsageBasedAdmissionFairSharing
	if a := cq.Spec.PriorityAging; a != nil {
		out.Aging = &core.Aging{Step: a.Step, Interval: a.Interval.Duration, Cap: a.Cap}
	}
	budgetSpec, budgetProblem := BudgetOf(cq.Spec.Budget)
	out.Budget = budgetSpec
	sel, err := metav1.LabelSelectorAsSelector(cq.Spec.NamespaceSelector)
	switch {
	case cq.DeletionTimestamp != nil:
		// It admits nothing new while admitted work holds it (InUseFinalizer).
		out.Problem = fmt.Sprintf("ClusterQueue %s is being deleted", cq.Name)
	case !out.Stopped && !controllerutil.ContainsFinalizer(cq, InUseFinalizer):
		// Deleted before the finalizer is on, it would go under work it
		// admitted. (A stopped queue admits nothing anyway, and says so.)
		out.Problem = unguarded
	}
	if err != nil {
		out.NamespaceSelector = labels.Nothing()
		out.Problem = fmt.Sprintf("spec.namespaceSelector is invalid: %v", err)
	} else {
		out.NamespaceSelector = sel
	}
	if budgetProblem != "" {
		out.Problem = budgetProblem
	}
	return out
}

// BudgetOf translates a ClusterQueue's budget; a stored one berth cannot
// count by (a zero or negative amount, a window without its period) is
// the problem that keeps the queue inactive until it is fixed.
func BudgetOf(b *berthv1.Budget) (*budget.Spec, string) {
	if b == nil {
		return nil, ""
	}
	out := &budget.Spec{Resource: string(b.Resource), Hours: b.ResourceHours.AsApproximateFloat64(), Stop: b.WhenSpent == berthv1.StopAdmitting}
	if b.WhenSpent == berthv1.LowerPriority {
		out.LowerTo = b.SpentPriority
	}
	switch {
	case b.WhenSpent == berthv1.LowerPriority && b.SpentPriority == nil:
		return nil, "spec.budget.spentPriority: whenSpent: LowerPriority needs the priority to admit at"
	case out.Hours <= 0:
		return nil, fmt.Sprintf("spec.budget.resourceHours %s: must be positive", b.ResourceHours.String())
	case b.Window == berthv1.RollingBudget && (b.Period == nil || b.Period.Duration < time.Minute):
		return nil, "spec.budget.period: a Rolling window needs a period of at least 1m"
	case b.Window == berthv1.RollingBudget:
		out.Rolling = b.Period.Duration
	}
	return out, ""
}

// CohortOf translates a Cohort for the core.
func CohortOf(co *berthv1.Cohort) core.Cohort {
	return core.Cohort{Name: co.Name, Parent: co.Spec.Parent, ResourceGroups: groupsOf(co.Spec.ResourceGroups),
		FairWeight: weightOf(co.Spec.FairSharing)}
}

func weightOf(fs *berthv1.FairSharing) *int64 {
	if fs == nil || fs.Weight == nil {
		return nil
	}
	v := core.Milli(*fs.Weight)
	return &v
}

// FlavorOf translates a ResourceFlavor for the core.
func FlavorOf(rf *berthv1.ResourceFlavor) core.Flavor {
	f := core.Flavor{Name: rf.Name, NodeLabels: rf.Spec.NodeLabels, NodeTaints: rf.Spec.NodeTaints,
		Tolerations: rf.Spec.Tolerations}
	if rf.Spec.TopologyName != nil {
		f.TopologyName = *rf.Spec.TopologyName
	}
	if rf.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(rf, InUseFinalizer) {
		// As for queues: deleted before the finalizer is on, it would go
		// from under the work admitted with it.
		f.Problem = fmt.Sprintf("ResourceFlavor %s is %s", rf.Name, unguarded)
	}
	return f
}

// LocalQueueOf translates a LocalQueue for the queue manager.
func LocalQueueOf(lq *berthv1.LocalQueue) queue.LocalQueue {
	return queue.LocalQueue{Key: lq.Namespace + "/" + lq.Name, ClusterQueue: lq.Spec.ClusterQueue,
		// Being deleted, it takes nothing new (InUseFinalizer).
		Stopped: lq.Spec.StopPolicy == berthv1.Hold || lq.Spec.StopPolicy == berthv1.HoldAndDrain ||
			lq.DeletionTimestamp != nil,
		Deleting:  lq.DeletionTimestamp != nil,
		Unguarded: lq.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(lq, InUseFinalizer)}
}

// WeightOf is a LocalQueue's admission fair-sharing weight: its
// spec.fairSharing.weight, 1 when unset.
func WeightOf(lq *berthv1.LocalQueue) float64 {
	if fs := lq.Spec.FairSharing; fs != nil && fs.Weight != nil {
		return fs.Weight.AsApproximateFloat64()
	}
	return 1
}

// ShareOf reads what a LocalQueue's status says it consumed; false when it
// says nothing. An amount that cannot be a usage (negative) is left out.
func ShareOf(lq *berthv1.LocalQueue) (admissionfairsharing.Share, bool) {
	fs := lq.Status.FairSharing
	if fs == nil || fs.AdmissionFairSharingStatus == nil || fs.AdmissionFairSharingStatus.LastUpdate.IsZero() {
		return admissionfairsharing.Share{}, false
	}
	st := fs.AdmissionFairSharingStatus
	out := admissionfairsharing.Share{Consumed: admissionfairsharing.Usage{}, At: st.LastUpdate.Time}
	for r, q := range st.ConsumedResources {
		if v := q.AsApproximateFloat64(); v > 0 {
			out.Consumed[string(r)] = v
		}
	}
	return out, true
}

// ShareStatusOf is what a LocalQueue's status says of its consumption and
// score (unset when infinite: weight 0). Amounts are kept to the thousandth
// (milli-units), as quotas are, rounded up as a budget's are.
func ShareStatusOf(sh admissionfairsharing.Share, score float64) *berthv1.LocalQueueFairSharingStatus {
	st := &berthv1.AdmissionFairSharingStatus{ConsumedResources: corev1.ResourceList{}, LastUpdate: metav1.NewTime(sh.At)}
	for _, r := range slices.Sorted(maps.Keys(sh.Consumed)) {
		st.ConsumedResources[corev1.ResourceName(r)] = *milliUp(sh.Consumed[r])
	}
	if !math.IsInf(score, 0) && !math.IsNaN(score) {
		st.WeightedUsage = milliUp(score)
	}
	return &berthv1.LocalQueueFairSharingStatus{AdmissionFairSharingStatus: st}
}

// ScoreOf is the score a LocalQueue's status says orders its workloads in
// a ClusterQueue that orders by usage: 0 before any sample, +Inf for
// weight 0.
func ScoreOf(lq *berthv1.LocalQueue) float64 {
	if WeightOf(lq) <= 0 {
		return math.Inf(1)
	}
	if fs := lq.Status.FairSharing; fs != nil && fs.AdmissionFairSharingStatus != nil && fs.AdmissionFairSharingStatus.WeightedUsage != nil {
		return fs.AdmissionFairSharingStatus.WeightedUsage.AsApproximateFloat64()
	}
	return 0
}

// unguarded is why a ClusterQueue admits nothing yet: berth admits through
// a queue, or with a flavor, only once its in-use finalizer is on (added as
// soon as it is seen), so that no deletion removes it under work it admitted.
const unguarded = "waiting for its in-use finalizer (" + InUseFinalizer + "), added by berth when it first sees it"

func groupsOf(groups []berthv1.ResourceGroup) []core.ResourceGroup {
	out := make([]core.ResourceGroup, 0, len(groups))
	for _, rg := range groups {
		g := core.ResourceGroup{}
		for _, r := range rg.CoveredResources {
			g.Resources = append(g.Resources, string(r))
		}
		for _, f := range rg.Flavors {
			fq := core.FlavorQuotas{Name: f.Name, Quotas: map[string]core.Quota{}}
			for _, r := range f.Resources {
				q := core.Quota{Nominal: core.Milli(r.NominalQuota)}
				if r.BorrowingLimit != nil {
					v := core.Milli(*r.BorrowingLimit)
					q.BorrowingLimit = &v
				}
				if r.LendingLimit != nil {
					v := core.Milli(*r.LendingLimit)
					q.LendingLimit = &v
				}
				fq.Quotas[string(r.Name)] = q
			}
			g.Flavors = append(g.Flavors, fq)
		}
		out = append(out, g)
	}
	return out
}
