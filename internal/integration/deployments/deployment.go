package deployments

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// Propagate gives the pod template of a Deployment that asks for a queue
// that queue, and the Deployment's priority class label, as berth's
// labels. It reports whether it changed d.
func Propagate(d *appsv1.Deployment) bool {
	queue := integration.QueueName(d.Labels)
	if queue == "" {
		return false
	}
	want := map[string]string{berthv1.QueueNameLabel: queue}
	if _, class := integration.PriorityClassLabel(d.Labels); class != "" {
		want[berthv1.PriorityClassLabel] = class
	}
	changed := false
	for k, v := range want {
		if d.Spec.Template.Labels[k] == v {
			continue
		}
		if d.Spec.Template.Labels == nil {
			d.Spec.Template.Labels = map[string]string{}
		}
		d.Spec.Template.Labels[k], changed = v, true
	}
	return changed
}

// Refuse says why a Deployment cannot be queued as asked, or "": its pod
// template asks for another queue (or priority class) than the Deployment
// does, one of which would be ignored.
func Refuse(d *appsv1.Deployment) string {
	queue := integration.QueueName(d.Labels)
	if queue == "" {
		return ""
	}
	if tq := integration.QueueName(d.Spec.Template.Labels); tq != "" && tq != queue {
		return fmt.Sprintf("Deployment %s: spec.template.metadata.labels asks for LocalQueue %s, the Deployment for %s; "+
			"drop the label from the pod template, or give the same queue", d.Name, tq, queue)
	}
	_, class := integration.PriorityClassLabel(d.Labels)
	if _, tc := integration.PriorityClassLabel(d.Spec.Template.Labels); class != "" && tc != "" && tc != class {
		return fmt.Sprintf("Deployment %s: spec.template.metadata.labels asks for priority class %s, the Deployment for %s; "+
			"drop the label from the pod template, or give the same class", d.Name, tc, class)
	}
	return ""
}
