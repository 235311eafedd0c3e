package leaderworkersets

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// leaderWorkerSet builds a LeaderWorkerSet "infer" of groups of 4, queued
// in LocalQueue main (Kueue's label), its leader with a template of its own.
type leaderWorkerSet struct{ l *lwsv1.LeaderWorkerSet }

func makeLeaderWorkerSet() *leaderWorkerSet {
	tmpl := func(role string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"role": role}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: role, Image: "model"}}}}
	}
	leader := tmpl("leader")
	return &leaderWorkerSet{&lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: "infer", Namespace: "ns", Labels: map[string]string{berthv1.KueueQueueNameLabel: "main"}},
		Spec: lwsv1.LeaderWorkerSetSpec{Replicas: ptr.To[int32](2), LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
			Size: ptr.To[int32](4), LeaderTemplate: &leader, WorkerTemplate: tmpl("worker")}},
	}}
}
func (b *leaderWorkerSet) NoLeaderTemplate() *leaderWorkerSet {
	b.l.Spec.LeaderWorkerTemplate.LeaderTemplate = nil
	return b
}
func (b *leaderWorkerSet) WorkerLabel(k, v string) *leaderWorkerSet {
	b.l.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels[k] = v
	return b
}
func (b *leaderWorkerSet) LeaderAnnotation(k, v string) *leaderWorkerSet {
	metav1.SetMetaDataAnnotation(&b.l.Spec.LeaderWorkerTemplate.LeaderTemplate.ObjectMeta, k, v)
	return b
}
func (b *leaderWorkerSet) Annotation(k, v string) *leaderWorkerSet {
	metav1.SetMetaDataAnnotation(&b.l.ObjectMeta, k, v)
	return b
}
func (b *leaderWorkerSet) Size(n int32) *leaderWorkerSet {
	b.l.Spec.LeaderWorkerTemplate.Size = &n
	return b
}
func (b *leaderWorkerSet) Startup(p lwsv1.StartupPolicyType) *leaderWorkerSet {
	b.l.Spec.StartupPolicy = p
	return b
}
func (b *leaderWorkerSet) Obj() *lwsv1.LeaderWorkerSet { return b.l }

func TestRefuse(t *testing.T) {
	for name, tc := range map[string]struct {
		l    *lwsv1.LeaderWorkerSet
		want string
	}{
		"fine":          {makeLeaderWorkerSet().Obj(), ""},
		"LeaderCreated": {makeLeaderWorkerSet().Startup(lwsv1.LeaderCreatedStartupPolicy).Obj(), ""},
		"another queue": {makeLeaderWorkerSet().WorkerLabel(berthv1.QueueNameLabel, "other").Obj(),
			"spec.leaderWorkerTemplate.workerTemplate.metadata.labels asks for LocalQueue other, the LeaderWorkerSet for main"},
		"a group": {makeLeaderWorkerSet().WorkerLabel(berthv1.KueuePodGroupNameLabel, "g").Obj(),
			"spec.leaderWorkerTemplate.workerTemplate.metadata.labels[kueue.x-k8s.io/pod-group-name]"},
		"a count": {makeLeaderWorkerSet().LeaderAnnotation(berthv1.PodGroupTotalCountAnnotation, "4").Obj(),
			"spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations[berth.dev/pod-group-total-count]"},
		"bad topology": {makeLeaderWorkerSet().LeaderAnnotation(integration.RequiredTopologyAnnotation, "").Obj(),
			"spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations"},
		"too big":     {makeLeaderWorkerSet().Size(1001).Obj(), "spec.leaderWorkerTemplate.size is 1001"},
		"LeaderReady": {makeLeaderWorkerSet().Startup(lwsv1.LeaderReadyStartupPolicy).Obj(), "spec.startupPolicy LeaderReady is not supported yet"},
		"exclusive": {makeLeaderWorkerSet().Annotation(lwsv1.ExclusiveKeyAnnotationKey, "rack").Obj(),
			"metadata.annotations[leaderworkerset.sigs.k8s.io/exclusive-topology] is not supported yet"},
		"not queued": {func() *lwsv1.LeaderWorkerSet {
			l := makeLeaderWorkerSet().Startup(lwsv1.LeaderReadyStartupPolicy).Obj()
			l.Labels = nil
			return l
		}(), ""},
	} {
		got := Refuse(tc.l)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
		if got != "" && !strings.HasPrefix(got, "LeaderWorkerSet infer: ") {
			t.Errorf("%s: %q does not name the LeaderWorkerSet", name, got)
		}
	}
}

// The webhook puts the queue on the leader's and the workers' templates
// (the workers' alone when the leader has none of its own), with a patch
// that keeps what berth's copy of the type does not know.
func TestWebhook(t *testing.T) {
	for name, l := range map[string]*lwsv1.LeaderWorkerSet{
		"leader template": makeLeaderWorkerSet().Obj(),
		"workers' only":   makeLeaderWorkerSet().NoLeaderTemplate().Obj(),
	} {
		raw, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		raw = []byte(strings.Replace(string(raw), `"spec":{`, `"spec":{"futureField":"kept",`, 1))
		resp := Webhook{}.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}})
		if !resp.Allowed {
			t.Fatalf("%s: refused: %+v", name, resp.Result)
		}
		ops, _ := json.Marshal(resp.Patches)
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		out, err := patch.Apply(raw)
		if err != nil || !strings.Contains(string(out), `"futureField":"kept"`) {
			t.Fatalf("%s: patched %s (%v): want futureField kept", name, out, err)
		}
		var got lwsv1.LeaderWorkerSet
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		tmpls := []*corev1.PodTemplateSpec{&got.Spec.LeaderWorkerTemplate.WorkerTemplate}
		if lt := got.Spec.LeaderWorkerTemplate.LeaderTemplate; lt != nil {
			tmpls = append(tmpls, lt)
		} else if l.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
			t.Fatalf("%s: the leader's template was lost", name)
		}
		for _, tmpl := range tmpls {
			if tmpl.Labels[berthv1.QueueNameLabel] != "main" || tmpl.Labels["role"] == "" {
				t.Errorf("%s: template labels %v; want the queue added to its own", name, tmpl.Labels)
			}
		}
	}
	l := makeLeaderWorkerSet().Startup(lwsv1.LeaderReadyStartupPolicy).Obj()
	raw, _ := json.Marshal(l)
	if resp := (Webhook{}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}); resp.Allowed {
		t.Error("a LeaderReady LeaderWorkerSet was let through")
	}
}
