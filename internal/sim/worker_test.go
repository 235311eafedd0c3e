package sim_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/sim"
)

// A stage's delete is skipped only for a version the API server removed as
// it stored it: a finished pod deleted (its grace period made 0), once no
// finalizer holds it. The others still need the simulator's delete, as a
// kubelet's.
func TestGoneWhenStored(t *testing.T) {
	now := metav1.Now()
	grace := func(s int64) *int64 { return &s }
	for name, tc := range map[string]struct {
		meta metav1.ObjectMeta
		want bool
	}{
		"not being deleted":                         {metav1.ObjectMeta{}, false},
		"deleted without a grace period":            {metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: grace(0)}, true},
		"deleted, no grace period given (nil is 0)": {metav1.ObjectMeta{DeletionTimestamp: &now}, true},
		"deleted with a grace period: the kubelet's delete ends it": {
			metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: grace(30)}, false},
		"deleted without a grace period, held by a finalizer": {
			metav1.ObjectMeta{DeletionTimestamp: &now, DeletionGracePeriodSeconds: grace(0), Finalizers: []string{"batch.kubernetes.io/job-tracking"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := sim.GoneWhenStored(&corev1.Pod{ObjectMeta: tc.meta}); got != tc.want {
				t.Errorf("GoneWhenStored = %v, want %v", got, tc.want)
			}
		})
	}
}
