package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/berth-dev/berth/internal/integration"
)

// WebhookPath is where the Deployment webhook is served.
const WebhookPath = "/mutate-apps-v1-deployment"

// Webhook propagates a queued Deployment's queue to its pod template, when
// it is created and when it is updated.
type Webhook struct{}

// Handle answers with the patch of the pod template's labels, or refuses.
func (Webhook) Handle(_ context.Context, req admission.Request) admission.Response {
	var d appsv1.Deployment
	if len(req.Object.Raw) == 0 {
		return admission.Errored(http.StatusBadRequest, errNoObject)
	}
	if err := json.Unmarshal(req.Object.Raw, &d); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if why := Refuse(&d); why != "" {
		return admission.Denied(why)
	}
	fields := func() []integration.Field {
		return []integration.Field{{Path: "/spec/template/metadata", Value: &d.Spec.Template.ObjectMeta}}
	}
	before, err := integration.Snapshot(fields())
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if !Propagate(&d) {
		return admission.Allowed("its pod template asks for its queue already")
	}
	return integration.FieldPatch(before, fields())
}

var errNoObject = errors.New("the request has no object")
