package statefulsets

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// statefulSet builds a StatefulSet "db" of 3 replicas of 1 cpu, queued in
// LocalQueue main (Kueue's label).
type statefulSet struct{ s *appsv1.StatefulSet }

func makeStatefulSet() *statefulSet {
	return &statefulSet{&appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Labels: map[string]string{berthv1.KueueQueueNameLabel: "main"}},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}},
		}},
	}}
}
func (b *statefulSet) Replicas(n int32) *statefulSet { b.s.Spec.Replicas = &n; return b }
func (b *statefulSet) CPU(q string) *statefulSet {
	b.s.Spec.Template.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse(q)
	return b
}
func (b *statefulSet) Image(i string) *statefulSet {
	b.s.Spec.Template.Spec.Containers[0].Image = i
	return b
}
func (b *statefulSet) TemplateLabel(k, v string) *statefulSet {
	b.s.Spec.Template.Labels[k] = v
	return b
}
func (b *statefulSet) TemplateAnnotation(k, v string) *statefulSet {
	metav1.SetMetaDataAnnotation(&b.s.Spec.Template.ObjectMeta, k, v)
	return b
}
func (b *statefulSet) Unqueued() *statefulSet   { b.s.Labels = nil; return b }
func (b *statefulSet) Obj() *appsv1.StatefulSet { return b.s }

func TestRefuse(t *testing.T) {
	for name, tc := range map[string]struct {
		s, old *appsv1.StatefulSet
		want   string
	}{
		"fine":           {makeStatefulSet().Obj(), nil, ""},
		"another group":  {makeStatefulSet().TemplateLabel(berthv1.PodGroupNameLabel, "other").Obj(), nil, "labels[berth.dev/pod-group-name]=\"other\""},
		"its own group":  {makeStatefulSet().TemplateLabel(berthv1.KueuePodGroupNameLabel, "statefulset-db").Obj(), nil, ""},
		"a count":        {makeStatefulSet().TemplateAnnotation(berthv1.KueuePodGroupTotalCountAnnotation, "3").Obj(), nil, "has spec.replicas Pods"},
		"too many":       {makeStatefulSet().Replicas(1001).Obj(), nil, "spec.replicas is 1001; a queued StatefulSet has at most 1000"},
		"bad topology":   {makeStatefulSet().TemplateAnnotation(integration.RequiredTopologyAnnotation, "").Obj(), nil, "spec.template.metadata.annotations"},
		"new image":      {makeStatefulSet().Image("db:2").Obj(), makeStatefulSet().Obj(), ""},
		"scaled":         {makeStatefulSet().Replicas(5).Obj(), makeStatefulSet().Obj(), ""},
		"bigger pods":    {makeStatefulSet().CPU("2").Obj(), makeStatefulSet().Obj(), "spec.template.spec: changing what a queued StatefulSet's Pods need"},
		"bigger, from 0": {makeStatefulSet().CPU("2").Obj(), makeStatefulSet().Replicas(0).Obj(), ""},
		"bigger, to 0":   {makeStatefulSet().CPU("2").Replicas(0).Obj(), makeStatefulSet().Obj(), ""},
		"not queued":     {makeStatefulSet().Unqueued().Replicas(2000).Obj(), nil, ""},
	} {
		got := Refuse(tc.s, tc.old)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
		if got != "" && !strings.HasPrefix(got, "StatefulSet db: ") {
			t.Errorf("%s: %q does not name the StatefulSet", name, got)
		}
	}
}

// The webhook puts the queue and the StatefulSet's own pod group on its pod
// template, with a patch that keeps what berth's copy of the type does not
// know; an update that would be refused is.
func TestWebhook(t *testing.T) {
	handle := func(op admissionv1.Operation, s, old *appsv1.StatefulSet) ([]byte, admission.Response) {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		raw = []byte(strings.Replace(string(raw), `"spec":{`, `"spec":{"futureField":"kept",`, 1))
		req := admissionv1.AdmissionRequest{Operation: op, Object: runtime.RawExtension{Raw: raw}}
		if old != nil {
			req.OldObject.Raw, _ = json.Marshal(old)
		}
		return raw, Webhook.Handle(context.Background(), admission.Request{AdmissionRequest: req})
	}
	raw, resp := handle(admissionv1.Create, makeStatefulSet().Obj(), nil)
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	ops, _ := json.Marshal(resp.Patches)
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil || !strings.Contains(string(out), `"futureField":"kept"`) {
		t.Fatalf("patched %s (%v): want futureField kept", out, err)
	}
	var got appsv1.StatefulSet
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app": "db", berthv1.QueueNameLabel: "main", berthv1.PodGroupNameLabel: "statefulset-db"}
	if len(got.Spec.Template.Labels) != len(want) {
		t.Errorf("template labels %v, want %v", got.Spec.Template.Labels, want)
	}
	for k, v := range want {
		if got.Spec.Template.Labels[k] != v {
			t.Errorf("template labels %v, want %v", got.Spec.Template.Labels, want)
		}
	}

	if _, resp := handle(admissionv1.Update, makeStatefulSet().CPU("4").Obj(), makeStatefulSet().Obj()); resp.Allowed ||
		!strings.Contains(resp.Result.Message, "scale it to 0 first") {
		t.Errorf("bigger Pods while it has replicas: %+v; want refused", resp.Result)
	}
	if _, resp := handle(admissionv1.Create, makeStatefulSet().TemplateLabel(berthv1.QueueNameLabel, "other").Obj(), nil); resp.Allowed ||
		!strings.Contains(resp.Result.Message, "StatefulSet db: spec.template.metadata.labels asks for LocalQueue other, the StatefulSet for main") {
		t.Errorf("another queue on the template: %+v; want refused", resp.Result)
	}
}
