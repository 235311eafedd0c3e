package workload

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
)

// An admission written by berth reads back as the same usage.
func TestAdmissionRoundTrip(t *testing.T) {
	a := &core.Assignment{ClusterQueue: "cq", PodSets: []core.PodSetAssignment{{
		Name: "main", Count: 3, Flavors: map[string]string{"cpu": "spot", "memory": "spot", "nvidia.com/gpu": "a100"},
		Usage: core.Usage{
			{Flavor: "spot", Resource: "cpu"}: 1500, {Flavor: "spot", Resource: "memory"}: 3 << 30 * 1000,
			{Flavor: "a100", Resource: "nvidia.com/gpu"}: 3000,
		},
	}}}
	adm := AdmissionOf(a)
	if got := adm.PodSetAssignments[0].ResourceUsage; got.Cpu().String() != "1500m" || got.Memory().String() != "3Gi" {
		t.Errorf("resource usage rendered as %v", got)
	}
	u := UsageOf(adm)
	if len(u) != 3 {
		t.Fatalf("usage %v", u)
	}
	for fr, v := range a.PodSets[0].Usage {
		if u[fr] != v {
			t.Errorf("%v: %d after the round trip, want %d", fr, u[fr], v)
		}
	}
}

// Admitted at a priority lowered by a spent budget, a workload is
// preempted as work of that priority until it gives its quota back; a
// stored priority above its own (not written by berth) lowers nothing
// and raises nothing.
func TestAdmittedAtLoweredPriority(t *testing.T) {
	own, low := int32(100), int32(-5)
	w := &berthv1.Workload{Spec: berthv1.WorkloadSpec{Priority: &own}}
	SetAdmitted(w, AdmissionOf(&core.Assignment{ClusterQueue: "cq", Priority: &low}), nil, time.Now())
	if got := AdmittedOf(w).Priority; got != low {
		t.Fatalf("admitted lowered to -5, counts at %d", got)
	}
	high := int32(1000)
	w.Status.Admission.Priority = &high
	if got := AdmittedOf(w).Priority; got != own {
		t.Fatalf("a stored admission priority above its own: counts at %d", got)
	}
	SetEvicted(w, "Preempted", "preempted", time.Now(), false)
	if w.Status.Admission != nil {
		t.Fatal("evicted, it keeps its admission (and the lowered priority)")
	}
}

func TestConditionTransitions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &berthv1.Workload{}
	w.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	if !SetPending(w, "NoFit", "needs 5 cpu", now) || SetPending(w, "NoFit", "needs 5 cpu", now.Add(time.Second)) {
		t.Fatal("SetPending must report a change once, and no change when nothing changed")
	}
	SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, nil, now)
	if !HasQuota(w) || !IsAdmitted(w) {
		t.Fatal("not admitted after SetAdmitted")
	}
	evictedAt := now.Add(time.Minute)
	SetEvicted(w, "ClusterQueueDeleted", "ClusterQueue cq was deleted", evictedAt, false)
	if HasQuota(w) || IsAdmitted(w) || w.Status.Admission != nil {
		t.Fatal("still holds quota after SetEvicted")
	}
	if got := QueueTimestamp(w); !got.Equal(evictedAt) {
		t.Errorf("an evicted workload queues from its eviction (%v), not %v", evictedAt, got)
	}
	if *w.Status.RequeueState.Count != 1 || w.Status.RequeueState.RequeueAt != nil {
		t.Errorf("requeue state %+v: want count 1 and no backoff", w.Status.RequeueState)
	}
	SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, nil, now.Add(2*time.Minute))
	if meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadEvicted) {
		t.Error("Evicted still True after readmission")
	}
	if got := QueueTimestamp(w); !got.Equal(w.CreationTimestamp.Time) {
		t.Errorf("a readmitted workload's queue time is %v", got)
	}
	SetFinished(w, "JobSucceeded", "done", now)
	if !IsFinished(w) {
		t.Error("not finished")
	}
	// Conditions keep a fixed order, so status writes and diffs are stable.
	var order []string
	for _, c := range w.Status.Conditions {
		order = append(order, c.Type)
	}
	want := []string{berthv1.WorkloadQuotaReserved, berthv1.WorkloadAdmitted, berthv1.WorkloadEvicted, berthv1.WorkloadFinished}
	for i := range want {
		if i >= len(order) || order[i] != want[i] {
			t.Fatalf("condition order %v, want %v", order, want)
		}
	}
}

func TestPreemptionBackoffDoubles(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &berthv1.Workload{}
	var waits []time.Duration
	for range 12 {
		SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, nil, now)
		SetEvicted(w, "Preempted", "preempted", now, true)
		waits = append(waits, w.Status.RequeueState.RequeueAt.Sub(now))
	}
	if waits[0] != BackoffBase || waits[1] != 2*BackoffBase || waits[2] != 4*BackoffBase {
		t.Errorf("backoffs %v do not double from %v", waits[:3], BackoffBase)
	}
	if waits[len(waits)-1] != BackoffMax {
		t.Errorf("backoff after 12 evictions is %v, want the cap %v", waits[len(waits)-1], BackoffMax)
	}
	if got := ToCore(w, nil).NotBefore; !got.Equal(now.Add(BackoffMax)) {
		t.Errorf("the core sees NotBefore %v", got)
	}
}

// A Job's, a Pod's or a JobSet's workload keeps its quota while it stops, and gets the
// backoff decided at its eviction once it gives the quota back; a
// Workload of its own (nothing runs for it) is evicted at once.
func TestStoppingKeepsQuotaUntilReleased(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	owned := func(apiVersion, kind string) *berthv1.Workload {
		w := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "x"}}}}
		SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, nil, now)
		return w
	}
	for _, tc := range []struct {
		w    *berthv1.Workload
		keep bool
	}{
		{owned("batch/v1", "Job"), true}, {owned("v1", "Pod"), true}, {owned("jobset.x-k8s.io/v1alpha2", "JobSet"), true},
		{owned("example.com/v1", "Job"), false}, {&berthv1.Workload{}, false},
		{&berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{berthv1.ConfiguredKindLabel: "true"}}}, true},
	} {
		if got := KeepsQuotaWhileStopping(tc.w); got != tc.keep {
			t.Errorf("%v: keeps quota while stopping %v, want %v", tc.w.OwnerReferences, got, tc.keep)
		}
	}
	for _, backoff := range []bool{true, false} {
		w := owned("batch/v1", "Job")
		SetEvicted(w, "Preempted", "an earlier preemption", now, true) // leaves a RequeueAt behind
		SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, nil, now)
		SetStopping(w, "Preempted", "preempted by ns/big", now, backoff)
		if !HasQuota(w) || !IsStopping(w) {
			t.Fatalf("stopping: has quota %v, stopping %v; want both", HasQuota(w), IsStopping(w))
		}
		later := now.Add(time.Minute)
		ReleaseStopped(w, later)
		ev := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted)
		if HasQuota(w) || IsStopping(w) || ev == nil || ev.Message != "preempted by ns/big" {
			t.Fatalf("released: has quota %v, stopping %v, Evicted %+v", HasQuota(w), IsStopping(w), ev)
		}
		if got := w.Status.RequeueState.RequeueAt != nil; got != backoff {
			t.Errorf("backoff decided %v, applied %v (%+v)", backoff, got, w.Status.RequeueState)
		}
		if backoff && !w.Status.RequeueState.RequeueAt.Time.Equal(later.Add(BackoffFor(2))) {
			t.Errorf("requeue at %v, want the second eviction's backoff from the release", w.Status.RequeueState.RequeueAt)
		}
	}
}

// A finished workload keeps what berth reads of it, and is still seen as
// finished and no longer holding quota; others are untouched.
func TestOutlineKeepsWhatBerthReadsOfFinishedWorkloads(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prio := int32(7)
	w := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Labels: map[string]string{"team": "a"}},
		Spec: berthv1.WorkloadSpec{QueueName: "lq", Priority: &prio, PodSets: []berthv1.PodSet{{Name: "main", Count: 2}}}}
	SetAdmitted(w, AdmissionOf(&core.Assignment{ClusterQueue: "cq", PodSets: []core.PodSetAssignment{{
		Name: "main", Count: 2, Flavors: map[string]string{"cpu": "spot"}, Usage: core.Usage{{Flavor: "spot", Resource: "cpu"}: 2000}}}}), nil, now)
	running := w.DeepCopy()
	Outline(running)
	if len(running.Spec.PodSets) != 1 || len(running.Status.Admission.PodSetAssignments) != 1 {
		t.Fatalf("a workload that has not finished was outlined: %+v", running)
	}

	SetFinished(w, "Succeeded", "done", now)
	Outline(w)
	if w.Spec.PodSets != nil || w.Status.Admission != nil || len(w.Status.Conditions) != 1 {
		t.Errorf("finished workload keeps pod sets %v, admission %v, conditions %v", w.Spec.PodSets, w.Status.Admission, w.Status.Conditions)
	}
	if !IsFinished(w) || HasQuota(w) || LocalQueueKey(w) != "ns/lq" || Priority(w) != 7 || w.Labels["team"] != "a" ||
		w.Status.Conditions[0].Message != "done" {
		t.Errorf("outline lost what berth reads: %+v", w)
	}
}

// berth times the pods of Jobs, JobSets, TrainJobs and StatefulSets that run here; not
// those of other kinds (evicting them deletes their pods for good), nor of
// dispatched ones.
func TestPodsReadySubjects(t *testing.T) {
	owned := func(apiVersion, kind string) *berthv1.Workload {
		yes := true
		w := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
		w.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "o", UID: "u", Controller: &yes}}
		return w
	}
	dispatched := owned("batch/v1", "Job")
	dispatched.Status.ClusterName = "east"
	copied := owned("jobset.x-k8s.io/v1alpha2", "JobSet")
	copied.Labels = map[string]string{berthv1.MultiClusterOriginLabel: "mgr"}
	configured := owned("kubeflow.org/v2beta1", "MPIJob")
	configured.Labels = map[string]string{berthv1.ConfiguredKindLabel: "true"}
	for _, tc := range []struct {
		name string
		w    *berthv1.Workload
		want bool
	}{
		{"Job", owned("batch/v1", "Job"), true},
		{"JobSet", owned("jobset.x-k8s.io/v1alpha2", "JobSet"), true},
		{"TrainJob", owned("trainer.kubeflow.org/v1alpha1", "TrainJob"), true},
		{"Pod", owned("v1", "Pod"), false},
		{"StatefulSet's pod group", &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "s"}, {APIVersion: "v1", Kind: "Pod", Name: "db-0", UID: "p"}}}}, true},
		{"no owner", &berthv1.Workload{}, false},
		{"dispatched Job", dispatched, false},
		{"copy of a JobSet on a worker", copied, false},
		{"a configured kind's", configured, true},
		{"a kind not queued by berth", owned("kubeflow.org/v2beta1", "MPIJob"), false},
	} {
		if got := PodsReadySubject(tc.w); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
