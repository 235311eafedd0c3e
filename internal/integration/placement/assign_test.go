package placement

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

var assignment = &berthv1.TopologyAssignment{Levels: []string{"rack", "host"}, Domains: []berthv1.TopologyDomainAssignment{
	{Values: []string{"r1", "h1"}, Count: 2}, {Values: []string{"r1", "h2"}, Count: 1}}}

func makePods(n int, sel map[string]string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{NodeSelector: sel}})
	}
	return out
}

func TestEachDomainGetsItsCount(t *testing.T) {
	got := Assign(assignment, nil, makePods(4, nil))
	if len(got) != 3 {
		t.Fatalf("%d pods let go for 3 places", len(got))
	}
	count := map[string]int{}
	for _, u := range got {
		count[u.NodeSelector["rack"]+"/"+u.NodeSelector["host"]]++
	}
	if count["r1/h1"] != 2 || count["r1/h2"] != 1 {
		t.Errorf("per domain %v, want r1/h1: 2, r1/h2: 1", count)
	}
}

// A pod that went is replaced in the domain it left.
func TestReplacementGoesWhereThePodLeft(t *testing.T) {
	placed := append(makePods(2, map[string]string{"rack": "r1", "host": "h1"}), makePods(0, nil)...)
	got := Assign(assignment, placed, makePods(2, nil))
	if len(got) != 1 || got[0].NodeSelector["host"] != "h2" {
		t.Errorf("got %+v; want one pod, to h2", got)
	}
}

func TestLift(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "a"},
		SchedulingGates: []corev1.PodSchedulingGate{{Name: berthv1.TopologyGate}, {Name: "other"}}}}
	Lift(p, map[string]string{"rack": "r1"})
	if Gated(p) || len(p.Spec.SchedulingGates) != 1 || p.Spec.NodeSelector["pool"] != "a" || p.Spec.NodeSelector["rack"] != "r1" {
		t.Errorf("lifted pod %+v", p.Spec)
	}
}
