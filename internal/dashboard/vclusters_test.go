package dashboard_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/vcluster/translate"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

func syncer(vc, ns string) corev1.ServiceAccount {
	return corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "berth-vcluster-" + vc, Namespace: ns,
		Labels: map[string]string{translate.Label: vc}}}
}

func hostPod(name, vc, ns string, phase corev1.PodPhase) corev1.Pod {
	p := *MakePod(name, ns).Label(translate.Label, vc).Obj()
	p.Status.Phase = phase
	return p
}

// Each virtual cluster, found by its syncer's account, with its host
// namespace's queues and workloads and its own pods there by phase: not
// another's pods, not pods of the namespace it did not sync, not finished
// workloads.
func TestVirtualClustersCountWhatIsTheirs(t *testing.T) {
	done := *MakeWorkload("done", "vcluster-a").Reserved("cq").Obj()
	workload.SetFinished(&done, "Succeeded", "", time.Unix(1, 0))
	got := dashboard.VirtualClusters(
		[]corev1.ServiceAccount{syncer("b", "vcluster-b"), syncer("a", "vcluster-a"),
			{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "vcluster-a"}}},
		[]berthv1.LocalQueue{*MakeLocalQueue("tenant", "vcluster-a", "shared").Obj(), *MakeLocalQueue("other", "elsewhere", "shared").Obj()},
		[]corev1.Pod{hostPod("p1", "a", "vcluster-a", corev1.PodRunning), hostPod("p2", "a", "vcluster-a", corev1.PodRunning),
			hostPod("p3", "a", "vcluster-a", corev1.PodPending), hostPod("q1", "b", "vcluster-b", corev1.PodSucceeded),
			hostPod("stray", "b", "vcluster-a", corev1.PodRunning), *MakePod("own", "vcluster-a").Obj()},
		[]berthv1.Workload{*MakeWorkload("w1", "vcluster-a").Reserved("cq").Obj(), *MakeWorkload("w2", "vcluster-a").Obj(),
			*MakeWorkload("w3", "vcluster-a").Obj(), done, *MakeWorkload("x", "elsewhere").Obj()},
	)
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("virtual clusters %+v; want a and b", got)
	}
	a, b := got[0], got[1]
	if a.HostNamespace != "vcluster-a" || !slices.Equal(a.Queues, []string{"tenant → shared"}) || a.Pending != 2 || a.Admitted != 1 {
		t.Errorf("a: %+v; want host namespace vcluster-a, queue tenant → shared, 2 pending, 1 admitted", a)
	}
	if want := map[string]int{"Running": 2, "Pending": 1}; !maps.Equal(a.Pods, want) {
		t.Errorf("a's pods %v; want %v", a.Pods, want)
	}
	if want := map[string]int{"Succeeded": 1}; !maps.Equal(b.Pods, want) || b.Queues != nil || b.Pending != 0 {
		t.Errorf("b: %+v; want one pod Succeeded, no queue, nothing pending", b)
	}
}
