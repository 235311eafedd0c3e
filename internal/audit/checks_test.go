package audit

import (
	"slices"
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
	if v := tr.Running(s); v != nil {
		t.Fatalf("running with quota: %v", v)
	}
	// Reserved but waiting for a check counts as not admitted.
	checking := MakeWorkload("job-j", "ns").Reserved("a", "budget").Obj()
	checking.OwnerReferences = w.OwnerReferences
	s = Snapshot{At: now.Add(-time.Minute), Jobs: []*batchv1.Job{job}, Workloads: []*berthv1.Workload{checking}}
	if v := tr.Running(s); v != nil {
		t.Fatalf("first look: %v", v)
	}
	s.At = now.Add(-50 * time.Second)
	if v := tr.Running(s); len(v) != 1 || v[0].Rule != RunsWithoutQuota {
		t.Fatalf("10s running while its check is Pending: %v", v)
	}
	tr = NewTracker(5 * time.Second)
	// Evicted: it may run a moment longer, not more.
	pending := MakeWorkload("job-j", "ns").Obj()
	pending.OwnerReferences = w.OwnerReferences
	for _, d := range []time.Duration{0, 4 * time.Second} {
		s = Snapshot{At: now.Add(d), Jobs: []*batchv1.Job{job}, Workloads: []*berthv1.Workload{pending}}
		if v := tr.Running(s); v != nil {
			t.Fatalf("%v after the eviction: %v", d, v)
		}
	}
	s.At = now.Add(6 * time.Second)
	if v := tr.Running(s); len(v) != 1 || v[0].Rule != RunsWithoutQuota {
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
	// Deleted, its quota given back, but berth's finalizer left on.
	leftover := MakeWorkload("leftover", "ns").Queue("main").FollowsPods("batch.kubernetes.io/controller-uid=x").Finished().Deleting(gone.Time).Obj()
	s := Snapshot{At: now, ClusterQueues: []*berthv1.ClusterQueue{cq, deleted},
		Workloads: []*berthv1.Workload{admitted("running", "a", "2", now), waiting, silent, leftover}}
	got := rules(Settled(s, []*corev1.Pod{stuck}, false))
	for _, want := range []string{"NotSettled: still holds quota", "NotSettled: waits without a reason",
		"FinalizerLeft: deleted at", "FinalizerLeft: deleted, nothing holds quota in it", "StatusUsageDiffer: f cpu: status says 1000 milli, its workloads hold 2000",
		"FinalizerLeft: deleted at " + gone.Format(time.RFC3339) + ", holds no quota, still held by berth.dev/pods-gone"} {
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

// Pods are judged from themselves, whichever kind queued them: a bound Pod
// berth queues runs only while its own Workload, or its owner's, is admitted.
func TestPodsRunOnlyWithQuota(t *testing.T) {
	yes := true
	owned := func(p *corev1.Pod, kind, name string, uid types.UID) *corev1.Pod {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: name, UID: uid, Controller: &yes})
		return p
	}
	workloadOf := func(admit bool, owners ...*corev1.Pod) *berthv1.Workload {
		w := MakeWorkload("w", "ns").Obj()
		if admit {
			w = admitted("w", "a", "1", now)
		}
		for _, p := range owners {
			w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{Kind: "Pod", Name: p.Name, UID: p.UID})
		}
		return w
	}
	pod := func(name string) *corev1.Pod {
		p := MakePod(name, "ns").Node("node-1").Obj()
		p.UID = types.UID(name + "-uid")
		return p
	}
	job := MakeJob("j", "ns").Queue("q").Obj()
	job.UID = "job-uid"
	jobWorkload := func(admit bool) *berthv1.Workload {
		w := MakeWorkload("job-j", "ns").Obj()
		if admit {
			w = admitted("job-j", "a", "1", now)
		}
		w.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "j", UID: job.UID}}
		return w
	}
	unlabelledJob := MakeJob("plain", "ns").Obj()
	unlabelledJob.UID = "plain-uid"
	single, g0, g1 := pod("single"), pod("g-0"), pod("g-1")
	tenant := owned(pod("tenant"), "ServiceAccount", "vc-syncer", "sa-uid")
	gated := pod("gated")
	gated.Spec.NodeName = ""
	done := pod("done")
	done.Status.Phase = corev1.PodSucceeded
	stopping := pod("stopping")
	stopping.DeletionTimestamp = &metav1.Time{Time: now}
	labelled := MakePod("labelled", "ns").Node("node-1").Label(berthv1.QueueNameLabel, "q").Obj()
	for _, tc := range []struct {
		name      string
		pods      []*corev1.Pod
		workloads []*berthv1.Workload
		jobs      []*batchv1.Job
		want      []string
	}{
		{"a plain Pod, admitted", []*corev1.Pod{single}, []*berthv1.Workload{workloadOf(true, single)}, nil, nil},
		{"a plain Pod, not admitted", []*corev1.Pod{single}, []*berthv1.Workload{workloadOf(false, single)}, nil,
			[]string{"Pod ns/single"}},
		{"a pod group, not admitted", []*corev1.Pod{g0, g1}, []*berthv1.Workload{workloadOf(false, g0, g1)}, nil,
			[]string{"Pod ns/g-0", "Pod ns/g-1"}},
		{"a pod group, admitted", []*corev1.Pod{g0, g1}, []*berthv1.Workload{workloadOf(true, g0, g1)}, nil, nil},
		{"a tenant's host Pod, owned by its syncer, not admitted", []*corev1.Pod{tenant},
			[]*berthv1.Workload{workloadOf(false, tenant)}, nil, []string{"Pod ns/tenant"}},
		{"a queued Job's Pod, its Job not admitted", []*corev1.Pod{owned(pod("j-0"), "Job", "j", job.UID)},
			[]*berthv1.Workload{jobWorkload(false)}, []*batchv1.Job{job}, []string{"Job ns/j", "Pod ns/j-0"}},
		{"a queued Job's Pod before its Workload exists", []*corev1.Pod{owned(pod("j-0"), "Job", "j", job.UID)},
			nil, []*batchv1.Job{job}, []string{"Job ns/j", "Pod ns/j-0"}},
		{"a queued Job's Pod, its Job admitted", []*corev1.Pod{owned(pod("j-0"), "Job", "j", job.UID)},
			[]*berthv1.Workload{jobWorkload(true)}, []*batchv1.Job{job}, nil},
		{"a labelled Pod with no Workload yet", []*corev1.Pod{labelled}, nil, nil, []string{"Pod ns/labelled"}},
		{"a Pod of a Job berth does not queue", []*corev1.Pod{owned(pod("p-0"), "Job", "plain", unlabelledJob.UID)},
			nil, []*batchv1.Job{unlabelledJob}, nil},
		{"not bound, finished, or being deleted", []*corev1.Pod{gated, done, stopping},
			[]*berthv1.Workload{workloadOf(false, gated, done, stopping)}, nil, nil},
	} {
		tr := NewTracker(5 * time.Second)
		s := Snapshot{At: now, Pods: tc.pods, Workloads: tc.workloads, Jobs: tc.jobs}
		if v := tr.Running(s); v != nil {
			t.Errorf("%s: reported at first sight: %v", tc.name, v)
		}
		s.At = now.Add(6 * time.Second)
		var got []string
		for _, v := range tr.Running(s) {
			if v.Rule != RunsWithoutQuota {
				t.Errorf("%s: rule %s", tc.name, v.Rule)
			}
			got = append(got, v.Objects...)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: reported %v, want %v", tc.name, got, tc.want)
		}
	}
}
