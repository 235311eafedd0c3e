package trainjobs

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobsets"
)

// GVK is the kind queued.
var GVK = trainerv1.GroupVersion.WithKind(trainerv1.TrainJobKind)

// FlavorsAnnotation marks berth's podTemplateOverrides of a started
// TrainJob (one per replicated Job), and so the pods they reach: the
// flavors the pod set was admitted in.
const FlavorsAnnotation = "berth.dev/admitted-flavors"

// trainerManaged is the spec.managedBy of a TrainJob Trainer runs itself.
const trainerManaged = "trainer.kubeflow.org/trainjob-controller"

// QueueName is the LocalQueue a TrainJob is submitted to, from its labels
// (berth's or Kueue's), "" when none.
func QueueName(tj *trainerv1.TrainJob) string { return integration.QueueName(tj.Labels) }

// WorkloadName is the name of a TrainJob's Workload: stable for the
// TrainJob, different for a new TrainJob of the same name.
func WorkloadName(tj *trainerv1.TrainJob) string {
	return integration.WorkloadName("trainjob", tj.Name, tj.UID)
}

// Suspended reports spec.suspend.
func Suspended(tj *trainerv1.TrainJob) bool { return tj.Spec.Suspend != nil && *tj.Spec.Suspend }

func setSuspend(tj *trainerv1.TrainJob, v bool) { tj.Spec.Suspend = &v }

// Finished reports whether Trainer says the TrainJob completed or failed.
func Finished(tj *trainerv1.TrainJob) (finished, failed bool) {
	if meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1.TrainJobComplete) {
		return true, false
	}
	if meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1.TrainJobFailed) {
		return true, true
	}
	return false, false
}

// MadeFor reports whether js is the JobSet Trainer made for tj: tj is its
// controller.
func MadeFor(js *jobsetv1.JobSet, tj *trainerv1.TrainJob) bool {
	ref := metav1.GetControllerOf(js)
	return ref != nil && ref.UID == tj.UID
}

// PodSets are the TrainJob's pods, as its JobSet asks for them: one pod set
// per replicated Job (jobsets.PodSets).
func PodSets(js *jobsetv1.JobSet) []berthv1.PodSet { return jobsets.PodSets(js) }

// SameShape reports whether two lists of pod sets ask for the same pods:
// names, counts, requests and topology (not the node selectors and
// tolerations, which the flavors change).
func SameShape(a, b []berthv1.PodSet) bool {
	return slices.EqualFunc(a, b, func(x, y berthv1.PodSet) bool {
		return x.Name == y.Name && x.Count == y.Count && equality.Semantic.DeepEqual(x.Requests, y.Requests) &&
			equality.Semantic.DeepEqual(x.TopologyRequest, y.TopologyRequest)
	})
}

// InSync reports whether a pending Workload still describes its TrainJob's
// JobSet.
func InSync(wl *berthv1.Workload, js *jobsetv1.JobSet, queue string, priority *int32) bool {
	return wl.Spec.QueueName == queue && equality.Semantic.DeepEqual(wl.Spec.Priority, priority) &&
		equality.Semantic.DeepEqual(wl.Spec.PodSets, PodSets(js))
}

// NameLabel on a TrainJob's Workload names the TrainJob (cut to 63
// characters).
const NameLabel = "berth.dev/trainjob-name"

// NewWorkload makes a TrainJob's Workload, owned by the TrainJob, asking
// for its JobSet's pods.
func NewWorkload(tj *trainerv1.TrainJob, js *jobsetv1.JobSet, queue string, priority *int32, priorityClass string) *berthv1.Workload {
	name := tj.Name
	if len(name) > 63 {
		name = name[:63]
	}
	wl := integration.NewWorkload(tj, GVK, WorkloadName(tj), map[string]string{NameLabel: name},
		berthv1.WorkloadSpec{PodSets: PodSets(js), QueueName: queue, Priority: priority, PriorityClassName: priorityClass})
	integration.FollowPods(wl, jobsets.Pods(js))
	return wl
}

// Refuse says why a new TrainJob cannot be queued as it is, naming the
// field, or "": one that claims berth's overrides (it would start with
// flavors it was never admitted in), or is run by another controller than
// Trainer's own (a MultiKueue manager's copy), which berth does not do yet.
func Refuse(tj *trainerv1.TrainJob) string {
	for i, o := range tj.Spec.PodTemplateOverrides {
		if o.Metadata != nil {
			if _, ok := o.Metadata.Annotations[FlavorsAnnotation]; ok {
				return fmt.Sprintf("TrainJob %s: spec.podTemplateOverrides[%d].metadata.annotations: %s is berth's own, set when it starts an admitted TrainJob",
					tj.Name, i, FlavorsAnnotation)
			}
		}
	}
	if m := tj.Spec.ManagedBy; m != nil && *m != trainerManaged {
		return fmt.Sprintf("TrainJob %s: spec.managedBy is %q; berth queues TrainJobs that Trainer runs itself (%s); others are not supported yet",
			tj.Name, *m, trainerManaged)
	}
	return ""
}

// RefuseJobSet says why berth cannot queue a TrainJob whose JobSet Trainer
// made as js, to be queued in queue, or "": a queue label of another queue
// on the runtime's Jobs or pods (a TrainJob is queued whole, by its own), and
// pods berth cannot queue (jobsets.RefuseShape: wrong topology annotations,
// partial admission, more replicated Jobs than a Workload holds), refused
// rather than ignored. The TrainJob then stays suspended.
func RefuseJobSet(tj *trainerv1.TrainJob, js *jobsetv1.JobSet, queue string) string {
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		for _, labels := range []map[string]string{rj.Template.Labels, rj.Template.Spec.Template.Labels} {
			if q := integration.QueueName(labels); q != "" && q != queue {
				return fmt.Sprintf("TrainJob %s: its runtime's replicated Job %s labels its Jobs or pods with LocalQueue %s; "+
					"a TrainJob is queued whole, by the queue label on the TrainJob itself (metadata.labels)", tj.Name, rj.Name, q)
			}
		}
	}
	if why := jobsets.RefuseShape(js); why != "" {
		return fmt.Sprintf("TrainJob %s: its runtime's %s", tj.Name, why)
	}
	return ""
}

// Injected reports whether the TrainJob carries berth's overrides.
func Injected(tj *trainerv1.TrainJob) bool {
	return slices.ContainsFunc(tj.Spec.PodTemplateOverrides, ours)
}

func ours(o trainerv1.PodTemplateOverride) bool {
	if o.Metadata == nil {
		return false
	}
	_, ok := o.Metadata.Annotations[FlavorsAnnotation]
	return ok
}

// Inject adds to the TrainJob, still suspended, an override per replicated
// Job of js (its JobSet) with the node labels and tolerations of the flavors
// its pod set was admitted in (flavors, by pod set). Trainer merges an
// override's tolerations by replacing the list, so each carries the
// template's own first. Every pod is labelled with the TrainJob's Workload
// (berth.dev/prebuilt-workload-name), which placement and the dashboard
// cannot find from a pod's JobSet labels; the pods of a replicated Job that
// asks for topology-aware placement are also labelled as a JobSet's are
// (the Pod webhook gates them until each is given a domain), with queue.
func Inject(tj *trainerv1.TrainJob, js *jobsetv1.JobSet, queue string, flavors map[string][]*berthv1.ResourceFlavor) {
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		var spec corev1.PodSpec
		spec.Tolerations = slices.Clone(rj.Template.Spec.Template.Spec.Tolerations)
		integration.InjectFlavors(&spec, flavors[rj.Name])
		names := make([]string, 0, len(flavors[rj.Name]))
		for _, f := range flavors[rj.Name] {
			names = append(names, f.Name)
		}
		md := &metav1.ObjectMeta{Annotations: map[string]string{FlavorsAnnotation: strings.Join(names, ",")},
			Labels: map[string]string{berthv1.PrebuiltWorkloadLabel: WorkloadName(tj)}}
		if integration.HasTopologyAnnotations(rj.Template.Spec.Template.Annotations) {
			md.Labels[berthv1.TopologyPlacedLabel], md.Labels[berthv1.QueueNameLabel] = "true", queue
		}
		tj.Spec.PodTemplateOverrides = append(tj.Spec.PodTemplateOverrides, trainerv1.PodTemplateOverride{
			TargetJobs: []trainerv1.PodTemplateOverrideTargetJob{{Name: rj.Name}},
			Metadata:   md,
			Spec:       &trainerv1.PodTemplateSpecOverride{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations},
		})
	}
}

// Carries reports whether js, the TrainJob's JobSet, was made from the
// TrainJob with berth's overrides: each replicated Job's pod template has
// the flavors' annotation berth's override for it has. Trainer remakes a
// suspended TrainJob's JobSet when the TrainJob changes, so a JobSet that
// carries them reflects the TrainJob at least as it was when they were
// written.
func Carries(js *jobsetv1.JobSet, tj *trainerv1.TrainJob) bool {
	want := map[string]string{}
	for _, o := range tj.Spec.PodTemplateOverrides {
		if !ours(o) {
			continue
		}
		for _, t := range o.TargetJobs {
			want[t.Name] = o.Metadata.Annotations[FlavorsAnnotation]
		}
	}
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		got, ok := rj.Template.Spec.Template.Annotations[FlavorsAnnotation]
		if w, has := want[rj.Name]; !has || !ok || got != w {
			return false
		}
	}
	return true
}

// Restore takes berth's overrides off the TrainJob; it reports whether it
// changed it.
func Restore(tj *trainerv1.TrainJob) bool {
	n := len(tj.Spec.PodTemplateOverrides)
	tj.Spec.PodTemplateOverrides = slices.DeleteFunc(tj.Spec.PodTemplateOverrides, ours)
	if len(tj.Spec.PodTemplateOverrides) == 0 {
		tj.Spec.PodTemplateOverrides = nil
	}
	return len(tj.Spec.PodTemplateOverrides) != n
}

// PriorityClass is the pod priority class a TrainJob's Workload falls back
// on: its JobSet's (its first replicated Job's).
func PriorityClass(js *jobsetv1.JobSet) string { return jobsets.PriorityClass(js) }
