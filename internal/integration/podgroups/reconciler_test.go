package podgroups

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/pods"
)

// reconcilerOn is a Reconciler whose cache holds cached and whose API
// server holds stored (both writable, as the reconciler writes through its
// client): after an API-server restart the two can differ.
func reconcilerOn(t *testing.T, cached, stored []client.Object) (*Reconciler, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := berthv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	index := func(o client.Object) []string {
		if g, _, _ := pods.Group(o); g != "" {
			return []string{g}
		}
		return nil
	}
	build := func(objs []client.Object) client.Client {
		return fake.NewClientBuilder().WithScheme(scheme).WithIndex(&corev1.Pod{}, groupIndex, index).
			WithStatusSubresource(&berthv1.Workload{}).WithObjects(objs...).Build()
	}
	live := build(stored)
	return &Reconciler{client: build(cached), live: live, rec: events.NewFakeRecorder(100),
		clock: clocktesting.NewFakeClock(now)}, live
}

// objects are the group's Pods, in queue "q" as their Workload is, and
// the Workload.
func objects(ps []*corev1.Pod, wl *berthv1.Workload) []client.Object {
	out := []client.Object{wl.DeepCopy()}
	for _, p := range ps {
		p = p.DeepCopy()
		p.Labels[berthv1.QueueNameLabel] = "q"
		out = append(out, p)
	}
	return out
}

func gated(t *testing.T, c client.Reader, name string) bool {
	t.Helper()
	var p corev1.Pod
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return pods.Gated(&p)
}

// The cache says the group is admitted, the API server that it was since
// evicted: no Pod is started.
func TestGroupStartsOnlyOnWhatTheAPIServerSays(t *testing.T) {
	ps := makePods(8, "1", nil)
	r, _ := reconcilerOn(t, objects(ps, admitted(makeWorkload(ps))), objects(ps, stopping(makeWorkload(ps))))
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "g"}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !gated(t, r.client, p.Name) {
			t.Fatalf("pod %s started on a cached admission the API server no longer has", p.Name)
		}
	}

	// Both say admitted: the group starts.
	r, _ = reconcilerOn(t, objects(ps, admitted(makeWorkload(ps))), objects(ps, admitted(makeWorkload(ps))))
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "g"}}); err != nil {
		t.Fatal(err)
	}
	if gated(t, r.client, "p0") {
		t.Fatal("an admitted group did not start")
	}
}

// The cache says the evicted group's Pods are gone, the API server that
// they still run: the quota is kept.
func TestGroupReleasesOnlyOnWhatTheAPIServerSays(t *testing.T) {
	waiting := makePods(8, "1", nil)
	runs := makePods(8, "1", (*podBuilder).Started)
	wl := stopping(makeWorkload(waiting))
	r, live := reconcilerOn(t, objects(waiting, wl), objects(runs, wl))
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "g"}}); err != nil {
		t.Fatal(err)
	}
	var got berthv1.Workload
	if err := live.Get(context.Background(), client.ObjectKeyFromObject(wl), &got); err != nil {
		t.Fatal(err)
	}
	var cached berthv1.Workload
	if err := r.client.Get(context.Background(), client.ObjectKeyFromObject(wl), &cached); err != nil {
		t.Fatal(err)
	}
	if cached.Status.Admission == nil {
		t.Fatal("the quota of a group whose Pods still run was given back")
	}
}

// A Pod that names a StatefulSet as its controller without being its
// (an owner reference made up, with another UID) is not of its group: it is
// neither started in its admission nor taken for a sign that it is gone.
func TestStatefulSetGroupIsOnlyItsOwnPods(t *testing.T) {
	db := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid-db"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)}}
	own := func(p *corev1.Pod, uid types.UID) *corev1.Pod {
		p.Labels[berthv1.PodGroupNameLabel] = pods.StatefulSetGroup("db")
		delete(p.Annotations, berthv1.PodGroupTotalCountAnnotation)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: uid, Controller: ptr.To(true)}}
		return p
	}
	ps := []*corev1.Pod{own(makePod("db-0", "1").Obj(), db.UID), own(makePod("intruder", "1").Obj(), "uid-other")}
	wl := admitted(sized(ps, 2))
	wl.Name = WorkloadName(pods.StatefulSetGroup("db"))
	wl.OwnerReferences = append(wl.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: db.UID})
	objs := append(objects(ps, wl), db)
	r, live := reconcilerOn(t, objs, objs)
	r.statefulSets = true
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: pods.StatefulSetGroup("db")}}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if gated(t, r.client, "db-0") || !gated(t, r.client, "intruder") {
		t.Errorf("db-0 gated=%v, intruder gated=%v; want only the StatefulSet's own Pod started",
			gated(t, r.client, "db-0"), gated(t, r.client, "intruder"))
	}
	var got berthv1.Workload
	if err := live.Get(context.Background(), client.ObjectKeyFromObject(wl), &got); err != nil {
		t.Fatalf("the StatefulSet's Workload: %v; want it kept", err)
	}
}
