package cli

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
)

func TestParseQueueKind(t *testing.T) {
	for in, want := range map[string]string{"cq": "ClusterQueue", "ClusterQueue": "ClusterQueue", "lq": "LocalQueue",
		"queue": "LocalQueue", "wl": "Workload", "workloads": "Workload", "Job": "Job",
		"jobset": "JobSet", "sts": "StatefulSet", "StatefulSets": "StatefulSet", "trainjob": "TrainJob"} {
		if got, err := parseQueueKind(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := parseQueueKind("deployment"); err == nil || !strings.Contains(err.Error(), "clusterqueue (cq), localqueue (lq), workload (wl), job, jobset, statefulset (sts) or trainjob") {
		t.Errorf("deployment: %v, want an error naming what is accepted", err)
	}
}

// An object queued with its owner (a JobSet's Job, a RayJob's RayCluster)
// has no Workload of its own: berth why and stop say whose Workload counts
// it, and how to ask about that one.
func TestAnObjectQueuedWithItsOwnerNamesItsOwnersWorkload(t *testing.T) {
	yes := true
	js := &jobsetv1.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "team", UID: "js-uid"}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "big-workers-0", Namespace: "team",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "big", UID: "js-uid", Controller: &yes}}}}
	lone := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "lone", Namespace: "team"}}
	wl := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "jobset-big-1a2b3", Namespace: "team",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "big", UID: "js-uid", Controller: &yes}}}}
	// A mapper that knows the kinds by name, as an API server's discovery does.
	scheme := controller.Scheme()
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(scheme)).
		WithObjects(js, job, lone, wl).Build()

	_, err := findWorkload(context.Background(), c, queueRef{kind: "Job", name: "big-workers-0", namespace: "team"})
	if err == nil || !strings.Contains(err.Error(), "has no Workload of its own: it is queued with its JobSet big (Workload jobset-big-1a2b3: berth why jobset big -n team)") {
		t.Errorf("a JobSet's Job: %v", err)
	}
	_, err = findWorkload(context.Background(), c, queueRef{kind: "Job", name: "lone", namespace: "team"})
	if err == nil || !strings.Contains(err.Error(), "not queued by berth") {
		t.Errorf("a Job of its own: %v", err)
	}
	if got, err := findWorkload(context.Background(), c, queueRef{kind: "JobSet", name: "big", namespace: "team"}); err != nil || got.Name != wl.Name {
		t.Errorf("the JobSet: %v %v", got, err)
	}
}
