package dashboard_test

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

func workerCluster(name string, conds ...metav1.Condition) berthv1.WorkerCluster {
	return berthv1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: berthv1.WorkerClusterStatus{Conditions: conds}}
}

// Each worker with whether berth reaches it and why not, the configs that
// send work there and how many of its workloads run; a name a config lists
// without a WorkerCluster is shown as such; one worker's own list is the
// latest admitted first, no finished or unadmitted ones.
func TestWorkersSayWhatRunsWhere(t *testing.T) {
	at := func(s int64) metav1.Time { return metav1.NewTime(time.Unix(s, 0)) }
	wcs := []berthv1.WorkerCluster{
		workerCluster("east", metav1.Condition{Type: berthv1.WorkerClusterActive, Status: "True", Reason: "Connected", LastTransitionTime: at(1)}),
		workerCluster("west", metav1.Condition{Type: berthv1.WorkerClusterActive, Status: "False", Reason: "Unreachable",
			Message: "dial tcp: refused", LastTransitionTime: at(2)}),
		workerCluster("new"),
	}
	mccs := []berthv1.MultiClusterConfig{
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: berthv1.MultiClusterConfigSpec{Clusters: []string{"east", "gone"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: berthv1.MultiClusterConfigSpec{Clusters: []string{"east", "west"}}},
	}
	admitted := func(name string, s int64) berthv1.Workload {
		wl := MakeWorkload(name, "ns").Reserved("cq").RunsOn("east").Obj()
		wl.Status.Conditions[0].LastTransitionTime = at(s)
		return *wl
	}
	done := admitted("done", 9)
	workload.SetFinished(&done, "Succeeded", "", time.Unix(10, 0))
	wls := []berthv1.Workload{admitted("a-early", 3), admitted("z-late", 5), done, *MakeWorkload("waiting", "ns").RunsOn("east").Obj(),
		*MakeWorkload("here", "ns").Reserved("cq").Obj()}

	all := dashboard.Workers(wcs, mccs, wls, "", 10)
	var names []string
	for _, w := range all {
		names = append(names, w.Name)
	}
	if !slices.Equal(names, []string{"east", "gone", "new", "west"}) {
		t.Fatalf("workers %v; want east, gone, new, west", names)
	}
	east, gone, fresh, west := all[0], all[1], all[2], all[3]
	if !east.Active || east.Reason != "" || east.Running != 2 || !slices.Equal(east.Configs, []string{"a", "b"}) || east.Workloads != nil {
		t.Errorf("east: %+v; want Active, 2 running, configs a and b, no list (not asked)", east)
	}
	if west.Active || west.Reason != "Unreachable" || west.Message != "dial tcp: refused" || !west.Since.Equal(time.Unix(2, 0)) {
		t.Errorf("west: %+v; want Unreachable, saying why, since 2", west)
	}
	if gone.Active || gone.Reason != "NotFound" || !slices.Equal(gone.Configs, []string{"b"}) {
		t.Errorf("gone: %+v; want NotFound, listed by b", gone)
	}
	if fresh.Active || fresh.Reason != "Pending" {
		t.Errorf("new: %+v; want Pending (not tried yet)", fresh)
	}

	one := dashboard.Workers(wcs, mccs, wls, "east", 10)
	if len(one) != 1 || !slices.Equal(one[0].Workloads, []dashboard.WorkloadRef{{Workload: "ns/z-late", ClusterQueue: "cq"}, {Workload: "ns/a-early", ClusterQueue: "cq"}}) {
		t.Errorf("east alone: %+v; want the latest admitted first", one)
	}
	if one := dashboard.Workers(wcs, mccs, wls, "east", 1); len(one[0].Workloads) != 1 || one[0].Running != 2 {
		t.Errorf("east, limit 1: %+v; want one listed of 2 running", one)
	}
	if none := dashboard.Workers(wcs, mccs, wls, "nowhere", 10); len(none) != 0 {
		t.Errorf("an unknown worker: %+v; want none", none)
	}
}
