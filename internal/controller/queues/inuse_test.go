package queues

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

func TestNextFinalizerStep(t *testing.T) {
	now := metav1.Now()
	obj := func(finalizer, deleting bool) *berthv1.ClusterQueue {
		cq := &berthv1.ClusterQueue{}
		if finalizer {
			cq.Finalizers = []string{"example.com/other", InUseFinalizer}
		}
		if deleting {
			cq.DeletionTimestamp = &now
		}
		return cq
	}
	for _, tc := range []struct {
		name              string
		finalizer, delete bool
		users             int
		want              finalizerStep
	}{
		{"new object", false, false, 0, stepAdd},
		{"live object in use", true, false, 3, stepNone},
		{"deleted while in use", true, true, 2, stepHold},
		{"deleted, no longer in use", true, true, 0, stepRemove},
		{"deleted without the finalizer", false, true, 4, stepNone},
	} {
		if got := nextFinalizerStep(obj(tc.finalizer, tc.delete), tc.users); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestTerminatingConditionNamesWhatHoldsIt(t *testing.T) {
	var conds []metav1.Condition
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !setTerminating(&conds, []string{"ns/b", "ns/a"}, 3, t0) {
		t.Fatal("first condition not set")
	}
	if got := conds[0].Message; got != "being deleted; held by 2 admitted workloads until they finish: ns/a, ns/b" {
		t.Errorf("message %q", got)
	}
	if setTerminating(&conds, []string{"ns/a", "ns/b"}, 3, t0.Add(time.Hour)) {
		t.Error("an unchanged condition was rewritten")
	}
	many := []string{"a", "b", "c", "d", "e", "f", "g"}
	if !setTerminating(&conds, many, 3, t0) || !strings.HasSuffix(conds[0].Message, "a, b, c, d, e and 2 more") {
		t.Errorf("message %q", conds[0].Message)
	}
}
