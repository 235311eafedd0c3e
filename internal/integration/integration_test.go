package integration_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

func TestLabelsAreReadOneWayForEveryKind(t *testing.T) {
	both := map[string]string{berthv1.QueueNameLabel: "b", berthv1.KueueQueueNameLabel: "k",
		berthv1.PriorityClassLabel: "bp", berthv1.KueuePriorityClassLabel: "kp"}
	if q := integration.QueueName(both); q != "b" {
		t.Errorf("queue %q: berth's label goes first", q)
	}
	if l, c := integration.PriorityClassLabel(both); l != berthv1.PriorityClassLabel || c != "bp" {
		t.Errorf("priority class %s=%s: berth's label goes first", l, c)
	}
	kueue := map[string]string{berthv1.KueueQueueNameLabel: "k", berthv1.KueuePriorityClassLabel: "kp"}
	if q := integration.QueueName(kueue); q != "k" {
		t.Errorf("queue %q from Kueue's label", q)
	}
	if l, c := integration.PriorityClassLabel(kueue); l != berthv1.KueuePriorityClassLabel || c != "kp" {
		t.Errorf("priority class %s=%s from Kueue's label", l, c)
	}
}

func TestWorkloadNameIsStableAndFitsAName(t *testing.T) {
	a := integration.WorkloadName("pod", "web", "uid-1")
	if a != integration.WorkloadName("pod", "web", "uid-1") || a == integration.WorkloadName("pod", "web", "uid-2") {
		t.Errorf("name %q: want the same for the same object, another for a new one", a)
	}
	long := integration.WorkloadName("job", strings.Repeat("x", 300), "u")
	if len(long) > 253 || !strings.HasPrefix(long, "job-") {
		t.Errorf("name of a long object: %d characters, %q...", len(long), long[:10])
	}
}

func TestInjectFlavorsAddsLabelsAndTolerationsOnce(t *testing.T) {
	spec := &corev1.PodSpec{NodeSelector: map[string]string{"team": "a"}}
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}
	rf := &berthv1.ResourceFlavor{Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "p"},
		Tolerations: []corev1.Toleration{spot}}}
	integration.InjectFlavors(spec, []*berthv1.ResourceFlavor{rf, rf})
	if spec.NodeSelector["team"] != "a" || spec.NodeSelector["pool"] != "p" || len(spec.Tolerations) != 1 {
		t.Errorf("node selector %v tolerations %v", spec.NodeSelector, spec.Tolerations)
	}
}
