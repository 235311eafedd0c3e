package deployments

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

func deployment(labels, templateLabels map[string]string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: labels}}
	d.Spec.Template.Labels = templateLabels
	return d
}

// The webhook gives the pod template the Deployment's queue and priority
// class (berth's labels, or Kueue's), with a patch that keeps every other
// field, one berth's copy of the type does not know included.
func TestWebhookPropagatesTheQueue(t *testing.T) {
	for name, tc := range map[string]struct {
		d    *appsv1.Deployment
		want map[string]string // template labels after; nil: no patch
	}{
		"berth's labels": {deployment(map[string]string{berthv1.QueueNameLabel: "serving", berthv1.PriorityClassLabel: "high"},
			map[string]string{"app": "web"}),
			map[string]string{"app": "web", berthv1.QueueNameLabel: "serving", berthv1.PriorityClassLabel: "high"}},
		"Kueue's labels": {deployment(map[string]string{berthv1.KueueQueueNameLabel: "serving", berthv1.KueuePriorityClassLabel: "low"}, nil),
			map[string]string{berthv1.QueueNameLabel: "serving", berthv1.PriorityClassLabel: "low"}},
		"already there": {deployment(map[string]string{berthv1.QueueNameLabel: "serving"},
			map[string]string{berthv1.QueueNameLabel: "serving"}), nil},
		"not queued": {deployment(map[string]string{"app": "web"}, nil), nil},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := json.Marshal(tc.d)
			if err != nil {
				t.Fatal(err)
			}
			raw = []byte(strings.Replace(string(raw), `"spec":{`, `"spec":{"futureField":"kept",`, 1))
			resp := Webhook.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: raw}}})
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			if tc.want == nil {
				if len(resp.Patches) > 0 {
					t.Fatalf("patched: %+v", resp.Patches)
				}
				return
			}
			ops, _ := json.Marshal(resp.Patches)
			patch, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				t.Fatal(err)
			}
			out, err := patch.Apply(raw)
			if err != nil {
				t.Fatalf("the patch does not apply: %v\n%s", err, ops)
			}
			if !strings.Contains(string(out), `"futureField":"kept"`) {
				t.Errorf("a field berth does not know was lost: %s", out)
			}
			var got appsv1.Deployment
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Spec.Template.Labels) != len(tc.want) {
				t.Fatalf("template labels %v, want %v", got.Spec.Template.Labels, tc.want)
			}
			for k, v := range tc.want {
				if got.Spec.Template.Labels[k] != v {
					t.Errorf("template labels %v, want %v", got.Spec.Template.Labels, tc.want)
				}
			}
		})
	}
}

// A pod template asking for another queue or class than its Deployment is
// refused, naming the field: one of the two would be ignored.
func TestRefuse(t *testing.T) {
	for _, tc := range []struct {
		d    *appsv1.Deployment
		want string
	}{
		{deployment(map[string]string{berthv1.QueueNameLabel: "a"}, map[string]string{berthv1.KueueQueueNameLabel: "b"}),
			"spec.template.metadata.labels asks for LocalQueue b, the Deployment for a"},
		{deployment(map[string]string{berthv1.QueueNameLabel: "a", berthv1.PriorityClassLabel: "high"},
			map[string]string{berthv1.PriorityClassLabel: "low"}), "asks for priority class low, the Deployment for high"},
		{deployment(map[string]string{berthv1.QueueNameLabel: "a"}, map[string]string{berthv1.QueueNameLabel: "a"}), ""},
		{deployment(nil, map[string]string{berthv1.QueueNameLabel: "a"}), ""}, // its pods are queued as plain Pods
	} {
		if got := integration.TemplateConflict("Deployment", tc.d, "spec.template", tc.d.Spec.Template.Labels); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v / %v: %q, want %q", tc.d.Labels, tc.d.Spec.Template.Labels, got, tc.want)
		}
	}
}

// Where everything is queued, a Deployment created without a queue is
// queued in LocalQueue "default": itself labelled (so the guard keeps the
// label on), and its pod template too. One updated without a queue (made
// before queueing was enforced) is left as it is.
func TestDefaultWebhookQueuesWhatAsksForNone(t *testing.T) {
	apply := func(op admissionv1.Operation, d *appsv1.Deployment) *appsv1.Deployment {
		t.Helper()
		raw, _ := json.Marshal(d)
		resp := DefaultWebhook.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Object: runtime.RawExtension{Raw: raw}}})
		if !resp.Allowed {
			t.Fatalf("refused: %+v", resp.Result)
		}
		ops, _ := json.Marshal(resp.Patches)
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		out, err := patch.Apply(raw)
		if err != nil {
			t.Fatal(err)
		}
		var got appsv1.Deployment
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	got := apply(admissionv1.Create, deployment(map[string]string{"app": "web"}, map[string]string{"app": "web"}))
	if got.Labels[berthv1.QueueNameLabel] != integration.DefaultLocalQueue || got.Spec.Template.Labels[berthv1.QueueNameLabel] != integration.DefaultLocalQueue ||
		got.Labels["app"] != "web" {
		t.Errorf("created: labels %v, template labels %v; want both in LocalQueue default", got.Labels, got.Spec.Template.Labels)
	}
	got = apply(admissionv1.Update, deployment(map[string]string{"app": "web"}, nil))
	if _, ok := got.Labels[berthv1.QueueNameLabel]; ok {
		t.Errorf("updated: labels %v; want it left as it was", got.Labels)
	}
}

// A queued Deployment whose pods would each be refused for a bad run-time
// limit is refused itself, naming the field.
func TestWebhookRefusesABadRunTimeLimit(t *testing.T) {
	d := deployment(map[string]string{berthv1.QueueNameLabel: "serving"}, map[string]string{berthv1.MaxExecTimeLabel: "1d"})
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	resp := Webhook.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}})
	want := `Deployment web: spec.template.metadata.labels[berth.dev/max-exec-time-seconds]: "1d" is not a whole number of seconds`
	if resp.Allowed || !strings.Contains(resp.Result.Message, want) {
		t.Errorf("allowed %v, %q; want it refused with %q", resp.Allowed, resp.Result.Message, want)
	}
}
