package runtimelimit

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// RunTime is how long w has run by now, over all its admissions: what
// earlier ones added up to, and the current one since it was Admitted.
func RunTime(w *berthv1.Workload, now time.Time) time.Duration {
	var ran time.Duration
	if past := w.Status.AccumulatedPastExecutionTimeSeconds; past != nil {
		ran = time.Duration(*past) * time.Second
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadAdmitted); c != nil &&
		c.Status == metav1.ConditionTrue && now.After(c.LastTransitionTime.Time) {
		ran += now.Sub(c.LastTransitionTime.Time)
	}
	return ran
}

// Exceeded is the reason a workload is stopped and deactivated once its
// run time passes spec.maximumExecutionTimeSeconds.
const Exceeded = "MaximumExecutionTimeExceeded"

// Limit is the run time, in seconds, a workload that asks for own may use
// in a ClusterQueue with policy p: its own, else p's default, and no more
// than p's maximum; nil for no limit.
func Limit(own *int32, p *berthv1.RunTimePolicy) *int32 {
	limit := own
	if p == nil {
		return limit
	}
	if limit == nil {
		limit = p.DefaultSeconds
	}
	if p.MaximumSeconds != nil && (limit == nil || *limit > *p.MaximumSeconds) {
		limit = p.MaximumSeconds
	}
	return limit
}

// OutOfRunTime says whether w has run, by now, as long as limit (seconds;
// Limit's) allows, and if not how long it has left; limited is false
// without a limit.
func OutOfRunTime(w *berthv1.Workload, limit *int32, now time.Time) (out bool, left time.Duration, limited bool) {
	if limit == nil {
		return false, 0, false
	}
	left = time.Duration(*limit)*time.Second - RunTime(w, now)
	return left <= 0, left, true
}
