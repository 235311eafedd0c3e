package topology

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

func TestNodeOf(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"rack": "r1"}},
		Spec: corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{"cpu": resource.MustParse("8"), "pods": resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	got := NodeOf(n, map[string]int64{"cpu": 2500, "pods": 3000})
	if !got.Ready || !got.Unschedulable || got.Free["cpu"] != 5500 || got.Free["pods"] != 107000 || got.Labels["rack"] != "r1" {
		t.Errorf("node %+v", got)
	}
	since := metav1.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	n.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: since}
	if got := NodeOf(n, nil); got.Ready || !got.NotReadySince.Equal(since.Time) {
		t.Errorf("node not Ready since %v: %+v", since, got)
	}
}

func TestPodUsage(t *testing.T) {
	pod := func(node string, phase corev1.PodPhase, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": resource.MustParse("1500m")}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	if u := PodUsage(pod("n1", corev1.PodRunning, nil)); u["cpu"] != 1500 || u["pods"] != 1000 {
		t.Errorf("running pod: %v", u)
	}
	for name, p := range map[string]*corev1.Pod{
		"unbound":   pod("", corev1.PodPending, nil),
		"succeeded": pod("n1", corev1.PodSucceeded, nil),
		"failed":    pod("n1", corev1.PodFailed, nil),
		"placed":    pod("n1", corev1.PodRunning, map[string]string{berthv1.TopologyPlacedLabel: "true"}),
	} {
		if u := PodUsage(p); u != nil {
			t.Errorf("%s pod counted: %v", name, u)
		}
	}
}
