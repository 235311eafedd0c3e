package integration_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/integration/pods"
	. "github.com/berth-dev/berth/test/fixtures"
)

const jobController = "system:serviceaccount:kube-system:job-controller"

// create asks h, as user, to create obj.
func create(t *testing.T, h *integration.Holder, user string, obj client.Object) admission.Response {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: obj.GetObjectKind().GroupVersionKind().Kind},
		UserInfo: authenticationv1.UserInfo{Username: user}, Object: runtime.RawExtension{Raw: raw}}})
}

// An owner reference that would keep an object from being queued counts
// only when the owner's controller made the object, and the owner exists
// and is queued itself; otherwise the object is refused, naming the owner.
// (A Pod naming a Job it does not belong to, or one that does not exist,
// ran unqueued.)
func TestOwnersVouch(t *testing.T) {
	yes := true
	ownedBy := func(kind, apiVersion, name string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes}}
	}
	queued := MakeJob("queued", "ns").Queue("q").Obj()
	queued.UID = "u-queued"
	free := MakeJob("free", "ns").Obj()
	free.UID = "u-free"
	// JobSet's CRD is not installed: the API server serves no such kind.
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = jobsetv1.AddToScheme(scheme)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(batchv1.SchemeGroupVersion.WithKind("Job"), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(queued, free).Build()
	owners := &integration.Owners{Reader: c, Live: c, Kinds: map[string]integration.Owner{
		"Job": {Controllers: []string{jobController}, New: func() client.Object { return &batchv1.Job{} },
			Queued: func(o client.Object) bool { return jobs.QueueName(o.(*batchv1.Job), false) != "" }},
		"JobSet": {Controllers: []string{"jobset-controller"}, New: jobsets.Kind{}.New,
			Queued: func(client.Object) bool { return true }},
	}}
	pod := func(refs []metav1.OwnerReference) client.Object {
		p := MakePod("p", "ns").Obj()
		p.Kind, p.OwnerReferences = "Pod", refs
		return p
	}
	h := integration.NewHolder(pods.Kind{Default: true}).Vouching(owners)
	for _, tc := range []struct {
		name string
		user string
		obj  client.Object
		want string // in the refusal; "" lets it through
	}{
		{"a Job's Pod, made by the Job controller", jobController, pod(ownedBy("Job", "batch/v1", "queued", "u-queued")), ""},
		{"a Pod naming a Job, made by its user", "mallory", pod(ownedBy("Job", "batch/v1", "queued", "u-queued")),
			"Pod p: metadata.ownerReferences: its controller is Job queued, but only the Job controller makes the Pods of a Job (not mallory)"},
		{"a Pod naming a Job that does not exist", jobController, pod(ownedBy("Job", "batch/v1", "gone", "u-gone")),
			"its controller is Job gone (uid u-gone), which does not exist"},
		{"a Pod naming a Job of another UID", jobController, pod(ownedBy("Job", "batch/v1", "queued", "u-old")), "which does not exist"},
		{"a Pod of a Job that is not queued", jobController, pod(ownedBy("Job", "batch/v1", "free", "u-free")),
			"its controller is Job free, which is not queued"},
		{"a Pod of a ReplicaSet: queued itself", "mallory", pod(ownedBy("ReplicaSet", "apps/v1", "rs", "u-rs")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := create(t, h, tc.user, tc.obj)
			switch {
			case tc.want == "" && !resp.Allowed:
				t.Errorf("refused: %s", resp.Result.Message)
			case tc.want != "" && (resp.Allowed || !strings.Contains(resp.Result.Message, tc.want)):
				t.Errorf("allowed %v, %q; want refused with %q", resp.Allowed, resp.Result.Message, tc.want)
			}
		})
	}
	job := MakeJob("forged", "ns").Obj()
	job.Kind, job.OwnerReferences = "Job", ownedBy("JobSet", "jobset.x-k8s.io/v1alpha2", "train", "u-js")
	jh := integration.NewHolder(jobs.Kind{Default: true}).Vouching(owners)
	if resp := create(t, jh, "mallory", job); resp.Allowed || !strings.Contains(resp.Result.Message, "only the JobSet controller makes the Jobs of a JobSet") {
		t.Errorf("a Job naming a JobSet, made by its user: %v %q", resp.Allowed, resp.Result.Message)
	}
	if resp := create(t, jh, "jobset-controller", job); resp.Allowed || !strings.Contains(resp.Result.Message, "which does not exist") {
		t.Errorf("a Job naming a JobSet where JobSets are not served: %v %q", resp.Allowed, resp.Result.Message)
	}
}

// Where everything is queued, an object that asks for no queue is created
// held, and labelled with LocalQueue "default": the label says so to its
// user, to berth's reconcilers and to the policies that guard queued
// objects.
func TestHolderLabelsWhatItQueuesByDefault(t *testing.T) {
	for _, tc := range []struct {
		kind integration.Kind
		obj  client.Object
	}{
		{jobs.Kind{Default: true}, MakeJob("j", "ns").Obj()},
		{jobsets.Kind{Default: true}, MakeJobSet("js", "ns").ReplicatedJob("w", 1, 1).Obj()},
		{pods.Kind{Default: true}, MakePod("p", "ns").Obj()},
	} {
		resp := create(t, integration.NewHolder(tc.kind), "alice", tc.obj)
		patched := false
		for _, op := range resp.Patches {
			var labels map[string]string
			if op.Path == "/metadata/labels" && json.Unmarshal(mustJSON(t, op.Value), &labels) == nil &&
				labels[berthv1.QueueNameLabel] == integration.DefaultLocalQueue {
				patched = true
			}
		}
		if !resp.Allowed || !patched {
			t.Errorf("%T: allowed %v, patches %+v; want the label of LocalQueue default", tc.obj, resp.Allowed, resp.Patches)
		}
	}
	// One that asks for a queue keeps it, and its labels are not rewritten.
	resp := create(t, integration.NewHolder(jobs.Kind{Default: true}), "alice", MakeJob("j", "ns").Queue("q").Obj())
	for _, op := range resp.Patches {
		if op.Path == "/metadata/labels" {
			t.Errorf("a Job asking for a queue had its labels patched: %+v", op)
		}
	}
}

// Where everything is queued, a held Job whose user takes its queue label
// off (to move it, which the guard allows while it is held) gets the
// default queue's back in the same write: it is never left unqueued.
func TestHolderKeepsADefaultQueuedJobQueued(t *testing.T) {
	old := MakeJob("j", "ns").Queue("other").Suspend(true).Obj()
	obj := MakeJob("j", "ns").Suspend(true).Obj()
	delete(obj.Labels, berthv1.QueueNameLabel)
	raw, _ := json.Marshal(obj)
	oldRaw, _ := json.Marshal(old)
	resp := integration.NewHolder(jobs.Kind{Default: true}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: oldRaw}}})
	var labels map[string]string
	for _, op := range resp.Patches {
		if op.Path == "/metadata/labels" {
			_ = json.Unmarshal(mustJSON(t, op.Value), &labels)
		}
	}
	if !resp.Allowed || labels[berthv1.QueueNameLabel] != integration.DefaultLocalQueue {
		t.Errorf("allowed %v, labels patched to %v; want LocalQueue default's label back", resp.Allowed, labels)
	}
}
