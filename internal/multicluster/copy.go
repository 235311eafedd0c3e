package multicluster

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
)

const (
	// OriginLabel marks the copies a manager made on a worker.
	OriginLabel = berthv1.MultiClusterOriginLabel
	// WorkloadAnnotation on a copy names the manager's Workload.
	WorkloadAnnotation = berthv1.MultiClusterWorkloadAnnotation
	// ManagedBy is the spec.managedBy of a manager's Job that runs on a
	// worker: the manager's Job controller leaves such a Job alone, and berth
	// copies its status from the worker.
	ManagedBy = jobs.ManagedBy
)

// Labels the Job controller puts on a Job's selector and pod template;
// a copy must go without them, since they carry the manager Job's UID.
var jobControllerLabels = []string{
	batchv1.ControllerUidLabel, batchv1.JobNameLabel, "controller-uid", "job-name",
}

// RemoteJob is the copy of the manager's Job made on a worker: same name,
// namespace, labels (the queue label among them) and spec, suspended, left to
// the worker's own Job controller, marked with origin and the manager's
// Workload. The template is the Job's own, without the manager's flavors.
func RemoteJob(job *batchv1.Job, origin, workloadName string) *batchv1.Job {
	c := job.DeepCopy()
	_, _ = jobs.RestoreTemplate(c) // a damaged record leaves the template as it is
	out := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: job.Name, Namespace: job.Namespace,
			Labels:      maps.Clone(c.Labels),
			Annotations: maps.Clone(c.Annotations),
		},
		Spec: c.Spec,
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Labels[OriginLabel] = origin
	out.Annotations[WorkloadAnnotation] = workloadName
	yes := true
	out.Spec.Suspend = &yes
	out.Spec.ManagedBy = nil
	out.Spec.Selector = nil
	out.Spec.ManualSelector = nil
	for _, l := range jobControllerLabels {
		delete(out.Spec.Template.Labels, l)
	}
	return out
}

// RemoteWorkload is the copy of the manager's Workload made on a worker
// for the Job copy remote (created, so with its UID): named as the
// worker's Job integration names it, owned by the copy, with the spec the
// manager queued.
func RemoteWorkload(wl *berthv1.Workload, remote *batchv1.Job) *berthv1.Workload {
	out := jobs.NewWorkload(remote, wl.Spec.QueueName, wl.Spec.Priority, wl.Spec.PriorityClassName)
	out.Spec.PodSets = wl.Spec.PodSets
	return out
}

// IsCopy reports whether obj is a copy made by origin for the manager's
// Workload named workloadName.
func IsCopy(obj metav1.Object, origin, workloadName string) bool {
	return obj.GetLabels()[OriginLabel] == origin && obj.GetAnnotations()[WorkloadAnnotation] == workloadName
}

// JobStatus is the status the manager's Job should have while its copy runs
// on a worker: the copy's. It reports whether that differs from what the
// manager's Job has.
func JobStatus(manager, remote *batchv1.Job) (batchv1.JobStatus, bool) {
	want := *remote.Status.DeepCopy()
	return want, !equality.Semantic.DeepEqual(manager.Status, want)
}

// StoppedStatus clears what a Job controller clears when a Job is
// suspended (start time, pods running), for a manager's Job taken back from
// a worker: berth restores its template only once the start time is gone.
// It reports whether anything changed.
func StoppedStatus(s *batchv1.JobStatus) bool {
	if s.StartTime == nil && s.Active == 0 && (s.Ready == nil || *s.Ready == 0) {
		return false
	}
	s.StartTime, s.Active, s.Ready = nil, 0, nil
	return true
}
