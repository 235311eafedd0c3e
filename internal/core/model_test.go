package core_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/topology"
)

// Workloads ask for the same only when every part an admission looks at is
// alike; names and ages do not count.
func TestSameDemand(t *testing.T) {
	base := func(name string) *WorkloadWrapper {
		return MakeWorkload(name, "cq").Priority(1).NamespaceLabels(labels.Set{"team": "a"}).
			PodSet("main", 2).Request("cpu", "1").NodeSelector("zone", "z1")
	}
	a := base("a").Obj()
	if !core.SameDemand(a, base("b").Created(time.Hour).Obj()) {
		t.Error("two workloads differing in name and age only do not ask for the same")
	}
	for what, b := range map[string]*core.Workload{
		"queue":           MakeWorkload("b", "other").Priority(1).NamespaceLabels(labels.Set{"team": "a"}).PodSet("main", 2).Request("cpu", "1").NodeSelector("zone", "z1").Obj(),
		"priority":        base("b").Priority(2).Obj(),
		"namespace label": base("b").NamespaceLabels(labels.Set{"team": "b"}).Obj(),
		"count":           MakeWorkload("b", "cq").Priority(1).NamespaceLabels(labels.Set{"team": "a"}).PodSet("main", 3).Request("cpu", "1").NodeSelector("zone", "z1").Obj(),
		"request":         base("b").Request("cpu", "2").Obj(),
		"node selector":   base("b").NodeSelector("zone", "z2").Obj(),
		"toleration":      base("b").Toleration(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists}).Obj(),
		"topology":        base("b").Topology(topology.Required, "rack").Obj(),
		"steerable":       base("b").Steerable().Obj(),
		"pod sets":        base("b").PodSet("extra", 1).Obj(),
	} {
		if core.SameDemand(a, b) {
			t.Errorf("workloads differing in %s ask for the same", what)
		}
	}
}
