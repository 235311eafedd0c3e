package statefulsets

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/pods"
)

// WebhookPath is where the StatefulSet webhook is served.
const WebhookPath = "/mutate-apps-v1-statefulset"

// Webhook puts a queued StatefulSet's queue and pod group on its pod
// template, when it is created and when it is updated, and refuses what
// could not be queued as asked (Refuse).
var Webhook = integration.TemplateWebhook[appsv1.StatefulSet, *appsv1.StatefulSet]{
	Kind:     "StatefulSet",
	Template: func(s *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &s.Spec.Template },
	Refuse:   Refuse,
	Labels: func(s *appsv1.StatefulSet) map[string]string {
		return map[string]string{berthv1.PodGroupNameLabel: pods.StatefulSetGroup(s.Name)}
	},
}

// DefaultWebhookPath is where DefaultWebhook is served.
const DefaultWebhookPath = "/mutate-apps-v1-statefulset-default"

// DefaultWebhook is Webhook for a StatefulSet that asks for no queue,
// created where every object is queued: it is queued in LocalQueue
// "default".
var DefaultWebhook = func() integration.TemplateWebhook[appsv1.StatefulSet, *appsv1.StatefulSet] {
	w := Webhook
	w.Default = true
	return w
}()

// Refuse says why a queued StatefulSet s (old: before this update, nil when
// it is created) cannot be queued as asked, or "", naming the field:
//   - its pod template names another pod group, or a group size: its Pods
//     are one group of its replicas;
//   - more replicas than a group may have;
//   - a topology annotation on its template is wrong;
//   - an update changes what its Pods need of a node (requests, node
//     selector, tolerations, affinity) while it has replicas: its admitted
//     group holds quota for Pods of one shape, and the new Pods could never
//     start in it.
func Refuse(s, old *appsv1.StatefulSet) string {
	if integration.QueueName(s.Labels) == "" {
		return ""
	}
	tmpl := s.Spec.Template.ObjectMeta
	for _, k := range []string{berthv1.PodGroupNameLabel, berthv1.KueuePodGroupNameLabel} {
		if g, ok := tmpl.Labels[k]; ok && g != pods.StatefulSetGroup(s.Name) {
			return fmt.Sprintf("StatefulSet %s: spec.template.metadata.labels[%s]=%q: the Pods of a queued StatefulSet are one pod group of its own; "+
				"drop the label", s.Name, k, g)
		}
	}
	for _, k := range []string{berthv1.PodGroupTotalCountAnnotation, berthv1.KueuePodGroupTotalCountAnnotation} {
		if _, ok := tmpl.Annotations[k]; ok {
			return fmt.Sprintf("StatefulSet %s: spec.template.metadata.annotations[%s]: a queued StatefulSet's pod group has "+
				"spec.replicas Pods; drop the annotation", s.Name, k)
		}
	}
	if n := ptr.Deref(s.Spec.Replicas, 1); n > pods.MaxGroupSize {
		return fmt.Sprintf("StatefulSet %s: spec.replicas is %d; a queued StatefulSet has at most %d", s.Name, n, pods.MaxGroupSize)
	}
	if _, err := integration.TopologyRequestOf(tmpl.Annotations); err != nil {
		return fmt.Sprintf("StatefulSet %s: spec.template.metadata.annotations: %v", s.Name, err)
	}
	if old != nil && ptr.Deref(old.Spec.Replicas, 1) > 0 && ptr.Deref(s.Spec.Replicas, 1) > 0 &&
		!equality.Semantic.DeepEqual(shape(old), shape(s)) {
		return fmt.Sprintf("StatefulSet %s: spec.template.spec: changing what a queued StatefulSet's Pods need of a node "+
			"(requests, node selector, tolerations, affinity) is not supported yet while it has replicas; "+
			"scale it to 0 first, then change it and scale it up again", s.Name)
	}
	return ""
}

// shape is what a StatefulSet's Pods need of a node, as their group's
// Workload counts it.
func shape(s *appsv1.StatefulSet) berthv1.PodSet {
	return integration.PodSetOf("", 1, &s.Spec.Template.Spec)
}
