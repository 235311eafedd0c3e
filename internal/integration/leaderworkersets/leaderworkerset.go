package leaderworkersets

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/pods"
)

// GVK is the LeaderWorkerSet kind berth queues.
var GVK = lwsv1.GroupVersion.WithKind("LeaderWorkerSet")

// WebhookPath is where the LeaderWorkerSet webhook is served.
const WebhookPath = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset"

// templates are a LeaderWorkerSet's pod templates, with the path of each,
// the leader's first when it has its own.
func templates(l *lwsv1.LeaderWorkerSet) (paths []string, tmpls []*corev1.PodTemplateSpec) {
	t := &l.Spec.LeaderWorkerTemplate
	if t.LeaderTemplate != nil {
		paths, tmpls = append(paths, "spec.leaderWorkerTemplate.leaderTemplate"), append(tmpls, t.LeaderTemplate)
	}
	return append(paths, "spec.leaderWorkerTemplate.workerTemplate"), append(tmpls, &t.WorkerTemplate)
}

// Refuse says why a queued LeaderWorkerSet cannot be queued as asked, or
// "", naming the field:
//   - a pod template asks for another queue or priority class;
//   - a pod template names a pod group or a group size: each of its groups
//     is one pod group of its size;
//   - a group larger than a pod group may be;
//   - wrong topology annotations on a pod template;
//   - what would keep a group from ever being whole while it waits: the
//     LeaderReady startup policy (workers are made once the leader is
//     Ready) and exclusive placement (once the leader is scheduled).
func Refuse(l *lwsv1.LeaderWorkerSet) string {
	if integration.QueueName(l.Labels) == "" {
		return ""
	}
	paths, tmpls := templates(l)
	for i, tmpl := range tmpls {
		if why := integration.TemplateConflict("LeaderWorkerSet", l, paths[i], tmpl.Labels); why != "" {
			return why
		}
		for _, k := range []string{berthv1.PodGroupNameLabel, berthv1.KueuePodGroupNameLabel} {
			if _, ok := tmpl.Labels[k]; ok {
				return fmt.Sprintf("LeaderWorkerSet %s: %s.metadata.labels[%s]: each group of a queued LeaderWorkerSet is a pod group of its own; "+
					"drop the label", l.Name, paths[i], k)
			}
		}
		for _, k := range []string{berthv1.PodGroupTotalCountAnnotation, berthv1.KueuePodGroupTotalCountAnnotation} {
			if _, ok := tmpl.Annotations[k]; ok {
				return fmt.Sprintf("LeaderWorkerSet %s: %s.metadata.annotations[%s]: a queued LeaderWorkerSet's groups have "+
					"spec.leaderWorkerTemplate.size pods; drop the annotation", l.Name, paths[i], k)
			}
		}
		if _, err := integration.TopologyRequestOf(tmpl.Annotations); err != nil {
			return fmt.Sprintf("LeaderWorkerSet %s: %s.metadata.annotations: %v", l.Name, paths[i], err)
		}
	}
	if n := ptr.Deref(l.Spec.LeaderWorkerTemplate.Size, 1); n > pods.MaxGroupSize {
		return fmt.Sprintf("LeaderWorkerSet %s: spec.leaderWorkerTemplate.size is %d; a queued LeaderWorkerSet's groups have at most %d pods",
			l.Name, n, pods.MaxGroupSize)
	}
	if l.Spec.StartupPolicy == lwsv1.LeaderReadyStartupPolicy {
		return fmt.Sprintf("LeaderWorkerSet %s: spec.startupPolicy %s is not supported yet for a queued LeaderWorkerSet: "+
			"its workers would be made only once its leader is Ready, and its leader waits for the whole group to be admitted; use %s",
			l.Name, lwsv1.LeaderReadyStartupPolicy, lwsv1.LeaderCreatedStartupPolicy)
	}
	if _, ok := l.Annotations[lwsv1.ExclusiveKeyAnnotationKey]; ok {
		return fmt.Sprintf("LeaderWorkerSet %s: metadata.annotations[%s] is not supported yet for a queued LeaderWorkerSet: "+
			"its workers would be made only once its leader is scheduled, and its leader waits for the whole group to be admitted; "+
			"to keep a group together, put annotation %s on both its pod templates instead", l.Name, lwsv1.ExclusiveKeyAnnotationKey, integration.RequiredTopologyAnnotation)
	}
	return ""
}

// Webhook puts a queued LeaderWorkerSet's queue on its pod templates, when
// it is created and when it is updated, and refuses what could not be
// queued as asked (Refuse). With Default (served only where every object
// is queued, for creations), one that asks for no queue is queued in
// LocalQueue "default".
type Webhook struct{ Default bool }

// DefaultWebhookPath is where Webhook{Default: true} is served.
const DefaultWebhookPath = "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset-default"

// Handle answers with the patch of the pod templates' labels, or refuses.
func (w Webhook) Handle(_ context.Context, req admission.Request) admission.Response {
	var l lwsv1.LeaderWorkerSet
	if len(req.Object.Raw) == 0 {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the request has no object"))
	}
	if err := json.Unmarshal(req.Object.Raw, &l); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	fields := []integration.Field{{Path: "/metadata/labels", Value: l.Labels}}
	_, tmpls := templates(&l)
	for i, tmpl := range tmpls {
		path := "/spec/leaderWorkerTemplate/workerTemplate/metadata"
		if i == 0 && len(tmpls) == 2 {
			path = "/spec/leaderWorkerTemplate/leaderTemplate/metadata"
		}
		fields = append(fields, integration.Field{Path: path, Value: &tmpl.ObjectMeta})
	}
	before, err := integration.Snapshot(fields)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	changed := w.Default && req.Operation == admissionv1.Create && integration.QueueByDefault(&l)
	fields[0].Value = l.Labels
	if why := Refuse(&l); why != "" {
		return admission.Denied(why)
	}
	for _, tmpl := range tmpls {
		changed = integration.PropagateQueue(l.Labels, tmpl, nil) || changed
	}
	if !changed {
		return admission.Allowed("its pod templates ask for its queue already")
	}
	return integration.FieldPatch(before, fields)
}
