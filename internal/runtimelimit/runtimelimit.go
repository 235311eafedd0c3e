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

// OutOfRunTime says whether w has run, by now, as long as its maximum
// allows, and if not how long it has left; limited is false without one.
func OutOfRunTime(w *berthv1.Workload, now time.Time) (out bool, left time.Duration, limited bool) {
	limit := w.Spec.MaximumExecutionTimeSeconds
	if limit == nil {
		return false, 0, false
	}
	left = time.Duration(*limit)*time.Second - RunTime(w, now)
	return left <= 0, left, true
}
