package jobsets

import (
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
// asking for such a queue are refused, as not supported yet.
type Kind struct {
	Dispatched func(namespace, queue string) bool
}

var (
	_ integration.Kind    = Kind{}
	_ integration.Refuser = Kind{}
)

func (Kind) New() client.Object { return &jobsetv1.JobSet{} }

func (Kind) QueueName(obj client.Object) string { return QueueName(obj.(*jobsetv1.JobSet)) }

func (Kind) PodSets(obj client.Object) []berthv1.PodSet { return PodSets(obj.(*jobsetv1.JobSet)) }

// Hold creates a queued JobSet suspended: the JobSet controller then
// creates its Jobs suspended too.
func (Kind) Hold(obj client.Object) bool {
	js := obj.(*jobsetv1.JobSet)
	if Suspended(js) {
		return false
	}
	yes := true
	js.Spec.Suspend = &yes
	return true
}

// Refuse refuses what Refuse (the function) says cannot be queued.
func (k Kind) Refuse(obj client.Object) string {
	js := obj.(*jobsetv1.JobSet)
	q := QueueName(js)
	return Refuse(js, q != "" && k.Dispatched != nil && k.Dispatched(js.Namespace, q))
}

// Start lets the JobSet run on its flavors' nodes (Start, the function).
func (Kind) Start(obj client.Object, flavors map[string][]*berthv1.ResourceFlavor) error {
	return Start(obj.(*jobsetv1.JobSet), flavors)
}

func (Kind) Finished(obj client.Object) (bool, bool) { return Finished(obj.(*jobsetv1.JobSet)) }

// HeldFields are what Hold changes: whether the JobSet is suspended.
func (Kind) HeldFields(obj client.Object) []integration.Field {
	return []integration.Field{{Path: "/spec/suspend", Value: obj.(*jobsetv1.JobSet).Spec.Suspend}}
}
