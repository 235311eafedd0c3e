package integration_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/pods"
	. "github.com/berth-dev/berth/test/fixtures"
)

// The webhook's patch, applied to the object as the API server sent it
// (the way the API server applies it), gives the object Hold makes; it
// touches nothing else, so a field berth's types do not know survives.
func TestHolderPatchesOnlyWhatHoldChanges(t *testing.T) {
	topology := func(j *batchv1.Job) *batchv1.Job {
		j.Spec.Template.Annotations = map[string]string{integration.PreferredTopologyAnnotation: "rack"}
		return j
	}
	suspended := func(j *batchv1.Job) *batchv1.Job { yes := true; j.Spec.Suspend = &yes; return j }
	started := func(j *batchv1.Job) *batchv1.Job {
		if err := jobs.StartTemplate(j, nil); err != nil {
			t.Fatal(err)
		}
		no := false
		j.Spec.Suspend = &no
		return j
	}
	dispatched := jobs.Kind{Dispatched: func(string, string) bool { return true }}
	for _, tc := range []struct {
		name      string
		kind      integration.Kind
		old, obj  client.Object // old only for an update
		wantPatch bool
	}{
		{name: "queued Job", kind: jobs.Kind{}, obj: MakeJob("j", "ns").Queue("q").Obj(), wantPatch: true},
		{name: "queued Job already suspended", kind: jobs.Kind{}, obj: suspended(MakeJob("j", "ns").Queue("q").Obj())},
		{name: "Job asking for topology, no template labels", kind: jobs.Kind{},
			obj: topology(MakeJob("j", "ns").Queue("q").Obj()), wantPatch: true},
		{name: "dispatched Job", kind: dispatched, obj: MakeJob("j", "ns").Queue("q").Obj(), wantPatch: true},
		{name: "running Job that grows", kind: jobs.Kind{}, old: MakeJob("j", "ns").Queue("q").Parallelism(1).Obj(),
			obj: MakeJob("j", "ns").Queue("q").Parallelism(3).Obj(), wantPatch: true},
		{name: "running Job raised, kept back", kind: jobs.Kind{}, old: started(MakeJob("j", "ns").Queue("q").Parallelism(1).Obj()),
			obj: started(MakeJob("j", "ns").Queue("q").Parallelism(3).Obj()), wantPatch: true},
		{name: "queued JobSet", kind: jobsets.Kind{}, obj: MakeJobSet("js", "ns").Queue("q").ReplicatedJob("w", 1, 1).Obj(), wantPatch: true},
		{name: "JobSet asking for topology", kind: jobsets.Kind{}, obj: MakeJobSet("js", "ns").Queue("q").ReplicatedJob("d", 1, 1).
			ReplicatedJob("w", 2, 2).PodAnnotation(integration.RequiredTopologyAnnotation, "rack").Obj(), wantPatch: true},
		{name: "queued Pod", kind: pods.Kind{}, obj: MakePod("p", "ns").Label(berthv1.QueueNameLabel, "q").Obj(), wantPatch: true},
		{name: "Pod with Kueue's label only", kind: pods.Kind{},
			obj: MakePod("p", "ns").Label(berthv1.KueueQueueNameLabel, "q").Finalizer("example.com/keep").Obj(), wantPatch: true},
		{name: "unlabelled Pod of an opted-in namespace", kind: pods.Kind{Default: true}, obj: &corev1.Pod{
			ObjectMeta: MakePod("p", "ns").Obj().ObjectMeta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
			wantPatch: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := withUnknownField(t, tc.obj)
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create,
				Object: runtime.RawExtension{Raw: raw}}}
			want := tc.obj.DeepCopyObject().(client.Object)
			if tc.old != nil {
				req.Operation = admissionv1.Update
				req.OldObject = runtime.RawExtension{Raw: withUnknownField(t, tc.old)}
				tc.kind.(integration.Grower).HoldGrowth(tc.old, want)
			} else {
				tc.kind.Hold(want)
			}
			resp := integration.NewHolder(tc.kind).Handle(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("refused: %+v", resp.Result)
			}
			if got := len(resp.Patches) > 0; got != tc.wantPatch {
				t.Fatalf("patched %v (%+v), want %v", got, resp.Patches, tc.wantPatch)
			}
			ops, err := json.Marshal(resp.Patches)
			if err != nil {
				t.Fatal(err)
			}
			patch, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				t.Fatalf("the patch does not decode: %v\n%s", err, ops)
			}
			out, err := patch.Apply(raw)
			if err != nil {
				t.Fatalf("the patch does not apply to the object sent: %v\n%s", err, ops)
			}
			var unknown struct {
				Spec struct {
					Future *string `json:"futureField"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(out, &unknown); err != nil || unknown.Spec.Future == nil || *unknown.Spec.Future != "kept" {
				t.Errorf("a field berth does not know was lost: %s", out)
			}
			got := tc.kind.New()
			if err := json.Unmarshal(out, got); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("patched object:\n%s\nwant what Hold makes:\n%s", mustJSON(t, got), mustJSON(t, want))
			}
		})
	}
}

// berth's controller raises a running Job's parallelism itself once the
// increase is admitted: its own update is not kept back, anyone else's is.
func TestHolderTrustsBerthsOwnRaise(t *testing.T) {
	started := func(n int32) *batchv1.Job {
		j := MakeJob("j", "ns").Queue("q").Parallelism(n).Obj()
		if err := jobs.StartTemplate(j, nil); err != nil {
			t.Fatal(err)
		}
		no := false
		j.Spec.Suspend = &no
		return j
	}
	h := integration.NewHolder(jobs.Kind{}).Trusting("system:serviceaccount:berth-system:berth-controller")
	for user, held := range map[string]bool{"system:serviceaccount:berth-system:berth-controller": false, "mallory": true} {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update,
			Object: runtime.RawExtension{Raw: mustJSON(t, started(3))}, OldObject: runtime.RawExtension{Raw: mustJSON(t, started(1))}}}
		req.UserInfo.Username = user
		if resp := h.Handle(context.Background(), req); !resp.Allowed || (len(resp.Patches) > 0) != held {
			t.Errorf("%s raising a running Job: allowed %v, patched %v; want patched %v", user, resp.Allowed, resp.Patches, held)
		}
	}
}

// withUnknownField is obj as JSON, with spec.futureField added as a newer
// API server might send it.
func withUnknownField(t *testing.T, obj client.Object) []byte {
	var m map[string]any
	if err := json.Unmarshal(mustJSON(t, obj), &m); err != nil {
		t.Fatal(err)
	}
	m["spec"].(map[string]any)["futureField"] = "kept"
	return mustJSON(t, m)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A queued object's run-time limit is refused at creation when it is not a
// whole number of seconds, with the object and the label named; an object
// berth does not queue is not its business.
func TestHolderRefusesABadRunTimeLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  client.Object
		want string // in the refusal; "" allowed
	}{
		{"seconds", MakeJob("j", "ns").Queue("q").Label(berthv1.MaxExecTimeLabel, "3600").Obj(), ""},
		{"a duration", MakeJob("j", "ns").Queue("q").Label(berthv1.MaxExecTimeLabel, "1h").Obj(),
			`Job j: metadata.labels[berth.dev/max-exec-time-seconds]: "1h" is not a whole number of seconds from 1 to 2147483647`},
		{"zero, Kueue's label", MakeJob("j", "ns").Queue("q").Label(berthv1.KueueMaxExecTimeLabel, "0").Obj(),
			`metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: "0"`},
		{"past int32", MakeJob("j", "ns").Queue("q").Label(berthv1.MaxExecTimeLabel, "9999999999").Obj(), "9999999999"},
		{"not queued", MakeJob("j", "ns").Label(berthv1.MaxExecTimeLabel, "soon").Obj(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create,
				Kind: metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, Object: runtime.RawExtension{Raw: withUnknownField(t, tc.obj)}}}
			resp := integration.NewHolder(jobs.Kind{}).Handle(context.Background(), req)
			if tc.want == "" {
				if !resp.Allowed {
					t.Errorf("refused: %s", resp.Result.Message)
				}
				return
			}
			if resp.Allowed || !strings.Contains(resp.Result.Message, tc.want) {
				t.Errorf("allowed %v, message %q; want it refused with %q", resp.Allowed, resp.Result.Message, tc.want)
			}
		})
	}
}

// The Workload takes its object's limit when it is made, for every kind.
func TestNewWorkloadTakesTheRunTimeLimit(t *testing.T) {
	job := MakeJob("j", "ns").Queue("q").Label(berthv1.KueueMaxExecTimeLabel, "90").Obj()
	wl := jobs.NewWorkload(job, "q", nil, "")
	if got := wl.Spec.MaximumExecutionTimeSeconds; got == nil || *got != 90 {
		t.Errorf("Job's Workload: maximumExecutionTimeSeconds %v, want 90", got)
	}
	pod := MakePod("p", "ns").Label(berthv1.QueueNameLabel, "q").Label(berthv1.MaxExecTimeLabel, "5").Obj()
	if got := pods.NewWorkload(pod, "q", nil, "").Spec.MaximumExecutionTimeSeconds; got == nil || *got != 5 {
		t.Errorf("Pod's Workload: maximumExecutionTimeSeconds %v, want 5", got)
	}
	if got := jobs.NewWorkload(MakeJob("j", "ns").Queue("q").Obj(), "q", nil, "").Spec.MaximumExecutionTimeSeconds; got != nil {
		t.Errorf("without the label: %d, want no limit", *got)
	}
}
