package demo

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	. "github.com/berth-dev/berth/test/fixtures"
)

func borrowing(cq *berthv1.ClusterQueue, cpu string) berthv1.ClusterQueue {
	cq.Status.FlavorsUsage = []berthv1.FlavorUsage{{Name: "default", Resources: []berthv1.ResourceUsage{
		{Name: corev1.ResourceMemory, Total: resource.MustParse("4Gi"), Borrowed: resource.MustParse("1Gi")},
		{Name: corev1.ResourceCPU, Total: resource.MustParse("6"), Borrowed: resource.MustParse(cpu)},
	}}}
	return *cq
}

func job(name, ns, queue string, finished ...batchv1.JobConditionType) batchv1.Job {
	j := MakeJob(name, ns).Queue(queue).Obj()
	j.UID = types.UID(ns + "/" + name)
	for _, t := range finished {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue})
	}
	return *j
}

// workloadOf is the Workload of a Job, admitted or not.
func workloadOf(j batchv1.Job, admitted bool) berthv1.Workload {
	wl := MakeWorkload("job-"+j.Name, j.Namespace).Obj()
	wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID}}
	status := metav1.ConditionFalse
	if admitted {
		status = metav1.ConditionTrue
	}
	wl.Status.Conditions = []metav1.Condition{{Type: berthv1.WorkloadAdmitted, Status: status}}
	return *wl
}

func TestSummarizeCountsEachJobOnceOnItsClusterQueue(t *testing.T) {
	cqs := []berthv1.ClusterQueue{
		borrowing(MakeClusterQueue("team-b").Obj(), "0"),
		borrowing(MakeClusterQueue("team-a").Obj(), "2"),
		borrowing(MakeClusterQueue("unrelated").Obj(), "9"),
	}
	lqs := []berthv1.LocalQueue{*MakeLocalQueue("jobs", "a", "team-a").Obj(), *MakeLocalQueue("jobs", "b", "team-b").Obj()}
	noWorkloadYet := job("new", "a", "jobs")
	waiting := job("waiting", "a", "jobs")
	running := job("running", "a", "jobs")
	complete := job("complete", "a", "jobs", batchv1.JobComplete)
	failed := job("failed", "b", "jobs", batchv1.JobFailed)
	suspended := job("suspended", "b", "jobs", batchv1.JobSuspended) // not finished
	lost := job("lost", "b", "nowhere")
	jobs := []batchv1.Job{noWorkloadYet, waiting, running, complete, failed, suspended, lost}
	wls := []berthv1.Workload{workloadOf(waiting, false), workloadOf(running, true),
		workloadOf(complete, true), workloadOf(failed, true), workloadOf(suspended, false)}

	got := Summarize(cqs, lqs, jobs, wls)
	want := []Row{
		{Queue: "(no queue)", Pending: 1, Total: 1},
		{Queue: "team-a", Pending: 2, Admitted: 1, Finished: 1, Total: 4, Borrowed: resource.MustParse("2")},
		{Queue: "team-b", Pending: 1, Finished: 1, Total: 2, Borrowed: resource.MustParse("0")},
	}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Queue != w.Queue || g.Pending != w.Pending || g.Admitted != w.Admitted || g.Finished != w.Finished ||
			g.Total != w.Total || g.Borrowed.Cmp(w.Borrowed) != 0 {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	if Done(got) {
		t.Error("Done with unfinished Jobs")
	}
}

func TestDoneOnceEveryJobFinished(t *testing.T) {
	if Done(nil) {
		t.Error("Done with no Jobs at all: the demo would end before it began")
	}
	if !Done([]Row{{Queue: "a", Total: 2, Finished: 2}, {Queue: "b", Total: 1, Finished: 1}}) {
		t.Error("not Done with every Job finished")
	}
}

func TestRender(t *testing.T) {
	got := Render([]Row{
		{Queue: "team-a", Pending: 2, Admitted: 2, Finished: 1, Total: 5, Borrowed: resource.MustParse("2")},
		{Queue: "team-b", Finished: 3, Total: 3},
	}, 12400*time.Millisecond)
	want := `after 12s
  QUEUE   PENDING  ADMITTED  FINISHED  BORROWING
  team-a  2        2         1 of 5    2 cpu
  team-b  0        0         3 of 3    -
`
	if got != want {
		t.Errorf("Render:\n%s\nwant:\n%s", got, want)
	}
}
