package integration

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// DefaultLocalQueue is where an object that asks for no queue goes, in a
// namespace where every object is queued.
const DefaultLocalQueue = "default"

// QueueByDefault labels obj, which asks for no queue, with
// DefaultLocalQueue; it reports whether it changed obj.
func QueueByDefault(obj client.Object) bool { return labelQueue(obj, DefaultLocalQueue) }

// TemplateWebhook serves a kind whose Pods berth queues as Pods, made from
// its pod template (a Deployment, a StatefulSet): the queue asked for on the
// object goes on its template, when it is created and when it is updated.
type TemplateWebhook[T any, PT interface {
	*T
	client.Object
}] struct {
	// Kind names the object's kind in refusals: "Deployment".
	Kind string
	// Default queues, in DefaultLocalQueue, an object that asks for no
	// queue (it is served so only where every object is queued, and only
	// for creations).
	Default bool
	// Template is the object's pod template.
	Template func(PT) *corev1.PodTemplateSpec
	// Refuse says why the object (old is nil on create) cannot be queued as
	// asked, or "".
	Refuse func(obj, old PT) string
	// Labels are those its template needs besides the queue's.
	Labels func(PT) map[string]string
}

// Handle answers with the patch of the pod template's labels, or refuses.
func (w TemplateWebhook[T, PT]) Handle(_ context.Context, req admission.Request) admission.Response {
	obj := PT(new(T))
	if err := decode(req.Object, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var old PT
	if req.Operation == admissionv1.Update && w.Refuse != nil {
		old = PT(new(T))
		if err := decode(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
	}
	tmpl := w.Template(obj)
	fields := []Field{{Path: "/spec/template/metadata", Value: &tmpl.ObjectMeta}, {Path: "/metadata/labels", Value: obj.GetLabels()}}
	before, err := Snapshot(fields)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	labelled := w.Default && req.Operation == admissionv1.Create && QueueByDefault(obj)
	fields[1].Value = obj.GetLabels()
	if why := TemplateConflict(w.Kind, obj, "spec.template", tmpl.Labels); why != "" {
		return admission.Denied(why)
	}
	if w.Refuse != nil {
		if why := w.Refuse(obj, old); why != "" {
			return admission.Denied(why)
		}
	}
	if QueueName(obj.GetLabels()) != "" || QueueName(tmpl.Labels) != "" {
		// Its pods would each be refused (Holder), long after it was made.
		if _, err := MaxExecTime(tmpl.Labels); err != nil {
			return admission.Denied(fmt.Sprintf("%s %s: spec.template.%v", w.Kind, obj.GetName(), err))
		}
	}
	var extra map[string]string
	if w.Labels != nil && QueueName(obj.GetLabels()) != "" {
		extra = w.Labels(obj)
	}
	if !PropagateQueue(obj.GetLabels(), tmpl, extra) && !labelled {
		return admission.Allowed("its pod template asks for its queue already")
	}
	return FieldPatch(before, fields)
}

// PropagateQueue gives a pod template the queue and priority class that
// the labels of its object ask for, as berth's labels, and extra. It
// reports whether it changed tmpl; an object that asks for no queue leaves
// it as it is.
func PropagateQueue(labels map[string]string, tmpl *corev1.PodTemplateSpec, extra map[string]string) bool {
	queue := QueueName(labels)
	if queue == "" {
		return false
	}
	want := map[string]string{berthv1.QueueNameLabel: queue}
	if _, class := PriorityClassLabel(labels); class != "" {
		want[berthv1.PriorityClassLabel] = class
	}
	for k, v := range extra {
		want[k] = v
	}
	changed := false
	for k, v := range want {
		if tmpl.Labels[k] == v {
			continue
		}
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{}
		}
		tmpl.Labels[k], changed = v, true
	}
	return changed
}

// TemplateConflict says why an object of kind cannot be queued as asked, or "": its
// pod template (at path) asks for another queue (or priority class) than it does,
// one of which would be ignored.
func TemplateConflict(kind string, obj client.Object, path string, template map[string]string) string {
	queue := QueueName(obj.GetLabels())
	if queue == "" {
		return ""
	}
	if tq := QueueName(template); tq != "" && tq != queue {
		return fmt.Sprintf("%s %s: %s.metadata.labels asks for LocalQueue %s, the %s for %s; "+
			"drop the label from the pod template, or give the same queue", kind, obj.GetName(), path, tq, kind, queue)
	}
	_, class := PriorityClassLabel(obj.GetLabels())
	if _, tc := PriorityClassLabel(template); class != "" && tc != "" && tc != class {
		return fmt.Sprintf("%s %s: %s.metadata.labels asks for priority class %s, the %s for %s; "+
			"drop the label from the pod template, or give the same class", kind, obj.GetName(), path, tc, kind, class)
	}
	return ""
}
