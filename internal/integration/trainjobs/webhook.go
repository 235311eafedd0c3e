package trainjobs

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// WebhookPath is where the TrainJob webhook (integration.Holder of Kind)
// is served; DefaultWebhookPath, that of Kind{Default: true}.
const (
	WebhookPath        = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
	DefaultWebhookPath = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob-default"
)

// Kind is TrainJob as an integration.Kind: the webhook's part. Its pod
// sets are its JobSet's, which the Reconciler reads; the webhook needs
// none.
type Kind struct {
	// Default queues a TrainJob that asks for no queue in LocalQueue
	// "default" (served only where every object is queued).
	Default bool
}

var (
	_ integration.Kind    = Kind{}
	_ integration.Refuser = Kind{}
)

func (Kind) New() client.Object { return &trainerv1.TrainJob{} }

func (k Kind) QueueName(obj client.Object) string {
	if q := QueueName(obj.(*trainerv1.TrainJob)); q != "" || !k.Default {
		return q
	}
	return integration.DefaultLocalQueue
}

// PodSets are not known from the TrainJob alone (they come from its
// runtime): the Reconciler reads them off its JobSet.
func (Kind) PodSets(client.Object) []berthv1.PodSet { return nil }

// Hold creates a queued TrainJob suspended: Trainer then makes its JobSet
// suspended too.
func (Kind) Hold(obj client.Object) bool {
	tj := obj.(*trainerv1.TrainJob)
	if Suspended(tj) {
		return false
	}
	setSuspend(tj, true)
	return true
}

func (Kind) Refuse(obj client.Object) string { return Refuse(obj.(*trainerv1.TrainJob)) }

// Start is the Reconciler's own (two writes, with the JobSet read
// between), never one write of the TrainJob alone.
func (Kind) Start(obj client.Object, _ map[string][]*berthv1.ResourceFlavor) error {
	return fmt.Errorf("TrainJob %s: started by the TrainJob reconciler, from its JobSet", obj.GetName())
}

func (Kind) Finished(obj client.Object) (bool, bool) { return Finished(obj.(*trainerv1.TrainJob)) }

// HeldFields are what Hold changes.
func (Kind) HeldFields(obj client.Object) []integration.Field {
	return []integration.Field{{Path: "/spec/suspend", Value: obj.(*trainerv1.TrainJob).Spec.Suspend}}
}
