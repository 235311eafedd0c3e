package audit

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// admitted is a Workload holding cpu in flavor "f" of ClusterQueue cq.
func admitted(name, cq, cpu string, at time.Time) *berthv1.Workload {
	w := MakeWorkload(name, "ns").Request("cpu", cpu).Obj()
	workload.SetAdmitted(w, &berthv1.Admission{ClusterQueue: cq, PodSetAssignments: []berthv1.PodSetAssignment{{
		Name: "main", Count: 1, Flavors: map[corev1.ResourceName]string{"cpu": "f"},
		ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse(cpu)}}}}, nil, at)
	return w
}

func rules(vs []Violation) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Rule+": "+v.Message)
	}
	return strings.Join(out, "; ")
}

func TestQuota(t *testing.T) {
	alone := MakeClusterQueue("alone").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "4").Obj()).Obj()
	// a lends at most 1 of its 4; b may borrow at most 3.
	a := MakeClusterQueue("a").Cohort("c").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "4", "", "1").Obj()).Obj()
	b := MakeClusterQueue("b").Cohort("c").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "2", "3").Obj()).Obj()
	big := MakeClusterQueue("big").Cohort("c").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "10").Obj()).Obj()
	cqs := []*berthv1.ClusterQueue{alone, a, b, big}
	for _, tc := range []struct {
		name      string
		workloads []*berthv1.Workload
		want      string
	}{
		{"within", []*berthv1.Workload{admitted("w1", "alone", "4", now), admitted("w2", "a", "3", now), admitted("w3", "b", "3", now)}, ""},
		{"a queue without a cohort above nominal", []*berthv1.Workload{admitted("w1", "alone", "3", now), admitted("w2", "alone", "2", now)},
			"OverQuota: f cpu: 5000 milli used, at most 4000 allowed"},
		{"above the borrowing limit", []*berthv1.Workload{admitted("w1", "b", "6", now)},
			"OverQuota: f cpu: 6000 milli used, at most 5000 allowed"},
		// big uses its 10, b its 2 and 2 more: only a's lendable 1 is left
		// for those 2.
		{"borrowing what the lending limit keeps", []*berthv1.Workload{admitted("w1", "a", "3", now), admitted("w2", "b", "4", now),
			admitted("w3", "big", "10", now)},
			"OverCohort: f cpu: queues use 14000 milli beyond what they keep, the tree can lend 13000"},
		{"finished workloads hold nothing", []*berthv1.Workload{finishedWorkload(admitted("w1", "alone", "9", now))}, ""},
	} {
		got := rules(Quota(Snapshot{At: now, ClusterQueues: cqs, Workloads: tc.workloads}))
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A cohort's own quota is the tree's to lend.
	co := &berthv1.Cohort{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: berthv1.CohortSpec{
		ResourceGroups: []berthv1.ResourceGroup{{CoveredResources: []corev1.ResourceName{"cpu"},
			Flavors: []berthv1.FlavorQuotas{MakeFlavorQuotas("f").Resource("cpu", "1").Obj()}}}}}
	s := Snapshot{At: now, ClusterQueues: cqs, Cohorts: []*berthv1.Cohort{co},
		Workloads: []*berthv1.Workload{admitted("w1", "a", "3", now), admitted("w2", "b", "4", now), admitted("w3", "big", "10", now)}}
	if got := rules(Quota(s)); got != "" {
		t.Errorf("with the cohort's own cpu: %q", got)
	}
}

func finishedWorkload(w *berthv1.Workload) *berthv1.Workload {
	workload.SetFinished(w, "Succeeded", "done", now)
	return w
}

func TestAdmittedTwice(t *testing.T) {
	tr := NewTracker(time.Second)
	w := admitted("w", "a", "1", now)
	if v := tr.Workload(w, now); v != nil {
		t.Fatalf("first admission: %v", v)
	}
	if v := tr.Workload(w, now); v != nil {
		t.Fatalf("the same admission seen again: %v", v)
	}
	again := admitted("w", "b", "1", now.Add(time.Minute))
	// A new admission with none released between.
	if v := tr.Workload(again, now.Add(time.Minute)); len(v) != 1 || v[0].Rule != AdmittedTwice {
		t.Errorf("admitted again without a release: %v", v)
	}
	released := MakeWorkload("w", "ns").Obj()
	tr.Workload(released, now)
	if v := tr.Workload(admitted("w", "a", "1", now.Add(2*time.Minute)), now); v != nil {
		t.Errorf("admitted after a release: %v", v)
	}
	// A release the watch never showed (a relist delivers only the latest
	// version) is proven by the requeue count the eviction left.
	requeued := admitted("w", "a", "1", now.Add(3*time.Minute))
	workload.SetEvicted(requeued, "Preempted", "made room", now.Add(3*time.Minute), true)
	workload.SetAdmitted(requeued, &berthv1.Admission{ClusterQueue: "a"}, nil, now.Add(4*time.Minute))
	if v := tr.Workload(requeued, now.Add(4*time.Minute)); v != nil {
		t.Errorf("admitted again after an eviction the watch missed: %v", v)
	}
}

func TestJobsRunOnlyWithQuota(t *testing.T) {
	tr := NewTracker(5 * time.Second)
	no := false
	job := MakeJob("j", "ns").Queue("q").Obj()
	job.UID = types.UID("job-uid")
	job.Spec.Suspend = &no
	w := admitted("job-j", "a", "1", now)
	w.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: job.UID}}
	s := Snapshot{At: now, Jobs: []*batchv1.Job{job}, Workloads: []*berthv1.Workload{w}}
	if v := tr.Jobs(s); v != nil {
		t.Fatalf("running with quota: %v", v)
	}
	// Reserved but waiting for a check counts as not admitted.
	checking := MakeWorkload("job-j", "ns").Reserved("a", "budget").Obj()
	checking.OwnerReferences = w.OwnerReferences
	s = Snapshot{At: now.Add(-time.Minute), Jobs: []*batchv1.Job{job}, Workloads: []*berthv1.Workload{checking}}
	if v := tr.Jobs(s); v != nil {
		t.Fatalf("first look: %v", v)
	}
	s.At = now.Add(-50 * time.Second)
	if v := tr.Jobs(s); len(v) != 1 || v[0].Rule != RunsWithoutQuota {
		t.Fatalf("10s running while its check is Pending: %v", v)
	}
	tr = NewTracker(5 * time.Second)
	// Evicted: it may run a moment longer, not more.
	pending := MakeWorkload("job-j", "ns").Obj()
	pending.OwnerReferences = w.OwnerReferences
	for _, d := range []time.Duration{0, 4 * time.Second} {
		s = Snapshot{At: now.Add(d), Jobs: []*batchv1.Job{job}, Workloads: []*berthv1.Workload{pending}}
		if v := tr.Jobs(s); v != nil {
			t.Fatalf("%v after the eviction: %v", d, v)
		}
	}
	s.At = now.Add(6 * time.Second)
	if v := tr.Jobs(s); len(v) != 1 || v[0].Rule != RunsWithoutQuota {
		t.Errorf("6s without quota: %v", v)
	}
}

func TestSettled(t *testing.T) {
	cq := MakeClusterQueue("a").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "4").Obj()).Obj()
	cq.Status.FlavorsUsage = []berthv1.FlavorUsage{{Name: "f", Resources: []berthv1.ResourceUsage{{Name: "cpu", Total: resource.MustParse("1")}}}}
	waiting := MakeWorkload("waiting", "ns").Obj()
	workload.SetPending(waiting, "Pending", "needs 9 cpu", now)
	silent := MakeWorkload("silent", "ns").Queue("main").Obj()
	gone := metav1.NewTime(now.Add(-time.Minute))
	stuck := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: "ns", DeletionTimestamp: &gone,
		Finalizers: []string{berthv1.PodFinalizer}}}
	deleted := MakeClusterQueue("deleted").Obj()
	deleted.DeletionTimestamp, deleted.Finalizers = &gone, []string{"berth.dev/resource-in-use"}
	s := Snapshot{At: now, ClusterQueues: []*berthv1.ClusterQueue{cq, deleted},
		Workloads: []*berthv1.Workload{admitted("running", "a", "2", now), waiting, silent}}
	got := rules(Settled(s, []*corev1.Pod{stuck}, false))
	for _, want := range []string{"NotSettled: still holds quota", "NotSettled: waits without a reason",
		"FinalizerLeft: deleted at", "FinalizerLeft: deleted, nothing holds quota in it", "StatusUsageDiffer: f cpu: status says 1000 milli, its workloads hold 2000"} {
		if !strings.Contains(got, want) {
			t.Errorf("settled: %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "waiting") {
		t.Errorf("a workload waiting with a reason was reported: %q", got)
	}
	if got := rules(Settled(s, nil, true)); strings.Contains(got, "still holds quota") {
		t.Errorf("running allowed: %q", got)
	}
}

func TestSettledSkipsWhatNoQueueHolds(t *testing.T) {
	probe := MakeWorkload("probe", "ns").Obj() // no queueName, no admission
	if got := rules(Settled(Snapshot{At: now, Workloads: []*berthv1.Workload{probe}}, nil, false)); got != "" {
		t.Errorf("a workload submitted to no queue: %q", got)
	}
}
