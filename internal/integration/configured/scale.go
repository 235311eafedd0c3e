package configured

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// ScaleGuard is the webhook that sees scales of a configured kind (its
// scale subresource, where its CRD has one: PyTorchJob's workers): it reads
// the object from the API server and refuses what ScaleRefusal refuses.
type ScaleGuard struct {
	Kind Kind
	Live client.Reader
}

// ScalePath is where the ScaleGuard of c is served.
func (c *Compiled) ScalePath() string { return c.WebhookPath + "-scale" }

// Handle answers one scale request.
func (g ScaleGuard) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update || req.SubResource != "scale" {
		return admission.Allowed("not a scale")
	}
	var from, to autoscalingv1.Scale
	if err := decodeScale(req.OldObject.Raw, &from); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if err := decodeScale(req.Object.Raw, &to); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if to.Spec.Replicas <= from.Spec.Replicas {
		return admission.Allowed("not scaled up")
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(g.Kind.C.GVK)
	if err := g.Live.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, u); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading %s %s/%s: %w", g.Kind.C.Kind, req.Namespace, req.Name, err))
	}
	if why := g.Kind.ScaleRefusal(u, from.Spec.Replicas, to.Spec.Replicas); why != "" {
		return admission.Denied(why)
	}
	return admission.Allowed("")
}

func decodeScale(raw []byte, into *autoscalingv1.Scale) error {
	if len(raw) == 0 {
		return fmt.Errorf("the request has no Scale")
	}
	return json.Unmarshal(raw, into)
}
