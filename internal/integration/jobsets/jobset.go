package jobsets

import (
	"encoding/json"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
)

// GVK is the kind queued.
var GVK = jobsetv1.GroupVersion.WithKind("JobSet")

// maxPodSets is how many pod sets a Workload may have (its API's limit):
// one per replicated Job.
const maxPodSets = 8

// QueueName is the LocalQueue a JobSet is submitted to, from its labels
// (berth's or Kueue's), "" when none, or when it is queued with its owner
// (QueuingOwner).
func QueueName(js *jobsetv1.JobSet) string {
	if QueuingOwner(js) != nil {
		return ""
	}
	return integration.QueueName(js.Labels)
}

// QueuingOwner is js's controller reference when its controller is of a
// kind queued in its stead, else nil: a Kubeflow TrainJob, whose Workload
// asks for the pods of the JobSet Trainer makes for it.
func QueuingOwner(js *jobsetv1.JobSet) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(js)
	if ref == nil || ref.Kind != "TrainJob" || !strings.HasPrefix(ref.APIVersion, "trainer.kubeflow.org/") {
		return nil
	}
	return ref
}

// WorkloadName is the name of a JobSet's Workload: stable for the JobSet,
// different for a new JobSet of the same name; or the prebuilt Workload
// its label names (berthv1.PrebuiltWorkloadLabel), as a JobSet a manager
// cluster made on this worker has.
func WorkloadName(js *jobsetv1.JobSet) string {
	if name, ok := Prebuilt(js); ok {
		return name
	}
	return integration.WorkloadName("jobset", js.Name, js.UID)
}

// Prebuilt names the Workload made for the JobSet before it existed, if any.
func Prebuilt(js *jobsetv1.JobSet) (string, bool) {
	name, ok := js.Labels[berthv1.PrebuiltWorkloadLabel]
	return name, ok && name != ""
}

// PrebuiltMismatch says why a JobSet may not use the prebuilt Workload
// its label names, or "": the Workload must ask for the JobSet's own pod
// sets, or the label would let a JobSet run under an admission made for
// less than it runs.
func PrebuiltMismatch(wl *berthv1.Workload, js *jobsetv1.JobSet) string {
	if equality.Semantic.DeepEqual(wl.Spec.PodSets, PodSets(js)) {
		return ""
	}
	return fmt.Sprintf("JobSet %s: metadata.labels[%s] names Workload %s, whose pod sets are not this JobSet's; it is not used",
		js.Name, berthv1.PrebuiltWorkloadLabel, wl.Name)
}

// ManagedBy is the spec.managedBy of a JobSet that runs on a worker
// cluster: this cluster's JobSet controller leaves it alone.
const ManagedBy = jobs.ManagedBy

// Suspended reports spec.suspend.
func Suspended(js *jobsetv1.JobSet) bool { return js.Spec.Suspend != nil && *js.Spec.Suspend }

// Finished reports whether the JobSet completed or failed, and which.
func Finished(js *jobsetv1.JobSet) (finished, failed bool) {
	if meta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1.JobSetCompleted)) {
		return true, false
	}
	if meta.IsStatusConditionTrue(js.Status.Conditions, string(jobsetv1.JobSetFailed)) {
		return true, true
	}
	return false, false
}

// podsAtOnce is how many pods one Job of a replicated Job runs at once.
func podsAtOnce(spec *batchv1.JobSpec) int32 {
	n := int32(1)
	if spec.Parallelism != nil {
		n = *spec.Parallelism
	}
	if spec.Completions != nil && *spec.Completions < n {
		n = *spec.Completions
	}
	return max(n, 1)
}

// PodSets describes a JobSet's pods for its Workload: one pod set per
// replicated Job, named after it, of its replicas times the pods each of
// its Jobs runs at once, with the topology request of its pod template's
// annotations.
func PodSets(js *jobsetv1.JobSet) []berthv1.PodSet {
	out := make([]berthv1.PodSet, 0, len(js.Spec.ReplicatedJobs))
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		ps := integration.PodSetOf(rj.Name, rj.Replicas*podsAtOnce(&rj.Template.Spec), &rj.Template.Spec.Template.Spec)
		// A wrong request is refused by the webhook; one that got past it
		// asks for nothing.
		ps.TopologyRequest, _ = integration.TopologyRequestOf(rj.Template.Spec.Template.Annotations)
		out = append(out, ps)
	}
	return out
}

// InSync reports whether a pending Workload still describes its JobSet.
func InSync(wl *berthv1.Workload, js *jobsetv1.JobSet, queue string, priority *int32) bool {
	return wl.Spec.QueueName == queue &&
		equality.Semantic.DeepEqual(wl.Spec.Priority, priority) &&
		equality.Semantic.DeepEqual(wl.Spec.PodSets, PodSets(js))
}

// PodsReady reports whether every Job of the JobSet's admission has all
// its pods Ready (or succeeded) at once, as the JobSet's status counts them
// per replicated Job, and says how many do.
func PodsReady(js *jobsetv1.JobSet) (bool, string) {
	var want, have int32
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		want += rj.Replicas
		for _, s := range js.Status.ReplicatedJobsStatus {
			if s.Name == rj.Name {
				have += min(s.Ready+s.Succeeded, rj.Replicas)
			}
		}
	}
	return have >= want, fmt.Sprintf("%d of %d Jobs with all their pods Ready or succeeded", have, want)
}

// PriorityClass is the pod priority class a JobSet's Workload falls back
// on: its first replicated Job's.
func PriorityClass(js *jobsetv1.JobSet) string {
	if len(js.Spec.ReplicatedJobs) == 0 {
		return ""
	}
	return js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName
}

// NameLabel on a JobSet's Workload names the JobSet (cut to 63 characters).
const NameLabel = "berth.dev/jobset-name"

// NewWorkload makes a JobSet's Workload, owned by the JobSet.
func NewWorkload(js *jobsetv1.JobSet, queue string, priority *int32, priorityClass string) *berthv1.Workload {
	name := js.Name
	if len(name) > 63 {
		name = name[:63]
	}
	wl := integration.NewWorkload(js, GVK, WorkloadName(js),
		map[string]string{NameLabel: name, "berth.dev/jobset-uid": string(js.UID)},
		berthv1.WorkloadSpec{PodSets: PodSets(js), QueueName: queue, Priority: priority, PriorityClassName: priorityClass})
	integration.FollowPods(wl, Pods(js))
	return wl
}

// Pods selects the pods of a JobSet's Jobs: the JobSet controller labels
// each Job and its pods with the JobSet's UID (and package guard keeps the
// label on).
func Pods(js *jobsetv1.JobSet) labels.Set {
	return labels.Set{UIDLabel: string(js.UID)}
}

// Refuse says why a JobSet cannot be queued as it is, naming the field, or
// "". A queue label on a replicated Job's template (or its pods', unless it
// is the JobSet's own, as Hold puts there) would queue those Jobs (or pods)
// one by one, beside the JobSet: berth queues a JobSet whole, by the label
// on the JobSet itself. A queued one must also ask for pods berth can
// queue (RefuseShape).
func Refuse(js *jobsetv1.JobSet) string {
	queue := QueueName(js)
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		at := fmt.Sprintf("spec.replicatedJobs[%d] (%s)", i, rj.Name)
		for _, where := range []struct {
			field  string
			labels map[string]string
			own    bool // may carry the JobSet's own queue
		}{{"template.metadata.labels", rj.Template.Labels, false}, {"template.spec.template.metadata.labels", rj.Template.Spec.Template.Labels, true}} {
			if q := integration.QueueName(where.labels); q != "" && !(where.own && q == queue) {
				return fmt.Sprintf("JobSet %s: %s.%s asks for LocalQueue %s; a JobSet is queued whole by the queue label on the JobSet itself "+
					"(metadata.labels): move the label there", js.Name, at, where.field, q)
			}
		}
	}
	if queue == "" {
		return ""
	}
	return RefuseShape(js)
}

// RefuseShape says why berth cannot queue the pods a JobSet asks for,
// naming the field, or "": wrong topology annotations, and what berth does
// not do for JobSets yet, refused rather than ignored: partial admission,
// more replicated Jobs than a Workload holds.
func RefuseShape(js *jobsetv1.JobSet) string {
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		at := fmt.Sprintf("spec.replicatedJobs[%d] (%s)", i, rj.Name)
		if _, err := integration.TopologyRequestOf(rj.Template.Spec.Template.Annotations); err != nil {
			return fmt.Sprintf("JobSet %s: %s.template.spec.template.metadata.annotations: %v", js.Name, at, err)
		}
		for _, key := range []string{berthv1.JobMinParallelismAnnotation, berthv1.KueueJobMinParallelismAnnotation} {
			if _, ok := rj.Template.Annotations[key]; ok {
				return fmt.Sprintf("JobSet %s: %s.template.metadata.annotations: partial admission (%s) of JobSets is not supported yet", js.Name, at, key)
			}
		}
	}
	if n := len(js.Spec.ReplicatedJobs); n > maxPodSets {
		return fmt.Sprintf("JobSet %s: spec.replicatedJobs has %d entries; berth queues at most %d replicated Jobs in one JobSet", js.Name, n, maxPodSets)
	}
	return ""
}

// OriginalSchedulingAnnotation holds, while a JobSet runs with its flavors'
// node selectors and tolerations, what each replicated Job's pod template
// had before, by replicated Job; it is put back when the JobSet is
// suspended again.
const OriginalSchedulingAnnotation = jobs.OriginalSchedulingAnnotation

type scheduling struct {
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

// Injected reports whether the JobSet's templates carry flavors' settings.
func Injected(js *jobsetv1.JobSet) bool {
	_, ok := js.Annotations[OriginalSchedulingAnnotation]
	return ok
}

// Start adds to each replicated Job's pod template the node labels and
// tolerations of the flavors its pod set was admitted in (flavors, by pod
// set), keeping what each had, and unsuspends the JobSet.
func Start(js *jobsetv1.JobSet, flavors map[string][]*berthv1.ResourceFlavor) error {
	if !Injected(js) {
		orig := map[string]scheduling{}
		for i := range js.Spec.ReplicatedJobs {
			spec := &js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
			orig[js.Spec.ReplicatedJobs[i].Name] = scheduling{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
		}
		data, err := json.Marshal(orig)
		if err != nil {
			return err
		}
		if js.Annotations == nil {
			js.Annotations = map[string]string{}
		}
		js.Annotations[OriginalSchedulingAnnotation] = string(data)
	}
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		integration.InjectFlavors(&rj.Template.Spec.Template.Spec, flavors[rj.Name])
	}
	no := false
	js.Spec.Suspend = &no
	return nil
}

// Restore puts back the node selectors and tolerations the templates had
// before Start. It reports whether it changed the JobSet; a damaged
// annotation is an error naming it, and the JobSet is left as it is.
func Restore(js *jobsetv1.JobSet) (bool, error) {
	data, ok := js.Annotations[OriginalSchedulingAnnotation]
	if !ok {
		return false, nil
	}
	var orig map[string]scheduling
	if err := json.Unmarshal([]byte(data), &orig); err != nil {
		return false, fmt.Errorf("annotation %s of JobSet %s/%s is not valid: %w", OriginalSchedulingAnnotation, js.Namespace, js.Name, err)
	}
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		o, ok := orig[rj.Name]
		if !ok {
			continue
		}
		rj.Template.Spec.Template.Spec.NodeSelector = o.NodeSelector
		rj.Template.Spec.Template.Spec.Tolerations = o.Tolerations
	}
	delete(js.Annotations, OriginalSchedulingAnnotation)
	return true, nil
}

// UIDLabel is the label the JobSet controller puts on a JobSet's Jobs.
const UIDLabel = jobsetv1.JobSetUIDKey

// Stopped reports whether a suspended JobSet's pods are gone: every Job it
// made is finished, or suspended with its pods gone (jobs.Stopped).
func Stopped(js *jobsetv1.JobSet, children []batchv1.Job) bool {
	if !Suspended(js) {
		return false
	}
	for i := range children {
		if finished, _ := jobs.Finished(&children[i]); !finished && !jobs.Stopped(&children[i]) {
			return false
		}
	}
	return true
}
