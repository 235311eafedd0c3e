package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// controlledBy makes p's controller StatefulSet sts.
func controlledBy(p metav1.Object, sts string) {
	p.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts, Controller: ptr.To(true)}})
}

// A LeaderWorkerSet's leader (its group's index from the StatefulSet's
// ordinal, as LeaderWorkerSet's webhook may label it only after berth's)
// and its workers (labelled with the index) are one pod group of the
// LeaderWorkerSet's size; Hold labels each with it.
func TestLeaderWorkerSetGroup(t *testing.T) {
	leader := pod(map[string]string{berthv1.QueueNameLabel: "q", lwsNameLabel: "infer", lwsWorkerIndexLabel: "0", podIndexLabel: "3"})
	leader.Annotations = map[string]string{lwsSizeAnnotation: "4"}
	controlledBy(leader, "infer")
	worker := pod(map[string]string{berthv1.QueueNameLabel: "q", lwsNameLabel: "infer", lwsGroupIndexLabel: "3", podIndexLabel: "1"})
	worker.Annotations = map[string]string{lwsSizeAnnotation: "4"}
	controlledBy(worker, "infer-3")
	for name, p := range map[string]*corev1.Pod{"leader": leader, "worker": worker} {
		(Kind{}).Hold(p)
		g, total, err := Group(p)
		if p.GetLabels()[berthv1.PodGroupNameLabel] != "lws-infer-3" || g != "lws-infer-3" || total != 4 || err != nil {
			t.Errorf("%s: label %q, group %q of %d (%v); want lws-infer-3 of 4", name, p.GetLabels()[berthv1.PodGroupNameLabel], g, total, err)
		}
	}

	long := pod(map[string]string{lwsNameLabel: strings.Repeat("x", 60), lwsGroupIndexLabel: "12"})
	long.Annotations = map[string]string{lwsSizeAnnotation: "2"}
	if g, _, _ := LeaderWorkerSetGroup(long); len(g) > 63 || !strings.HasPrefix(g, "lws-xxx") {
		t.Errorf("a long name: group %q; want it fit in a label value", g)
	}
	bad := pod(map[string]string{lwsNameLabel: "infer", lwsGroupIndexLabel: "0"})
	bad.Annotations = map[string]string{lwsSizeAnnotation: "0"}
	if _, _, err := LeaderWorkerSetGroup(bad); err == nil || !strings.Contains(err.Error(), `annotation leaderworkerset.sigs.k8s.io/size="0"`) {
		t.Errorf("size 0: %v; want refused, naming the annotation", err)
	}
	if g, _, _ := LeaderWorkerSetGroup(pod(map[string]string{lwsNameLabel: "infer"})); g != "" {
		t.Errorf("no index: group %q; want none", g)
	}
}

// A StatefulSet's pod in its StatefulSet's group needs no count: the
// StatefulSet's replicas are; one naming another group still does.
func TestStatefulSetGroup(t *testing.T) {
	p := pod(map[string]string{berthv1.PodGroupNameLabel: StatefulSetGroup("db")})
	controlledBy(p, "db")
	if g, total, err := Group(p); g != "statefulset-db" || total != 0 || err != nil {
		t.Errorf("group %q of %d (%v); want statefulset-db, its size from the StatefulSet", g, total, err)
	}
	controlledBy(p, "other")
	if _, _, err := Group(p); err == nil {
		t.Error("a pod naming another StatefulSet's group without a count was accepted")
	}
	if g := StatefulSetGroup(strings.Repeat("s", 80)); len(g) > 63 {
		t.Errorf("a long name: group %q; want it fit in a label value", g)
	}
}
