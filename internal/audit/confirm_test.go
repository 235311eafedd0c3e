package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
	. "github.com/berth-dev/berth/test/fixtures"
)

// A quota excess the cache showed counts only if a consistent read shows
// it too: one that the API server does not hold is dismissed, and counted.
func TestConfirmKeepsOnlyWhatAConsistentReadShows(t *testing.T) {
	cq := MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "4").Obj()).Obj()
	a1, a2 := admitted("a1", "cq", "3", now), admitted("a2", "cq", "3", now)
	seen := Quota(Snapshot{At: now, ClusterQueues: []*berthv1.ClusterQueue{cq}, Workloads: []*berthv1.Workload{a1, a2}})
	if len(seen) != 1 {
		t.Fatalf("the cache's view: %s; want one excess", rules(seen))
	}
	for _, tc := range []struct {
		name   string
		stored []client.Object
		want   int
	}{
		{"the API server holds only one of them", []client.Object{cq, a1}, 0},
		{"the API server holds both", []client.Object{cq, a1, a2}, 1},
		// a1 finished and a3 came in its place: still over, by other workloads.
		{"the API server holds another excess in the same queue", []client.Object{cq, a2, admitted("a3", "cq", "2", now)}, 1},
	} {
		c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(tc.stored...).WithStatusSubresource().Build()
		a := &Auditor{client: c, scope: Scope{NamespacePrefix: "ns"}}
		got, dismissed := a.confirm(context.Background(), seen)
		if len(got) != tc.want || dismissed != len(seen)-tc.want {
			t.Errorf("%s: kept %s, dismissed %d; want %d kept", tc.name, rules(got), dismissed, tc.want)
		}
	}
}

// An API server that does not answer neither confirms nor dismisses what a
// cache showed: during an outage the caches stay as stale as it left them,
// so a cache's view then proves nothing. A Job is asked about again at the
// next tick, still counted from when it was first seen, so one that really
// runs unadmitted is reported as soon as the API server answers.
func TestConfirmWaitsForAnAnswer(t *testing.T) {
	down := interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewServiceUnavailable("the API server is down")
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return apierrors.NewServiceUnavailable("the API server is down")
		},
	}
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithInterceptorFuncs(down).Build()
	a := &Auditor{client: c, track: NewTracker(10 * time.Second), scope: Scope{NamespacePrefix: "ns"}}

	cq := MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "4").Obj()).Obj()
	seen := Quota(Snapshot{At: now, ClusterQueues: []*berthv1.ClusterQueue{cq},
		Workloads: []*berthv1.Workload{admitted("a1", "cq", "3", now), admitted("a2", "cq", "3", now)}})
	if got, dismissed := a.confirm(context.Background(), seen); len(got) != 0 || dismissed != 0 {
		t.Errorf("quota with no answer: kept %s, dismissed %d; want neither", rules(got), dismissed)
	}

	job := MakeJob("j", "ns").Queue("q").Obj()
	job.Spec.Suspend = ptr.To(false)
	s := Snapshot{At: now, Jobs: []*batchv1.Job{job}}
	if got := a.track.Running(s); len(got) != 0 {
		t.Fatalf("reported on first sight: %s", rules(got))
	}
	s.At = now.Add(11 * time.Second)
	found := a.track.Running(s)
	if len(found) != 1 {
		t.Fatalf("after its grace: %s; want it reported", rules(found))
	}
	if got := a.confirmRunning(context.Background(), found); len(got) != 0 {
		t.Errorf("kept %s with no answer from the API server", rules(got))
	}
	s.At = now.Add(12 * time.Second)
	if again := a.track.Running(s); len(again) != 1 || !strings.Contains(again[0].Message, now.Format(time.RFC3339Nano)) {
		t.Errorf("at the next tick: %s; want it reported again, running since it was first seen", rules(again))
	}
}

// A Job or Pod the cache shows running unadmitted counts only if a
// consistent read shows it so too; a dismissed one is looked at again after
// a new grace.
func TestConfirmRunningKeepsOnlyWhatAConsistentReadShows(t *testing.T) {
	yes := true
	job := MakeJob("j", "ns").Queue("q").Obj()
	job.UID = "job-uid"
	job.Spec.Suspend = new(bool)
	pod := MakePod("p", "ns").Node("node-1").Obj()
	pod.UID = "pod-uid"
	for _, run := range []struct {
		object string
		it     client.Object
		owner  metav1.OwnerReference
	}{
		{"Job ns/j", job, metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid", Controller: &yes}},
		{"Pod ns/p", pod, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid"}},
	} {
		wl := admitted("w", "cq", "1", now)
		wl.OwnerReferences = []metav1.OwnerReference{run.owner}
		pending := wl.DeepCopy()
		pending.Status = berthv1.WorkloadStatus{}
		found := []Violation{{At: now, Rule: RunsWithoutQuota, Objects: []string{run.object}}}
		for _, tc := range []struct {
			name   string
			stored []client.Object
			want   int
		}{
			{"the API server holds its admitted Workload", []client.Object{run.it, wl}, 0},
			{"the API server holds it unadmitted", []client.Object{run.it, pending}, 1},
			{"it is gone", []client.Object{pending}, 0},
		} {
			c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(tc.stored...).WithStatusSubresource().Build()
			a := &Auditor{client: c, track: NewTracker(0), scope: Scope{NamespacePrefix: "ns"}}
			a.track.reported[run.object] = true
			if got := a.confirmRunning(context.Background(), found); len(got) != tc.want {
				t.Errorf("%s, %s: kept %s; want %d", run.object, tc.name, rules(got), tc.want)
			}
			if again := !a.track.reported[run.object]; again != (tc.want == 0) {
				t.Errorf("%s, %s: looked at again %v", run.object, tc.name, again)
			}
		}
	}
}

// The confirming read takes the Job before the Workloads: berth admits
// before it lets a Job run, so a Job admitted and started between the two
// reads is seen either suspended or admitted, never running unadmitted.
func TestConfirmRunningReadsTheJobFirst(t *testing.T) {
	job := MakeJob("j", "ns").Queue("q").Obj()
	job.UID = "job-uid"
	job.Spec.Suspend = ptr.To(true)
	wl := MakeWorkload("w", "ns").Obj()
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid"}}
	started := false
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(job, wl).WithStatusSubresource(wl).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil || started {
				return err
			}
			// Right after the Workloads are read, berth admits and starts it.
			started = true
			adm := &berthv1.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(wl), adm); err != nil {
				return err
			}
			adm.Status = admitted("w", "cq", "1", now).Status
			if err := c.Status().Update(ctx, adm); err != nil {
				return err
			}
			run := job.DeepCopy()
			if err := c.Get(ctx, client.ObjectKeyFromObject(job), run); err != nil {
				return err
			}
			run.Spec.Suspend = ptr.To(false)
			return c.Update(ctx, run)
		}}).Build()
	a := &Auditor{client: c, track: NewTracker(0), scope: Scope{NamespacePrefix: "ns"}}
	found := []Violation{{At: now, Rule: RunsWithoutQuota, Objects: []string{"Job ns/j"}}}
	if got := a.confirmRunning(context.Background(), found); len(got) != 0 {
		t.Errorf("kept %s: an admission and start between the two reads was taken for a Job running unadmitted", rules(got))
	}
}
