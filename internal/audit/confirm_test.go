package audit

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

// A Job the cache shows running unadmitted counts only if a consistent read
// shows it so too; a dismissed one is looked at again after a new grace.
func TestConfirmRunningKeepsOnlyWhatAConsistentReadShows(t *testing.T) {
	job := MakeJob("j", "ns").Queue("q").Obj()
	job.UID = "job-uid"
	job.Spec.Suspend = new(bool)
	wl := admitted("w", "cq", "1", now)
	yes := true
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid", Controller: &yes}}
	pending := wl.DeepCopy()
	pending.Status = berthv1.WorkloadStatus{}
	found := []Violation{{At: now, Rule: RunsWithoutQuota, Objects: []string{"Job ns/j"}}}
	for _, tc := range []struct {
		name   string
		stored []client.Object
		want   int
	}{
		{"the API server holds its admitted Workload", []client.Object{job, wl}, 0},
		{"the API server holds it unadmitted", []client.Object{job, pending}, 1},
		{"the Job is gone", []client.Object{wl}, 0},
	} {
		c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(tc.stored...).WithStatusSubresource().Build()
		a := &Auditor{client: c, track: NewTracker(0), scope: Scope{NamespacePrefix: "ns"}}
		a.track.reported["Job ns/j"] = true
		if got := a.confirmRunning(context.Background(), found); len(got) != tc.want {
			t.Errorf("%s: kept %s; want %d", tc.name, rules(got), tc.want)
		}
		if again := !a.track.reported["Job ns/j"]; again != (tc.want == 0) {
			t.Errorf("%s: looked at again %v", tc.name, again)
		}
	}
}

// A Pod the cache shows bound without quota counts only if the API server
// shows it so too.
func TestConfirmRunningReadsPodsAgain(t *testing.T) {
	pod := MakePod("p", "ns").Node("node-1").Obj()
	pod.UID = "pod-uid"
	wl := admitted("w", "cq", "1", now)
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pod-uid"}}
	pending := wl.DeepCopy()
	pending.Status = berthv1.WorkloadStatus{}
	found := []Violation{{At: now, Rule: RunsWithoutQuota, Objects: []string{"Pod ns/p"}}}
	for _, tc := range []struct {
		name   string
		stored []client.Object
		want   int
	}{
		{"the API server holds its admitted Workload", []client.Object{pod, wl}, 0},
		{"the API server holds it unadmitted", []client.Object{pod, pending}, 1},
		{"the Pod is gone", []client.Object{pending}, 0},
	} {
		c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(tc.stored...).WithStatusSubresource().Build()
		a := &Auditor{client: c, track: NewTracker(0), scope: Scope{NamespacePrefix: "ns"}}
		a.track.reported["Pod ns/p"] = true
		if got := a.confirmRunning(context.Background(), found); len(got) != tc.want {
			t.Errorf("%s: kept %s; want %d", tc.name, rules(got), tc.want)
		}
	}
}
