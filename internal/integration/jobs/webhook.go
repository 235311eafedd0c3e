package jobs

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// WebhookPath is where the Job webhook (integration.Holder of Kind) is served.
const WebhookPath = "/mutate-batch-v1-job"

// DefaultWebhookPath is where the Holder of Kind{Default: true} is served.
const DefaultWebhookPath = "/mutate-batch-v1-job-default"

// Kind is batch/v1 Job as an integration.Kind. Default queues Jobs without
// a queue label in their namespace's LocalQueue "default" (served only
// where every object is queued). Dispatched, when set, says whether the
// Jobs of a LocalQueue run on worker clusters; those are created with
// spec.managedBy ManagedBy, so that this cluster's Job controller leaves
// them alone.
type Kind struct {
	Default    bool
	Dispatched func(namespace, queue string) bool
}

// ManagedBy is the spec.managedBy of a Job that runs on a worker cluster.
const ManagedBy = berthv1.MultiClusterControllerName

var (
	_ integration.Kind     = Kind{}
	_ integration.Shrinker = Kind{}
	_ integration.Owned    = Kind{}
)

// QueuingOwner is the Job's JobSet, which is queued in its stead.
func (Kind) QueuingOwner(obj client.Object) *metav1.OwnerReference {
	return JobSetOf(obj.(*batchv1.Job))
}

func (Kind) New() client.Object { return &batchv1.Job{} }

func (k Kind) QueueName(obj client.Object) string { return QueueName(obj.(*batchv1.Job), k.Default) }

func (Kind) PodSets(obj client.Object) []berthv1.PodSet { return PodSets(obj.(*batchv1.Job)) }

// Hold creates a queued Job suspended, so no pod starts before its Workload
// is admitted. A Job that asks for topology-aware placement gets its pods
// labelled so that the Pod webhook gates them until each is given a domain
// (berth.dev/topology-placed), and with its queue label, which puts them in
// the controller's cache.
func (k Kind) Hold(obj client.Object) bool {
	job := obj.(*batchv1.Job)
	changed := false
	if integration.HasTopologyAnnotations(job.Spec.Template.Annotations) {
		l := job.Spec.Template.Labels
		if l == nil {
			l = map[string]string{}
		}
		if l[berthv1.TopologyPlacedLabel] != "true" || l[berthv1.QueueNameLabel] != k.QueueName(job) {
			l[berthv1.TopologyPlacedLabel], l[berthv1.QueueNameLabel] = "true", k.QueueName(job)
			job.Spec.Template.Labels, changed = l, true
		}
	}
	if !Suspended(job) {
		yes := true
		job.Spec.Suspend, changed = &yes, true
	}
	if job.Spec.ManagedBy == nil && k.Dispatched != nil && k.Dispatched(job.Namespace, k.QueueName(job)) {
		m := ManagedBy
		job.Spec.ManagedBy, changed = &m, true
	}
	return changed
}

// HoldGrowth keeps a running queued Job that this update makes run more
// pods at once than before from starting them past the quota, in the same
// write (the Job controller would start them at once). A raise of
// parallelism alone, of a Job that can grow while it runs (GrowsInPlace),
// is kept back and recorded in berthv1.PendingParallelismAnnotation: the
// reconciler queues the increase and raises the parallelism once it is
// admitted, while the running pods keep running. Any other growth
// suspends the Job, to queue again with its new size (Resized). Shrinking
// needs no such haste: fewer pods run.
func (k Kind) HoldGrowth(old, obj client.Object) bool {
	o, n := old.(*batchv1.Job), obj.(*batchv1.Job)
	if Suspended(n) || podsAtOnce(n) <= podsAtOnce(o) {
		return false
	}
	if GrowsInPlace(o, n) {
		want := *n.Spec.Parallelism
		n.Spec.Parallelism = o.Spec.Parallelism
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[berthv1.PendingParallelismAnnotation] = strconv.Itoa(int(want))
		return true
	}
	yes := true
	n.Spec.Suspend = &yes
	return true
}

func podsAtOnce(job *batchv1.Job) int32 {
	var n int32
	for _, ps := range PodSets(job) {
		n += ps.Count
	}
	return n
}

// Refuse refuses a Job whose pod template asks for a queue other than the
// Job's (its pods are queued as the Job, never one by one, so the template's
// label would be silently ignored: a Job without a queue label of its own
// would run unqueued), and a queued Job whose topology annotations are
// wrong, naming the field.
func (k Kind) Refuse(obj client.Object) string {
	job := obj.(*batchv1.Job)
	if MadeByJobSet(job) {
		return "" // its JobSet was checked
	}
	queue := k.QueueName(job)
	if tq := integration.QueueName(job.Spec.Template.Labels); tq != "" && tq != queue {
		if queue == "" {
			return fmt.Sprintf("Job %s: spec.template.metadata.labels asks for LocalQueue %s, but a Job is queued by the queue label on the Job itself "+
				"(metadata.labels), and its pods with it; move the label there", job.Name, tq)
		}
		return fmt.Sprintf("Job %s: spec.template.metadata.labels asks for LocalQueue %s, the Job for %s; a Job's pods are queued with the Job: "+
			"drop the label from the pod template, or give the same queue", job.Name, tq, queue)
	}
	if queue == "" {
		return ""
	}
	topo, err := integration.TopologyRequestOf(job.Spec.Template.Annotations)
	if err != nil {
		return fmt.Sprintf("Job %s: pod template: %v", job.Name, err)
	}
	_, partial, err := MinParallelism(job)
	if err != nil {
		return fmt.Sprintf("Job %s: metadata.annotations: %v", job.Name, err)
	}
	if partial && topo != nil {
		return fmt.Sprintf("Job %s: partial admission (annotation %s) together with a topology request is not supported yet",
			job.Name, berthv1.JobMinParallelismAnnotation)
	}
	return ""
}

// Start adds the flavors' settings to the Job's template (keeping what it
// had, for RestoreTemplate) and unsuspends it.
func (Kind) Start(obj client.Object, flavors map[string][]*berthv1.ResourceFlavor) error {
	job := obj.(*batchv1.Job)
	if err := StartTemplate(job, flavors["main"]); err != nil {
		return err
	}
	no := false
	job.Spec.Suspend = &no
	return nil
}

// Shrink runs a Job admitted with fewer pods than it asked for with that
// many at once (ShrinkToAdmitted).
func (Kind) Shrink(obj client.Object, admitted func(podSet string) int32) error {
	return ShrinkToAdmitted(obj.(*batchv1.Job), admitted("main"))
}

// Steer labels the pod template of a placed Job so that its pods are given
// their domains (SteerTemplate).
func (Kind) Steer(obj client.Object, queue string, placed bool) error {
	if !placed {
		return nil
	}
	return SteerTemplate(obj.(*batchv1.Job), queue)
}

func (Kind) Finished(obj client.Object) (bool, bool) { return Finished(obj.(*batchv1.Job)) }

// HeldFields are what Hold and HoldGrowth change: whether the Job is
// suspended, who manages it, its pod template's labels (the whole
// template metadata, which every Job has, so the patch needs no parent),
// and a raise kept back: its parallelism and annotations.
func (Kind) HeldFields(obj client.Object) []integration.Field {
	job := obj.(*batchv1.Job)
	return []integration.Field{
		{Path: "/spec/suspend", Value: job.Spec.Suspend},
		{Path: "/spec/managedBy", Value: job.Spec.ManagedBy},
		{Path: "/spec/template/metadata", Value: &job.Spec.Template.ObjectMeta},
		{Path: "/spec/parallelism", Value: job.Spec.Parallelism},
		{Path: "/metadata/annotations", Value: job.Annotations},
	}
}
