// Package jobs queues batch/v1 Jobs: a mutating webhook suspends queued Jobs at
// creation, and a reconciler keeps one Workload per Job, starts the Job with
// its flavors' node selectors and tolerations once the Workload is admitted,
// suspends it again (restoring its template) when the Workload loses its
// quota, and marks the Workload finished when the Job ends. Jobs made by a
// CronJob carry the labels of its jobTemplate and are queued the same way.
package jobs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// DefaultLocalQueue is where an object asking for no queue goes, in a
// namespace where every object is queued.
const DefaultLocalQueue = integration.DefaultLocalQueue

// QueueName is the LocalQueue a Job is submitted to: its labels' (see
// integration.QueueName), else DefaultLocalQueue when manageAll, else ""
// (not berth's). A Job a JobSet made is never queued on its own: it is
// queued with its JobSet (package jobsets).
func QueueName(job *batchv1.Job, manageAll bool) string {
	if MadeByJobSet(job) {
		return ""
	}
	if q := integration.QueueName(job.Labels); q != "" {
		return q
	}
	if manageAll {
		return DefaultLocalQueue
	}
	return ""
}

// MadeByJobSet reports whether a JobSet controls the Job.
func MadeByJobSet(job *batchv1.Job) bool { return JobSetOf(job) != nil }

// JobSetOf is the Job's controller reference when it names a JobSet, else
// nil.
func JobSetOf(job *batchv1.Job) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(job)
	if ref == nil || ref.Kind != "JobSet" || !strings.HasPrefix(ref.APIVersion, "jobset.x-k8s.io/") {
		return nil
	}
	return ref
}

// WorkloadName is the name of a Job's Workload: stable for the Job, and
// different for a new Job of the same name; or the prebuilt Workload its
// label names (berthv1.PrebuiltWorkloadLabel).
func WorkloadName(job *batchv1.Job) string {
	if name, ok := Prebuilt(job); ok {
		return name
	}
	return WorkloadNameFor(job.Name, job.UID)
}

// Prebuilt names the Workload made for the Job before it existed, if any.
func Prebuilt(job *batchv1.Job) (string, bool) {
	name, ok := job.Labels[berthv1.PrebuiltWorkloadLabel]
	return name, ok && name != ""
}

// WorkloadNameFor is the name of the Workload of the Job of this name and
// UID (as a pod's owner reference gives them).
func WorkloadNameFor(name string, uid types.UID) string {
	return integration.WorkloadName("job", name, uid)
}

// Suspended reports spec.suspend.
func Suspended(job *batchv1.Job) bool { return job.Spec.Suspend != nil && *job.Spec.Suspend }

// Stopped reports whether a suspended Job's pods are gone: the Job
// controller has taken in the suspension (its Suspended condition) and
// counts none active or terminating. A Job run elsewhere (its
// spec.managedBy names another controller, a worker cluster's copy runs
// it) has no pods here: it is stopped once suspended.
func Stopped(job *batchv1.Job) bool {
	if !Suspended(job) {
		return false
	}
	if job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName {
		return true
	}
	suspended := false
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobSuspended && c.Status == corev1.ConditionTrue {
			suspended = true
		}
	}
	return suspended && job.Status.Active == 0 && (job.Status.Terminating == nil || *job.Status.Terminating == 0)
}

// Finished reports whether the Job ended, and whether it failed.
func Finished(job *batchv1.Job) (finished, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}

// PodSets describes a Job's pods for its Workload: one pod set of as many pods
// as run at once (integration.PodSetOf), with the topology request of its
// template's annotations.
func PodSets(job *batchv1.Job) []berthv1.PodSet {
	count := int32(1)
	if job.Spec.Parallelism != nil {
		count = *job.Spec.Parallelism
	}
	if job.Spec.Completions != nil && *job.Spec.Completions < count {
		count = *job.Spec.Completions
	}
	ps := integration.PodSetOf("main", max(count, 1), &job.Spec.Template.Spec)
	// A wrong request is refused by the webhook; one that got past it
	// (created before berth ran) asks for nothing, and queues whole.
	ps.TopologyRequest, _ = integration.TopologyRequestOf(job.Spec.Template.Annotations)
	if least, ok, err := MinParallelism(job); err == nil && ok && least < ps.Count && ps.TopologyRequest == nil {
		ps.MinCount = &least
	}
	return []berthv1.PodSet{ps}
}

// MinParallelism reads the least number of pods at once a Job may run with
// (berth's or Kueue's annotation), for partial admission; a value that is
// not a positive integer is an error naming the annotation.
func MinParallelism(job *batchv1.Job) (int32, bool, error) {
	for _, key := range []string{berthv1.JobMinParallelismAnnotation, berthv1.KueueJobMinParallelismAnnotation} {
		v, ok := job.Annotations[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return 0, false, fmt.Errorf("annotation %s: %q is not a positive number of pods", key, v)
		}
		return int32(n), true, nil
	}
	return 0, false, nil
}

// PodsReady reports whether every pod its Workload's admission counts is
// Ready or has succeeded, as the Job controller counts them, and says so in
// words.
func PodsReady(job *batchv1.Job, wl *berthv1.Workload) (bool, string) {
	if wl.Status.Admission == nil {
		return false, ""
	}
	var want int32
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		want += psa.Count
	}
	var ready int32
	if job.Status.Ready != nil {
		ready = *job.Status.Ready
	}
	have := ready + job.Status.Succeeded
	return have >= want, fmt.Sprintf("%d of %d pods Ready or succeeded", min(have, want), want)
}

// NameLabel on a Job's Workload names the Job (cut to 63 characters).
const NameLabel = "berth.dev/job-name"

// NewWorkload makes a Job's Workload, owned by the Job so that it goes when the
// Job goes.
func NewWorkload(job *batchv1.Job, queue string, priority *int32, priorityClass string) *berthv1.Workload {
	wl := integration.NewWorkload(job, batchv1.SchemeGroupVersion.WithKind("Job"), WorkloadName(job),
		map[string]string{NameLabel: truncate(job.Name, 63), "berth.dev/job-uid": string(job.UID)},
		berthv1.WorkloadSpec{PodSets: PodSets(job), QueueName: queue, Priority: priority, PriorityClassName: priorityClass})
	integration.FollowPods(wl, Pods(job))
	return wl
}

// Pods selects a Job's pods: the Job controller labels each with the Job's
// UID (and package guard keeps the label on).
func Pods(job *batchv1.Job) labels.Set {
	return labels.Set{batchv1.ControllerUidLabel: string(job.UID)}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// InSync reports whether a pending Workload still describes its Job.
func InSync(wl *berthv1.Workload, job *batchv1.Job, queue string, priority *int32) bool {
	return wl.Spec.QueueName == queue &&
		equality.Semantic.DeepEqual(wl.Spec.Priority, priority) &&
		equality.Semantic.DeepEqual(wl.Spec.PodSets, PodSets(job))
}

// Resized says how a running Job no longer matches what its Workload was
// admitted with, or "" when it still does. Only the quota-relevant parts
// count (pods at once, and requests): the node selector and tolerations
// differ on purpose while the flavors' settings are injected. Of a running
// Job the API lets only parallelism change; any change of the count, up or
// down, queues the Job again, as Kueue does, so the quota held is always
// what runs. A Job not started yet (its template its own) must still have
// the shape its Workload asks for; a started one runs as many pods at once
// as were admitted, fewer under partial admission (ShrinkToAdmitted).
func Resized(wl *berthv1.Workload, job *batchv1.Job) string {
	now := PodSets(job)
	if wl.Status.Admission == nil || len(now) != len(wl.Status.Admission.PodSetAssignments) || len(now) != len(wl.Spec.PodSets) {
		return "its pod sets changed"
	}
	for i, ps := range now {
		if asked := wl.Spec.PodSets[i].Count; !Injected(job) && ps.Count != asked {
			return fmt.Sprintf("%d pods at once, queued with %d", ps.Count, asked)
		}
		if admitted := wl.Status.Admission.PodSetAssignments[i].Count; Injected(job) && ps.Count != admitted {
			return fmt.Sprintf("%d pods at once, admitted with %d", ps.Count, admitted)
		}
		if !equality.Semantic.DeepEqual(ps.Requests, wl.Spec.PodSets[i].Requests) {
			return "its pods' requests changed"
		}
	}
	return ""
}

// OriginalSchedulingAnnotation holds, while a Job runs with its flavors' node
// selector and tolerations, what its pod template had before; it is put back
// when the Job is suspended again.
const OriginalSchedulingAnnotation = "berth.dev/original-scheduling"

type scheduling struct {
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
	// AddedLabels are pod template labels berth added (SteerTemplate).
	AddedLabels []string `json:"addedLabels,omitempty"`
	// Parallelism is the Job's own, and Partial what berth set it to when
	// fewer pods were admitted (ShrinkToAdmitted).
	Parallelism *int32 `json:"parallelism,omitempty"`
	Partial     int32  `json:"partial,omitempty"`
}

// Injected reports whether the Job's template carries flavors' settings.
func Injected(job *batchv1.Job) bool {
	_, ok := job.Annotations[OriginalSchedulingAnnotation]
	return ok
}

// StartTemplate adds the flavors' node labels (as node selector) and
// tolerations to the Job's pod template, keeping what it had before in an
// annotation.
func StartTemplate(job *batchv1.Job, flavors []*berthv1.ResourceFlavor) error {
	spec := &job.Spec.Template.Spec
	if !Injected(job) {
		data, err := json.Marshal(scheduling{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations})
		if err != nil {
			return err
		}
		if job.Annotations == nil {
			job.Annotations = map[string]string{}
		}
		job.Annotations[OriginalSchedulingAnnotation] = string(data)
	}
	integration.InjectFlavors(spec, flavors)
	return nil
}

// RestoreTemplate puts back the node selector and tolerations the pod
// template had before StartTemplate. It reports whether it changed the Job.
// A damaged annotation is an error naming it; the Job is left as it is.
func RestoreTemplate(job *batchv1.Job) (bool, error) {
	data, ok := job.Annotations[OriginalSchedulingAnnotation]
	if !ok {
		return false, nil
	}
	var orig scheduling
	if err := json.Unmarshal([]byte(data), &orig); err != nil {
		return false, fmt.Errorf("annotation %s of Job %s/%s is not valid: %w", OriginalSchedulingAnnotation, job.Namespace, job.Name, err)
	}
	job.Spec.Template.Spec.NodeSelector = orig.NodeSelector
	job.Spec.Template.Spec.Tolerations = orig.Tolerations
	if orig.Partial > 0 && job.Spec.Parallelism != nil && *job.Spec.Parallelism == orig.Partial {
		// Its own again, unless someone changed it since: theirs wins.
		job.Spec.Parallelism = orig.Parallelism
	}
	for _, l := range orig.AddedLabels {
		delete(job.Spec.Template.Labels, l)
	}
	delete(job.Annotations, OriginalSchedulingAnnotation)
	return true, nil
}

// ShrinkToAdmitted runs a Job admitted with fewer pods than it asked for
// (partial admission) with that many at once: its parallelism is set to
// admitted, and its own kept for RestoreTemplate. StartTemplate must have
// run.
func ShrinkToAdmitted(job *batchv1.Job, admitted int32) error {
	count := PodSets(job)[0].Count
	if admitted <= 0 || admitted >= count {
		return nil
	}
	var orig scheduling
	if err := json.Unmarshal([]byte(job.Annotations[OriginalSchedulingAnnotation]), &orig); err != nil {
		return fmt.Errorf("annotation %s of Job %s/%s is not valid: %w", OriginalSchedulingAnnotation, job.Namespace, job.Name, err)
	}
	orig.Parallelism, orig.Partial = job.Spec.Parallelism, admitted
	data, err := json.Marshal(orig)
	if err != nil {
		return err
	}
	job.Annotations[OriginalSchedulingAnnotation] = string(data)
	job.Spec.Parallelism = &admitted
	return nil
}

// SteerTemplate labels the pod template of a Job admitted with a topology
// assignment though it asked for none, as Hold labels one that asks: its
// pods are then gated at creation and given domains one by one (package
// placement). What it adds is recorded for RestoreTemplate; StartTemplate
// must have run.
func SteerTemplate(job *batchv1.Job, queue string) error {
	var orig scheduling
	if err := json.Unmarshal([]byte(job.Annotations[OriginalSchedulingAnnotation]), &orig); err != nil {
		return fmt.Errorf("annotation %s of Job %s/%s is not valid: %w", OriginalSchedulingAnnotation, job.Namespace, job.Name, err)
	}
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	l := job.Spec.Template.Labels
	for k, v := range map[string]string{berthv1.TopologyPlacedLabel: "true", berthv1.QueueNameLabel: queue} {
		if _, ok := l[k]; ok {
			continue
		}
		l[k] = v
		orig.AddedLabels = append(orig.AddedLabels, k)
	}
	slices.Sort(orig.AddedLabels)
	data, err := json.Marshal(orig)
	if err != nil {
		return err
	}
	job.Annotations[OriginalSchedulingAnnotation] = string(data)
	return nil
}

// Shrunk reports how many pods at once a running Job now asks for when it
// asks for fewer than it was admitted with and nothing else changed: its
// quota can shrink in place (workload.ShrinkAdmission) instead of the Job
// being stopped and queued again. Not for a Job of several pod sets, one
// admitted with fewer pods than it asked (partial admission), one placed
// by topology, or one that runs on a worker cluster (its copy there would
// not shrink): those are queued again whole (Resized).
func Shrunk(wl *berthv1.Workload, job *batchv1.Job) (int32, bool) {
	now, a := PodSets(job), wl.Status.Admission
	if a == nil || wl.Status.ClusterName != "" || len(now) != 1 || len(a.PodSetAssignments) != 1 || len(wl.Spec.PodSets) != 1 {
		return 0, false
	}
	psa := a.PodSetAssignments[0]
	if psa.TopologyAssignment != nil || psa.Count != wl.Spec.PodSets[0].Count ||
		!equality.Semantic.DeepEqual(now[0].Requests, wl.Spec.PodSets[0].Requests) {
		return 0, false
	}
	return now[0].Count, now[0].Count >= 1 && now[0].Count < psa.Count
}
