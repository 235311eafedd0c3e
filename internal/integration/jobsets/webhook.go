package jobsets

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// WebhookPath is where the JobSet webhook (integration.Holder of Kind) is
// served.
const WebhookPath = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"

// Kind is JobSet as an integration.Kind. Dispatched, when set, says
// whether the workloads of a LocalQueue run on worker clusters; JobSets
// created in such a queue get spec.managedBy ManagedBy, as Jobs do, so that
// this cluster's JobSet controller never runs them.
type Kind struct {
	Dispatched func(namespace, queue string) bool
	// Default queues a JobSet that asks for no queue in LocalQueue
	// "default" (served only where every object is queued).
	Default bool
}

// DefaultWebhookPath is where the Holder of Kind{Default: true} is served.
const DefaultWebhookPath = "/mutate-jobset-x-k8s-io-v1alpha2-jobset-default"

var (
	_ integration.Kind    = Kind{}
	_ integration.Refuser = Kind{}
	_ integration.Owned   = Kind{}
)

// QueuingOwner is the JobSet's TrainJob, which is queued in its stead.
func (Kind) QueuingOwner(obj client.Object) *metav1.OwnerReference {
	return QueuingOwner(obj.(*jobsetv1.JobSet))
}

func (Kind) New() client.Object { return &jobsetv1.JobSet{} }

func (k Kind) QueueName(obj client.Object) string {
	js := obj.(*jobsetv1.JobSet)
	if q := QueueName(js); q != "" || !k.Default || QueuingOwner(js) != nil {
		return q
	}
	return integration.DefaultLocalQueue
}

func (Kind) PodSets(obj client.Object) []berthv1.PodSet { return PodSets(obj.(*jobsetv1.JobSet)) }

// Hold creates a queued JobSet suspended: the JobSet controller then
// creates its Jobs suspended too. A replicated Job whose pods ask for
// topology-aware placement gets them labelled, as a Job's are, so that the
// Pod webhook gates them until each is given a domain
// (berth.dev/topology-placed), and with the JobSet's queue, which puts them
// in the controller's cache.
func (k Kind) Hold(obj client.Object) bool {
	js := obj.(*jobsetv1.JobSet)
	changed := false
	queue := k.QueueName(js)
	for i := range js.Spec.ReplicatedJobs {
		t := &js.Spec.ReplicatedJobs[i].Template.Spec.Template
		if !integration.HasTopologyAnnotations(t.Annotations) {
			continue
		}
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		if t.Labels[berthv1.TopologyPlacedLabel] != "true" || t.Labels[berthv1.QueueNameLabel] != queue {
			t.Labels[berthv1.TopologyPlacedLabel], t.Labels[berthv1.QueueNameLabel] = "true", queue
			changed = true
		}
	}
	if !Suspended(js) {
		yes := true
		js.Spec.Suspend, changed = &yes, true
	}
	if js.Spec.ManagedBy == nil && k.Dispatched != nil && k.Dispatched(js.Namespace, queue) {
		m := ManagedBy
		js.Spec.ManagedBy, changed = &m, true
	}
	return changed
}

// Refuse refuses what Refuse (the function) says cannot be queued.
func (Kind) Refuse(obj client.Object) string { return Refuse(obj.(*jobsetv1.JobSet)) }

// Start lets the JobSet run on its flavors' nodes (Start, the function).
func (Kind) Start(obj client.Object, flavors map[string][]*berthv1.ResourceFlavor) error {
	return Start(obj.(*jobsetv1.JobSet), flavors)
}

func (Kind) Finished(obj client.Object) (bool, bool) { return Finished(obj.(*jobsetv1.JobSet)) }

// HeldFields are what Hold changes: whether the JobSet is suspended, who
// manages it, and the metadata of each replicated Job's pod template (its
// labels).
func (Kind) HeldFields(obj client.Object) []integration.Field {
	js := obj.(*jobsetv1.JobSet)
	fields := []integration.Field{{Path: "/spec/suspend", Value: js.Spec.Suspend}, {Path: "/spec/managedBy", Value: js.Spec.ManagedBy}}
	for i := range js.Spec.ReplicatedJobs {
		fields = append(fields, integration.Field{Path: fmt.Sprintf("/spec/replicatedJobs/%d/template/spec/template/metadata", i),
			Value: &js.Spec.ReplicatedJobs[i].Template.Spec.Template.ObjectMeta})
	}
	return fields
}
