package deployments

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/integration"
)

// WebhookPath is where the Deployment webhook is served.
const WebhookPath = "/mutate-apps-v1-deployment"

// Webhook propagates a queued Deployment's queue to its pod template, when
// it is created and when it is updated, and refuses one whose template asks
// for another queue.
var Webhook = integration.TemplateWebhook[appsv1.Deployment, *appsv1.Deployment]{
	Kind:     "Deployment",
	Template: func(d *appsv1.Deployment) *corev1.PodTemplateSpec { return &d.Spec.Template },
}

// DefaultWebhookPath is where DefaultWebhook is served.
const DefaultWebhookPath = "/mutate-apps-v1-deployment-default"

// DefaultWebhook is Webhook for a Deployment that asks for no queue, created
// where every object is queued: it is queued in LocalQueue "default".
var DefaultWebhook = func() integration.TemplateWebhook[appsv1.Deployment, *appsv1.Deployment] {
	w := Webhook
	w.Default = true
	return w
}()
