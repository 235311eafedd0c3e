package jobs

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/internal/written"
	. "github.com/berth-dev/berth/test/fixtures"
)

// reader answers every Get with one Workload: what a replica read from the
// API server before it was paused.
type reader struct{ wl *berthv1.Workload }

func (r reader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.wl.DeepCopyInto(obj.(*berthv1.Workload))
	return nil
}
func (r reader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// A Job admitted and stopped before it ever started (preempted at once,
// say) is written before its quota is given back, so that a replica that
// led before, paused with a copy of the Job from when its Workload was
// admitted, cannot start it afterwards: its start fails on the Job's
// version. (Unfenced, the chaos benchmark once caught such a Job running
// ten seconds without quota.)
func TestAStaleStartFailsOnceTheStopIsFenced(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{batchv1.AddToScheme, corev1.AddToScheme, berthv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	job := MakeJob("j", "ns").Queue("q").Request("cpu", "1").Obj()
	job.UID, job.Spec.Suspend = "job-1", &yes
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}
	wl := NewWorkload(job, "q", nil, "")
	wl.UID = "wl-1"
	workload.SetAdmitted(wl, &berthv1.Admission{ClusterQueue: "cq", PodSetAssignments: []berthv1.PodSetAssignment{{Name: "main", Count: 1,
		Flavors: map[corev1.ResourceName]string{"cpu": "rf"}, ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}, nil, now)
	admitted := wl.DeepCopy()
	workload.SetStopping(wl, "Preempted", "preempted by ns/urgent", now, false)

	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job, wl, MakeResourceFlavor("rf").Obj()).
		WithStatusSubresource(&berthv1.Workload{}, &batchv1.Job{}).Build()
	var stale batchv1.Job // the paused replica's copy
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), &stale); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{client: c, live: c, rec: events.NewFakeRecorder(10), clock: clocktesting.NewFakeClock(now), written: written.New(time.Now)}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}}
	got := func() (*batchv1.Job, *berthv1.Workload) {
		var j batchv1.Job
		var w berthv1.Workload
		if err := c.Get(context.Background(), req.NamespacedName, &j); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(wl), &w); err != nil {
			t.Fatal(err)
		}
		return &j, &w
	}

	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	j, w := got()
	if j.Annotations[integration.StoppedAnnotation] == "" || !workload.HasQuota(w) {
		t.Fatalf("first look at the stop: annotation %q, quota held %v; want the Job fenced and the quota still held", j.Annotations[integration.StoppedAnnotation], workload.HasQuota(w))
	}

	err := integration.Start(context.Background(), c, reader{admitted}, events.NewFakeRecorder(10), Kind{}, &stale, admitted)
	if !apierrors.IsConflict(err) {
		t.Fatalf("a stale replica's start after the fence: %v; want a conflict", err)
	}

	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	j, w = got()
	if !Suspended(j) || workload.HasQuota(w) || !meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadEvicted) {
		t.Fatalf("after the fence: suspended %v, quota held %v; want the Job suspended and the quota given back", Suspended(j), workload.HasQuota(w))
	}
}
