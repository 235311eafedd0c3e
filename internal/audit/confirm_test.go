package audit

import (
	"context"
	"testing"

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
		if got := a.confirm(context.Background(), seen); len(got) != tc.want {
			t.Errorf("%s: kept %s; want %d", tc.name, rules(got), tc.want)
		}
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
