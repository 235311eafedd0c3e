package multicluster

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
)

const (
	// OriginLabel marks the copies a manager made on a worker.
	OriginLabel = berthv1.MultiClusterOriginLabel
	// WorkloadAnnotation on a copy names the manager's Workload.
	WorkloadAnnotation = berthv1.MultiClusterWorkloadAnnotation
	// ManagedBy is the spec.managedBy of a manager's Job or JobSet that
	// runs on a worker: the manager's Job (or JobSet) controller leaves it
	// alone, and berth copies its status from the worker.
	ManagedBy = jobs.ManagedBy
)

// Labels the Job controller puts on a Job's selector and pod template;
// a copy must go without them, since they carry the manager Job's UID.
var jobControllerLabels = []string{
	batchv1.ControllerUidLabel, batchv1.JobNameLabel, "controller-uid", "job-name",
}

// RemoteJob is the Job made on the worker that admitted the workload's
// copy: the manager's Job with its name, namespace, labels (the queue label
// among them) and spec, suspended, left to the worker's own Job controller,
// marked with origin, and using the copy (berthv1.PrebuiltWorkloadLabel, on
// its pods too). The template is the Job's own, without the manager's
// flavors.
func RemoteJob(job *batchv1.Job, origin, workloadName string) *batchv1.Job {
	c := job.DeepCopy()
	_, _ = jobs.RestoreTemplate(c) // a damaged record leaves the template as it is
	out := &batchv1.Job{ObjectMeta: copyMeta(c, origin, workloadName), Spec: c.Spec}
	yes := true
	out.Spec.Suspend = &yes
	out.Spec.ManagedBy = nil
	out.Spec.Selector = nil
	out.Spec.ManualSelector = nil
	for _, l := range jobControllerLabels {
		delete(out.Spec.Template.Labels, l)
	}
	if out.Spec.Template.Labels == nil {
		out.Spec.Template.Labels = map[string]string{}
	}
	out.Spec.Template.Labels[berthv1.PrebuiltWorkloadLabel] = workloadName
	return out
}

// RemoteJobSet is the JobSet made on the worker that admitted the
// workload's copy, as RemoteJob is for a Job: the manager's JobSet with its
// name, namespace, labels and spec, suspended, left to the worker's JobSet
// controller (no managedBy), marked with origin, and using the copy
// (berthv1.PrebuiltWorkloadLabel, on every replicated Job's pods too, which
// is how a topology-placed pod finds it). Its templates are its own,
// without the manager's flavors.
func RemoteJobSet(js *jobsetv1.JobSet, origin, workloadName string) *jobsetv1.JobSet {
	c := js.DeepCopy()
	_, _ = jobsets.Restore(c) // a damaged record leaves the templates as they are
	out := &jobsetv1.JobSet{ObjectMeta: copyMeta(c, origin, workloadName), Spec: c.Spec}
	yes := true
	out.Spec.Suspend = &yes
	out.Spec.ManagedBy = nil
	for i := range out.Spec.ReplicatedJobs {
		t := &out.Spec.ReplicatedJobs[i].Template.Spec.Template
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[berthv1.PrebuiltWorkloadLabel] = workloadName
	}
	return out
}

// JobSetStatus is the status the manager's JobSet should have while its
// copy runs on a worker: the copy's. It reports whether that differs from
// what the manager's JobSet has.
func JobSetStatus(manager, remote *jobsetv1.JobSet) (jobsetv1.JobSetStatus, bool) {
	want := *remote.Status.DeepCopy()
	return want, !equality.Semantic.DeepEqual(manager.Status, want)
}

// copyMeta is the metadata of a copy of obj made by origin for the
// manager's Workload workloadName: obj's name, namespace, labels and
// annotations, marked with origin and naming the Workload to use.
func copyMeta(obj metav1.Object, origin, workloadName string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(),
		Labels: maps.Clone(obj.GetLabels()), Annotations: maps.Clone(obj.GetAnnotations())}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Labels[OriginLabel] = origin
	m.Labels[berthv1.PrebuiltWorkloadLabel] = workloadName
	m.Annotations[WorkloadAnnotation] = workloadName
	return m
}

// RemoteWorkload is the copy of the manager's Workload made on every
// worker: same name, namespace and what it asks for, marked with origin.
// Each worker queues it as its own; the Job (or JobSet) follows only to the
// one that admits it first, which adopts it (integration.Adopt).
func RemoteWorkload(wl *berthv1.Workload, origin string) *berthv1.Workload {
	return &berthv1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: wl.Name, Namespace: wl.Namespace,
			Labels:      map[string]string{OriginLabel: origin},
			Annotations: map[string]string{WorkloadAnnotation: wl.Name}},
		Spec: berthv1.WorkloadSpec{PodSets: wl.Spec.PodSets, QueueName: wl.Spec.QueueName,
			Priority: wl.Spec.Priority, PriorityClassName: wl.Spec.PriorityClassName},
	}
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
