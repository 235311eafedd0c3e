package translate

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// RequeuedAnnotation marks a virtual Job the syncer suspended because the
// host's berth evicted its Pods (preempted them, say): the Job controller
// then stops them without counting failures, and the syncer resumes the Job
// once they are gone, so it queues again on the host, whole, rather than
// using up its backoffLimit. Its value says why.
const RequeuedAnnotation = "berth.dev/vcluster-requeued"

// EvictedByHost reports whether the host's berth is stopping host Pod h
// because its Workload lost its quota (the DisruptionTarget condition it
// sets before it deletes the Pod), and why.
func EvictedByHost(h *corev1.Pod) (string, bool) {
	for _, c := range h.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == berthv1.EvictedByBerth {
			return c.Message, true
		}
	}
	return "", false
}

// SuspendForHost suspends the virtual Job whose Pods the host evicts; false
// when it is suspended already (by the syncer, or by its tenant, whose
// suspension is left alone).
func SuspendForHost(job *batchv1.Job, why string) bool {
	if suspended(job) {
		return false
	}
	yes := true
	job.Spec.Suspend = &yes
	metav1.SetMetaDataAnnotation(&job.ObjectMeta, RequeuedAnnotation, why)
	return true
}

// ResumeAfterHost resumes a virtual Job the syncer suspended once none of
// its Pods is left, active or terminating; false while some are, or when
// the syncer did not suspend it.
func ResumeAfterHost(job *batchv1.Job) bool {
	if _, ok := job.Annotations[RequeuedAnnotation]; !ok || !suspended(job) {
		return false
	}
	if job.Status.Active > 0 || job.Status.Terminating != nil && *job.Status.Terminating > 0 {
		return false
	}
	no := false
	job.Spec.Suspend = &no
	delete(job.Annotations, RequeuedAnnotation)
	return true
}

func suspended(job *batchv1.Job) bool { return job.Spec.Suspend != nil && *job.Spec.Suspend }
