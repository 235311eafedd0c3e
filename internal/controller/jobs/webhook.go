package jobs

import (
	"context"
	"encoding/json"
	"net/http"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// WebhookPath is where the Job defaulting webhook is served.
const WebhookPath = "/mutate-batch-v1-job"

// Suspender is the mutating webhook that creates queued Jobs suspended, so
// no pod starts before the Job's Workload is admitted.
type Suspender struct {
	decoder   admission.Decoder
	manageAll bool
}

// NewSuspender returns the webhook handler.
func NewSuspender(scheme *runtime.Scheme, manageAll bool) *Suspender {
	return &Suspender{decoder: admission.NewDecoder(scheme), manageAll: manageAll}
}

// Handle suspends a queued Job at creation.
func (s *Suspender) Handle(_ context.Context, req admission.Request) admission.Response {
	var job batchv1.Job
	if err := s.decoder.Decode(req, &job); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if QueueName(&job, s.manageAll) == "" {
		return admission.Allowed("not queued by berth")
	}
	if Suspended(&job) {
		return admission.Allowed("already suspended")
	}
	yes := true
	job.Spec.Suspend = &yes
	raw, err := json.Marshal(&job)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}
