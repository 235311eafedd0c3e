package podsready_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/podsready"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// admitted is at the epoch (fixtures' Reserved), so times below are since
// its admission.
var epoch = time.Unix(0, 0)

func rules() podsready.Options {
	return podsready.Options{Timeout: 5 * time.Minute, BackoffBase: time.Minute, BackoffMax: 3 * time.Minute,
		RequeueLimit: 3, Since: epoch}
}

func admittedJobWorkload() *berthv1.Workload {
	return MakeWorkload("w", "ns").Queue("lq").OwnedByJob("train").Count(4).Reserved("cq").Obj()
}

func TestWaitsForTheTimeoutThenEvicts(t *testing.T) {
	w := admittedJobWorkload()
	d := podsready.Decide(w, rules(), epoch.Add(4*time.Minute))
	if d.Action != podsready.Wait || d.After != time.Minute {
		t.Fatalf("4m after admission: %+v, want Wait and a look again in 1m", d)
	}
	now := epoch.Add(5 * time.Minute)
	d = podsready.Decide(w, rules(), now)
	if d.Action != podsready.Evict || !strings.Contains(d.Message, "not all Ready within 5m0s") || !strings.Contains(d.Message, "try 1") {
		t.Fatalf("at the timeout: %+v, want Evict saying why", d)
	}
	if !podsready.Apply(w, d, rules(), now) {
		t.Fatal("Apply of an eviction changed nothing")
	}
	if !workload.IsStopping(w) {
		t.Fatal("a Job's Workload must keep its quota until its pods are gone (stopping)")
	}
	c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady)
	if c == nil || c.Status != "False" || c.Reason != workload.PodsReadyTimeout {
		t.Fatalf("PodsReady = %+v, want False, PodsReadyTimeout", c)
	}
	if e := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted); e == nil || e.Reason != workload.PodsReadyTimeout {
		t.Fatalf("Evicted = %+v, want reason PodsReadyTimeout", e)
	}
	if n := workload.PodsReadyTimeouts(w); n != 1 {
		t.Fatalf("%d timeouts counted, want 1", n)
	}
	// Its pods gone a second later, its integration releases it: it waits
	// out the backoff of this first try (1m) from the eviction, not the
	// preemption backoff from the release.
	workload.ReleaseStopped(w, now.Add(time.Second))
	if workload.HasQuota(w) {
		t.Fatal("released, it still holds quota")
	}
	if at := w.Status.RequeueState.RequeueAt; at == nil || !at.Time.Equal(now.Add(time.Minute)) {
		t.Fatalf("requeue at %v, want %v", at, now.Add(time.Minute))
	}
	if n := workload.PodsReadyTimeouts(w); n != 1 {
		t.Fatalf("release lost the count of timeouts: %d", n)
	}
	if d := podsready.Decide(w, rules(), now.Add(time.Second)); d.Action != podsready.Wait || d.After != 0 {
		t.Fatalf("pending: %+v, want nothing to do", d)
	}
}

func TestBackoffDoublesUpToItsMaximum(t *testing.T) {
	o := rules()
	o.RequeueLimit = 0
	w := admittedJobWorkload()
	now := epoch
	for try, want := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 3 * time.Minute} {
		now = now.Add(o.Timeout)
		d := podsready.Decide(w, o, now)
		if d.Action != podsready.Evict {
			t.Fatalf("try %d: %+v, want Evict (no limit)", try+1, d)
		}
		podsready.Apply(w, d, o, now)
		workload.ReleaseStopped(w, now)
		if at := w.Status.RequeueState.RequeueAt.Time; !at.Equal(now.Add(want)) {
			t.Fatalf("try %d: requeued after %s, want %s", try+1, at.Sub(now), want)
		}
		// Admitted again: PodsReady of the last admission is gone.
		now = w.Status.RequeueState.RequeueAt.Time
		workload.SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, nil, now)
		if meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady) != nil {
			t.Fatal("a new admission kept the last one's PodsReady")
		}
	}
}

func TestReadyPodsAreLeftAlone(t *testing.T) {
	w := admittedJobWorkload()
	workload.SetPodsReady(w, "4 of 4 pods Ready", epoch.Add(time.Minute))
	if d := podsready.Decide(w, rules(), epoch.Add(time.Hour)); d.Action != podsready.Wait || d.After != 0 {
		t.Fatalf("pods Ready: %+v, want nothing, ever", d)
	}
}

func TestNotSubject(t *testing.T) {
	for name, w := range map[string]*berthv1.Workload{
		"created directly, no pods berth knows of": MakeWorkload("w", "ns").Reserved("cq").Obj(),
		"a plain Pod's": func() *berthv1.Workload {
			w := MakeWorkload("w", "ns").Reserved("cq").Obj()
			yes := true
			w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "p", Controller: &yes}}
			return w
		}(),
		"dispatched to a worker cluster": MakeWorkload("w", "ns").OwnedByJob("j").Reserved("cq").RunsOn("worker-1").Obj(),
		"a manager's copy on a worker": func() *berthv1.Workload {
			w := admittedJobWorkload()
			w.Labels = map[string]string{berthv1.MultiClusterOriginLabel: "manager"}
			return w
		}(),
		"deactivated":         MakeWorkload("w", "ns").OwnedByJob("j").Reserved("cq").Inactive().Obj(),
		"stopping":            MakeWorkload("w", "ns").OwnedByJob("j").Reserved("cq").Stopping("Preempted").Obj(),
		"waiting for a check": MakeWorkload("w", "ns").OwnedByJob("j").Reserved("cq", "prov").Obj(),
		"pending":             MakeWorkload("w", "ns").OwnedByJob("j").Obj(),
	} {
		if d := podsready.Decide(w, rules(), epoch.Add(time.Hour)); d.Action != podsready.Wait || d.After != 0 {
			t.Errorf("%s: %+v, want nothing", name, d)
		}
	}
}

func TestAdmittedBeforeTheControllerStarted(t *testing.T) {
	o := rules()
	o.Since = epoch.Add(time.Hour)
	d := podsready.Decide(admittedJobWorkload(), o, o.Since.Add(time.Minute))
	if d.Action != podsready.Wait || d.After != 4*time.Minute {
		t.Fatalf("%+v, want the whole timeout counted from the controller's start", d)
	}
}

func TestDeactivatedAtTheLimitThenResumed(t *testing.T) {
	o := rules()
	w := admittedJobWorkload()
	w.Generation = 1
	now := epoch
	for try := int32(1); try <= o.RequeueLimit; try++ {
		now = now.Add(o.Timeout)
		d := podsready.Decide(w, o, now)
		want := podsready.Evict
		if try == o.RequeueLimit {
			want = podsready.Deactivate
		}
		if d.Action != want {
			t.Fatalf("try %d: %+v, want action %d", try, d, want)
		}
		podsready.Apply(w, d, o, now)
		if try < o.RequeueLimit {
			workload.ReleaseStopped(w, now)
			now = w.Status.RequeueState.RequeueAt.Time
			workload.SetAdmitted(w, &berthv1.Admission{ClusterQueue: "cq"}, nil, now)
		}
	}
	reason, msg := workload.Deactivation(w, time.Now())
	if reason != workload.RequeuingLimitExceeded || !strings.Contains(msg, "3 times") || !strings.Contains(msg, "berth resume") {
		t.Fatalf("deactivation says %s: %q", reason, msg)
	}
	// The controller stopped before it set spec.active false: at the same
	// generation it is still to do, and the status is not written twice.
	d := podsready.Decide(w, o, now)
	if d.Action != podsready.Deactivate || podsready.Apply(w, d, o, now) {
		t.Fatalf("deactivation half done: %+v, want Deactivate with no status change", d)
	}
	// spec.active false (generation 2): nothing to do while it is off.
	no := false
	w.Spec.Active, w.Generation = &no, 2
	workload.ReleaseStopped(w, now)
	if d := podsready.Decide(w, o, now); d.Action != podsready.Wait {
		t.Fatalf("deactivated: %+v, want nothing", d)
	}
	// Resumed (generation 3): its tries start again.
	w.Spec.Active, w.Generation = nil, 3
	d = podsready.Decide(w, o, now)
	if d.Action != podsready.Reset || !podsready.Apply(w, d, o, now) {
		t.Fatalf("resumed: %+v, want Reset", d)
	}
	if workload.PodsReadyTimeouts(w) != 0 || meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady) != nil {
		t.Fatalf("reset left %d timeouts and %v", workload.PodsReadyTimeouts(w), w.Status.Conditions)
	}
}

// Resumed and admitted again before the PodsReady controller saw it
// resumed (the scheduler was quicker): the admission starts its tries
// again, so its next timeout is counted as its first.
func TestReadmittedBeforeTheResetWasSeen(t *testing.T) {
	o := rules()
	o.RequeueLimit = 1
	w := admittedJobWorkload()
	w.Generation = 1
	now := epoch.Add(o.Timeout)
	admission := w.Status.Admission
	podsready.Apply(w, podsready.Decide(w, o, now), o, now)
	no := false
	w.Spec.Active, w.Generation = &no, 2
	workload.ReleaseStopped(w, now)
	w.Spec.Active, w.Generation = nil, 3
	workload.SetAdmitted(w, admission, nil, now)
	if n := workload.PodsReadyTimeouts(w); n != 0 {
		t.Fatalf("admitted again after a resume with %d timeouts counted, want none", n)
	}
	if d := podsready.Decide(w, o, now.Add(o.Timeout)); !strings.Contains(d.Message, ", 1 times") {
		t.Fatalf("its next timeout: %+v, want it counted as its first", d)
	}
}

func TestResumedWhileItsPodsStillStop(t *testing.T) {
	o := rules()
	o.RequeueLimit = 1
	w := admittedJobWorkload()
	w.Generation = 1
	now := epoch.Add(o.Timeout)
	podsready.Apply(w, podsready.Decide(w, o, now), o, now)
	w.Generation = 3 // deactivated and resumed before its pods were gone
	if d := podsready.Decide(w, o, now); d.Action != podsready.Wait {
		t.Fatalf("%+v, want to wait until its quota is released", d)
	}
}

func TestValidate(t *testing.T) {
	if err := podsready.DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for flag, o := range map[string]podsready.Options{
		"--pods-ready-timeout":       {BackoffBase: 1, BackoffMax: 1},
		"--pods-ready-backoff-base":  {Timeout: 1, BackoffMax: 1},
		"--pods-ready-backoff-max":   {Timeout: 1, BackoffBase: 2, BackoffMax: 1},
		"--pods-ready-requeue-limit": {Timeout: 1, BackoffBase: 1, BackoffMax: 1, RequeueLimit: -1},
	} {
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, flag)
		}
	}
}
