package integration

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/testenv"
)

// A gang of 6 pods of 4 cpu that requires a rack runs on 3 of the 4 hosts
// of one rack. One of its hosts is deleted: berth gives that host's 2 pods
// the rack's fourth host, deletes them from the lost one, and the Job's
// replacements run there. The workload keeps its admission throughout
// (no eviction, no requeue), and an event says where the pods went.
func TestGangSurvivesADeletedNode(t *testing.T) {
	env := testenv.New(t)
	rackOf, _ := topologyQueue(t, env, 1, 2, 4)
	job := gangJob(env, "gang", 6, integration.RequiredTopologyAnnotation, rackLabel)
	env.Create(t, job)
	before := runningPods(t, env, "gang", 6)
	rack := distinct(before, rackOf)
	lost := before[0]
	if err := env.Kube.CoreV1().Nodes().Delete(ctx, lost, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after := runningPods(t, env, "gang", 6, lost)
	if got := distinct(after, rackOf); !slices.Equal(got, rack) {
		t.Errorf("after %s was deleted the gang runs in racks %v; want %v", lost, got, rack)
	}
	wl := jobWorkload(t, env, job)
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadEvicted); c != nil || wl.Status.RequeueState != nil {
		t.Errorf("the workload was evicted: %+v, requeues %+v", c, wl.Status.RequeueState)
	}
	for _, d := range wl.Status.Admission.PodSetAssignments[0].TopologyAssignment.Domains {
		if slices.Contains(d.Values, lost) {
			t.Errorf("the admission still places pods on %s: %+v", lost, d)
		}
	}
	waitEvent(t, env, wl.Name, "PodsMoved", "its pods on kubernetes.io/hostname "+lost+", which failed, get room on kubernetes.io/hostname ")
	waitForMetrics(t, `berth_node_failure_repairs_total{result="moved"} `)
}
