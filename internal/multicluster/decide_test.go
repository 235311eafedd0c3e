package multicluster_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/multicluster"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/test/fixtures"
)

const check = "mc"

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func waiting() *fixtures.WorkloadWrapper {
	return fixtures.MakeWorkload("w", "ns").Queue("lq").Reserved("cq", check)
}

func up(copied, admitted bool) multicluster.Worker {
	return multicluster.Worker{Active: true, Since: now.Add(-time.Hour), Copied: copied, Admitted: admitted}
}

// running is a worker whose copy won and runs its Job.
func running() multicluster.Worker {
	w := up(true, true)
	w.Job = true
	return w
}

// reserved is a worker whose copy reserved quota, ago before now.
func reserved(ago time.Duration) multicluster.Worker {
	w := up(true, true)
	w.ReservedAt = now.Add(-ago)
	return w
}

func down(since time.Duration, copied bool) multicluster.Worker {
	return multicluster.Worker{Since: now.Add(-since), Copied: copied}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wl      *berthv1.Workload
		workers map[string]multicluster.Worker
		refusal string
		// spreadAfter and firstCopy: Input's SpreadAfter and FirstCopy
		spreadAfter time.Duration
		firstCopy   time.Time
		preferred   string
		want        multicluster.Plan
		// state and message the check should get (message: a part of it)
		state   berthv1.CheckState
		message string
	}{{
		name:    "waiting: copied to every reached worker, in the config's order",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"a": up(false, false), "b": up(false, false), "c": down(time.Minute, false)},
		want:    multicluster.Plan{Create: []string{"a", "b"}, FirstCopy: now},
		state:   berthv1.CheckPending, message: "dispatched to a, b; waiting for one of them to admit it; not reached: c",
	}, {
		name:    "waiting: copies already made, nothing more to do",
		wl:      waiting().Check(check, berthv1.CheckPending, "dispatched to a, b; waiting for one of them to admit it; not reached: c").Obj(),
		workers: map[string]multicluster.Worker{"a": up(true, false), "b": up(true, false), "c": down(time.Minute, false)},
		want:    multicluster.Plan{FirstCopy: now},
	}, {
		name:    "a worker added to the config later is offered it too",
		wl:      waiting().Check(check, berthv1.CheckPending, "dispatched to a; waiting for one of them to admit it").Obj(),
		workers: map[string]multicluster.Worker{"a": up(true, false), "b": up(false, false)},
		want:    multicluster.Plan{Create: []string{"b"}, FirstCopy: now},
		state:   berthv1.CheckPending, message: "dispatched to a, b",
	}, {
		name:        "spreading: the first worker that can take a copy gets one; the check says nothing yet",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": down(time.Minute, false), "b": up(false, false), "c": up(false, false)},
		spreadAfter: 5 * time.Second,
		want:        multicluster.Plan{Create: []string{"b"}, FirstCopy: now, RecheckAfter: 5 * time.Second},
	}, {
		name:        "spreading: the preferred worker (where the last workload went) gets the first copy",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": up(false, false), "b": up(false, false), "c": up(false, false)},
		spreadAfter: 5 * time.Second, preferred: "c",
		want: multicluster.Plan{Create: []string{"c"}, FirstCopy: now, RecheckAfter: 5 * time.Second},
	}, {
		name:        "spreading: a preferred worker that cannot take a copy is passed over",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": up(false, false), "b": up(false, false), "c": down(time.Second, false)},
		spreadAfter: 5 * time.Second, preferred: "c",
		want: multicluster.Plan{Create: []string{"a"}, FirstCopy: now, RecheckAfter: 5 * time.Second},
	}, {
		name:      "no spreading: the preferred worker changes nothing",
		wl:        waiting().Obj(),
		workers:   map[string]multicluster.Worker{"a": up(false, false), "b": up(false, false), "c": up(false, false)},
		preferred: "c",
		want:      multicluster.Plan{Create: []string{"a", "b", "c"}, FirstCopy: now},
		state:     berthv1.CheckPending, message: "dispatched to a, b, c;",
	}, {
		name:        "spreading: within the time no other copy is made",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": up(true, false), "b": up(false, false)},
		spreadAfter: 5 * time.Second, firstCopy: now.Add(-2 * time.Second),
		want: multicluster.Plan{FirstCopy: now.Add(-2 * time.Second), RecheckAfter: 3 * time.Second},
	}, {
		name:        "spreading: the worker with the copy is lost: the next one gets a copy, within the same time",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": down(time.Second, true), "b": up(false, false), "c": up(false, false)},
		spreadAfter: 5 * time.Second, firstCopy: now.Add(-2 * time.Second),
		want: multicluster.Plan{Create: []string{"b"}, FirstCopy: now.Add(-2 * time.Second), RecheckAfter: 3 * time.Second},
	}, {
		name:        "spreading: a message written before is kept true meanwhile",
		wl:          waiting().Check(check, berthv1.CheckPending, "no worker cluster can take it yet; not reached: a, b, c").Obj(),
		workers:     map[string]multicluster.Worker{"a": up(false, false), "b": up(false, false), "c": down(time.Minute, false)},
		spreadAfter: 5 * time.Second,
		want:        multicluster.Plan{Create: []string{"a"}, FirstCopy: now, RecheckAfter: 5 * time.Second},
		state:       berthv1.CheckPending, message: "dispatched to a; waiting for one of them to admit it; to be dispatched to b too if none has within 5s; not reached: c",
	}, {
		name:        "spreading: once the time is up, every worker gets a copy, and the check says where it waits",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": up(true, false), "b": up(false, false), "c": up(false, false)},
		spreadAfter: 5 * time.Second, firstCopy: now.Add(-5 * time.Second),
		want:  multicluster.Plan{Create: []string{"b", "c"}, FirstCopy: now.Add(-5 * time.Second)},
		state: berthv1.CheckPending, message: "dispatched to a, b, c; waiting for one of them to admit it",
	}, {
		name:        "spreading: copies made at a time not known (before a restart) spread at once",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": up(true, false), "b": up(false, false)},
		spreadAfter: 5 * time.Second,
		want:        multicluster.Plan{Create: []string{"b"}, FirstCopy: now},
		state:       berthv1.CheckPending, message: "dispatched to a, b;",
	}, {
		name:        "spreading: no worker can take a copy: the check says so at once",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": down(time.Minute, false), "b": {Active: true, Conflict: "no namespace"}},
		spreadAfter: 5 * time.Second,
		want:        multicluster.Plan{},
		state:       berthv1.CheckPending, message: "no worker cluster can take it yet; not reached: a, c; not copied to b: no namespace",
	}, {
		name:        "spreading: the one copy admitted in time wins; nothing waits any more",
		wl:          waiting().Obj(),
		workers:     map[string]multicluster.Worker{"a": reserved(time.Second), "b": up(false, false)},
		spreadAfter: 5 * time.Second, firstCopy: now.Add(-2 * time.Second),
		want:  multicluster.Plan{ClusterName: "a", CreateJob: "a"},
		state: berthv1.CheckReady, message: "admitted on worker cluster a",
	}, {
		name:    "of admitting workers reserving at once, the first in the config's order wins: its Job is made there, the other copies go",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"a": up(true, false), "b": up(true, true), "c": up(true, true)},
		want:    multicluster.Plan{ClusterName: "b", Delete: []string{"a", "c"}, CreateJob: "b"},
		state:   berthv1.CheckReady, message: "admitted on worker cluster b",
	}, {
		name:    "the worker that reserved quota first wins, whatever the config's order",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"b": reserved(time.Second), "c": reserved(2 * time.Second)},
		want:    multicluster.Plan{ClusterName: "c", Delete: []string{"b"}, CreateJob: "c"},
		state:   berthv1.CheckReady, message: "admitted on worker cluster c",
	}, {
		name: "a worker holding its Job already wins: pods that may run are never deleted to settle a race",
		wl:   waiting().Obj(),
		workers: map[string]multicluster.Worker{"b": reserved(2 * time.Second),
			"c": func() multicluster.Worker { w := reserved(time.Second); w.Job = true; return w }()},
		want:  multicluster.Plan{ClusterName: "c", Delete: []string{"b"}},
		state: berthv1.CheckReady, message: "admitted on worker cluster c",
	}, {
		name:    "a worker with a Job of the same name gets no copy, and the message says why",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"a": {Active: true, Conflict: "Job ns/j exists and is not a copy"}, "b": up(false, false)},
		want:    multicluster.Plan{Create: []string{"b"}, FirstCopy: now},
		state:   berthv1.CheckPending, message: "not copied to a: Job ns/j exists and is not a copy",
	}, {
		name:    "no worker reached: it waits, and says so",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"a": down(time.Minute, false), "b": down(time.Minute, false)},
		want:    multicluster.Plan{},
		state:   berthv1.CheckPending, message: "no worker cluster can take it yet; not reached: a, b",
	}, {
		name:    "a copy on a worker no longer in the config goes",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"a": up(true, false), "old": up(true, false)},
		want:    multicluster.Plan{Delete: []string{"old"}, FirstCopy: now},
		state:   berthv1.CheckPending, message: "dispatched to a;",
	}, {
		name:    "running: the status comes from its worker; stray copies go",
		wl:      waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": running(), "b": up(true, false)},
		want:    multicluster.Plan{Delete: []string{"b"}, CopyStatusFrom: "a"},
	}, {
		name:    "running: a Job not made yet (its first try failed) is made",
		wl:      waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": up(true, true)},
		want:    multicluster.Plan{CreateJob: "a"},
	}, {
		name:    "running: its Workload was deleted on the worker, so it is queued again",
		wl:      waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": up(false, false)},
		want:    multicluster.Plan{},
		state:   berthv1.CheckRetry, message: "its Workload on worker cluster a is gone",
	}, {
		name:    "running: a worker lost for less than the timeout is waited for",
		wl:      waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": down(4*time.Minute, true)},
		want:    multicluster.Plan{RecheckAfter: 11 * time.Minute},
	}, {
		name:    "running: a worker lost for longer is given up on; the workload is queued again",
		wl:      waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": down(16*time.Minute, true), "b": up(true, false)},
		want:    multicluster.Plan{Delete: []string{"a", "b"}},
		state:   berthv1.CheckRetry, message: "worker cluster a has not been reached for 15m0s",
	}, {
		name:    "finished: every copy goes",
		wl:      func() *berthv1.Workload { w := waiting().Obj(); finish(w); return w }(),
		workers: map[string]multicluster.Worker{"a": up(true, true), "b": up(true, false)},
		want:    multicluster.Plan{Delete: []string{"a", "b"}},
	}, {
		name:    "no quota any more: every copy goes",
		wl:      fixtures.MakeWorkload("w", "ns").Queue("lq").Obj(),
		workers: map[string]multicluster.Worker{"a": up(true, false)},
		want:    multicluster.Plan{Delete: []string{"a"}},
	}, {
		name:    "retry: every copy goes",
		wl:      waiting().Check(check, berthv1.CheckRetry, "x").Obj(),
		workers: map[string]multicluster.Worker{"a": up(true, false)},
		want:    multicluster.Plan{Delete: []string{"a"}},
	}, {
		name: "evicted while it runs: every copy goes, and the worker stays recorded while its Job is there",
		wl: waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").
			Stopping("Preempted").Obj(),
		workers: map[string]multicluster.Worker{"a": running(), "b": up(true, false)},
		want:    multicluster.Plan{Delete: []string{"a", "b"}},
	}, {
		name: "evicted while it runs: a Job being deleted without its Workload copy is waited for too",
		wl: waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").
			Stopping("Preempted").Obj(),
		workers: map[string]multicluster.Worker{"a": {Active: true, Job: true}},
		want:    multicluster.Plan{Delete: []string{"a"}},
	}, {
		name: "evicted, and nothing of it left on its worker: recalled, so its quota may go",
		wl: waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").
			Stopping("Preempted").Obj(),
		workers: map[string]multicluster.Worker{"a": up(false, false)},
		want:    multicluster.Plan{Recalled: true},
	}, {
		name:    "retry after the worker was lost for good: recalled without waiting for copies it cannot see",
		wl:      waiting().Check(check, berthv1.CheckRetry, "lost").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": down(16*time.Minute, true)},
		want:    multicluster.Plan{Delete: []string{"a"}, Recalled: true},
	}, {
		name:    "retry while its worker is unreachable for less than the timeout: it is not recalled yet",
		wl:      waiting().Check(check, berthv1.CheckRetry, "x").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": down(4*time.Minute, true)},
		want:    multicluster.Plan{Delete: []string{"a"}, RecheckAfter: 11 * time.Minute},
	}, {
		name:    "evicted from a worker that no longer exists: recalled",
		wl:      waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster z").RunsOn("z").Stopping("Preempted").Obj(),
		workers: map[string]multicluster.Worker{"a": up(false, false)},
		want:    multicluster.Plan{Recalled: true},
	}, {
		name:    "waiting: a leaving worker gets no copy, its copy goes, and it never wins",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"a": func() multicluster.Worker { w := reserved(time.Second); w.Leaving = true; return w }(), "b": up(false, false)},
		want:    multicluster.Plan{Create: []string{"b"}, Delete: []string{"a"}, FirstCopy: now},
		state:   berthv1.CheckPending, message: "not copied to a: it is being removed",
	}, {
		name:    "running on a leaving worker: queued again, its copies go",
		wl:      waiting().Check(check, berthv1.CheckReady, "admitted on worker cluster a").RunsOn("a").Obj(),
		workers: map[string]multicluster.Worker{"a": func() multicluster.Worker { w := running(); w.Leaving = true; return w }()},
		want:    multicluster.Plan{Delete: []string{"a"}},
		state:   berthv1.CheckRetry, message: "worker cluster a is being removed",
	}, {
		name:    "what cannot be dispatched is rejected, and no copy is made",
		wl:      waiting().Obj(),
		workers: map[string]multicluster.Worker{"a": up(false, false)},
		refusal: "only Jobs are dispatched",
		want:    multicluster.Plan{},
		state:   berthv1.CheckRejected, message: "only Jobs are dispatched",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := multicluster.Decide(multicluster.Input{Workload: tc.wl, Check: check, Clusters: []string{"a", "b", "c"},
				Workers: tc.workers, Refusal: tc.refusal, Now: now, LostTimeout: multicluster.DefaultLostTimeout,
				SpreadAfter: tc.spreadAfter, FirstCopy: tc.firstCopy, Preferred: tc.preferred})
			state := got.State
			got.State = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.state == "" && state != nil:
				t.Errorf("check set to %s %q; want it unchanged", state.State, state.Message)
			case tc.state != "" && state == nil:
				t.Errorf("check unchanged; want %s %q", tc.state, tc.message)
			case tc.state != "" && (state.State != tc.state || !strings.Contains(state.Message, tc.message)):
				t.Errorf("check set to %s %q; want %s with %q", state.State, state.Message, tc.state, tc.message)
			}
		})
	}
}

func finish(w *berthv1.Workload) { workload.SetFinished(w, "JobSucceeded", "done", now) }
