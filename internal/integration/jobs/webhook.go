package jobs

import (
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// WebhookPath is where the Job webhook (integration.Holder of Kind) is served.
const WebhookPath = "/mutate-batch-v1-job"

// Kind is batch/v1 Job as an integration.Kind. ManageAll queues Jobs without
// a queue label in their namespace's LocalQueue "default".
type Kind struct{ ManageAll bool }

var _ integration.Kind = Kind{}

func (Kind) New() client.Object { return &batchv1.Job{} }

func (k Kind) QueueName(obj client.Object) string { return QueueName(obj.(*batchv1.Job), k.ManageAll) }

func (Kind) PodSets(obj client.Object) []berthv1.PodSet { return PodSets(obj.(*batchv1.Job)) }

// Hold creates a queued Job suspended, so no pod starts before its Workload
// is admitted.
func (Kind) Hold(obj client.Object) bool {
	job := obj.(*batchv1.Job)
	if Suspended(job) {
		return false
	}
	yes := true
	job.Spec.Suspend = &yes
	return true
}

// Start adds the flavors' settings to the Job's template (keeping what it
// had, for RestoreTemplate) and unsuspends it.
func (Kind) Start(obj client.Object, flavors []*berthv1.ResourceFlavor) error {
	job := obj.(*batchv1.Job)
	if err := StartTemplate(job, flavors); err != nil {
		return err
	}
	no := false
	job.Spec.Suspend = &no
	return nil
}

func (Kind) Finished(obj client.Object) (bool, bool) { return Finished(obj.(*batchv1.Job)) }
