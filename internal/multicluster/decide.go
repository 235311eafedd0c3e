package multicluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// DefaultLostTimeout is how long a worker may be unreachable before the
// workloads running there are taken back and dispatched again.
const DefaultLostTimeout = 15 * time.Minute

// DefaultSpreadAfter is how long a waiting workload's one copy is given to
// be admitted before the other workers get a copy too.
const DefaultSpreadAfter = 5 * time.Second

// Worker is what the manager sees of one worker cluster for one workload.
type Worker struct {
	// Active: the worker is reached now. Since is when it last became
	// reached or unreachable.
	Active bool
	Since  time.Time
	// Copied: the worker holds a copy of the workload; Admitted: it
	// admitted it; Job: it holds the Job (or JobSet) made for it (only
	// known while Active).
	Copied, Admitted, Job bool
	// ReservedAt is when the worker's copy reserved quota there (its
	// QuotaReserved condition), as that worker's clock says.
	ReservedAt time.Time
	// Conflict, when not empty, says why no copy can be made there (no such
	// namespace, a Job of the same name that is not this workload's, no
	// JobSets served there for a JobSet's).
	Conflict string
	// Leaving: its WorkerCluster is being deleted. It gets no copy, and
	// what runs there is queued again.
	Leaving bool
}

// Input is one workload's situation.
type Input struct {
	// Workload is the manager's; Check names its multicluster check.
	Workload *berthv1.Workload
	Check    string
	// Clusters lists the config's workers in order of preference; Workers
	// has what is known of each, and of any other worker holding a copy.
	Clusters []string
	Workers  map[string]Worker
	// Refusal, when not empty, says why this workload cannot be dispatched
	// at all (not a Job, or a Job the manager's Job controller would run).
	Refusal     string
	Now         time.Time
	LostTimeout time.Duration
	// SpreadAfter, when not zero, sends a waiting workload to one worker
	// first and to the others only once it has waited that long since
	// FirstCopy; its check's first message waits as long. Zero sends
	// copies to every worker at once.
	SpreadAfter time.Duration
	// FirstCopy is when the workload's first copy was made, as the caller
	// remembers from the last Plan (zero: not known).
	FirstCopy time.Time
	// Preferred, when it names a worker of Clusters that can take a copy,
	// gets the first one instead of the first such worker in Clusters: the
	// caller passes the worker the last workload of this check went to,
	// which had room then, so that work overflowing the first worker does
	// not wait SpreadAfter each time.
	Preferred string
}

// Plan is what to do.
type Plan struct {
	// Create and Delete name the workers where a copy of the Workload is
	// made, or the copies (Workload and Job) are removed.
	Create, Delete []string
	// CreateJob, when not empty, is the worker where the Job (or JobSet)
	// is made: the one whose copy won.
	CreateJob string
	// State, when not nil, is the check's new state and message.
	State *berthv1.AdmissionCheckState
	// ClusterName, when not empty, is recorded as where the workload runs.
	ClusterName string
	// CopyStatusFrom names the worker whose Job's status the manager's Job
	// takes.
	CopyStatusFrom string
	// RecheckAfter, when not zero, is when to look again though nothing
	// changes (a lost worker's timeout).
	RecheckAfter time.Duration
	// Recalled: the workload, which must stop, has nothing left on the
	// worker it ran on (or that worker is lost for good): its
	// status.clusterName is cleared, which is what lets the manager give its
	// quota back (until then its pods may still run there).
	Recalled bool
	// FirstCopy, for the next Input: when the first copy of a workload
	// that waits for a worker was made (Now if this plan makes it); zero
	// once it waits for none.
	FirstCopy time.Time
}

// Decide says what a workload's situation calls for:
//   - a workload that does not hold quota, has finished, is being evicted
//     or deleted, or whose check is no longer Pending or Ready keeps no
//     copies; while it holds quota, the record of the worker it ran on is
//     cleared only once nothing of it is left there (Recalled), so its
//     quota is not given back while its pods may still run;
//   - one that waits (check Pending) gets a copy of its Workload on the
//     Preferred worker, else the first reached worker of its config, that
//     can take one, and on every other once it has waited SpreadAfter (at
//     once when that is zero: one copy admitted in time saves the others'
//     writes); of the workers whose copy is admitted, one that holds its
//     Job already wins (its pods may run: they are never deleted to settle
//     a race), else the one that reserved quota first (the config's order
//     breaks ties): its Job is made there, the check turns Ready and names
//     it, the other copies go (no pod ever runs on a loser);
//   - one that runs (check Ready) keeps only its copies there and takes its
//     Job's status from them; if its copy is gone, or the worker is lost for
//     longer than LostTimeout, the check turns Retry so the manager gives the
//     quota back and queues it again.
func Decide(in Input) Plan {
	wl := in.Workload
	var p Plan
	state, ok := checkState(wl, in.Check)
	switch {
	case !ok || !workload.HasQuota(wl) || workload.IsFinished(wl) || wl.DeletionTimestamp != nil ||
		workload.IsStopping(wl) || state.State == berthv1.CheckRetry || state.State == berthv1.CheckRejected:
		p.Delete = copiedExcept(in.Workers, "")
		recall(in, &p)
		return p
	case in.Refusal != "":
		p.State = newState(state, berthv1.CheckRejected, in.Refusal, in.Now)
		p.Delete = copiedExcept(in.Workers, "")
		return p
	case state.State == berthv1.CheckReady && wl.Status.ClusterName != "":
		return running(in, state)
	case state.State == berthv1.CheckReady:
		// Ready without a place: not this controller's doing; nothing to copy.
		return p
	}

	// Pending.
	if name := winner(in); name != "" {
		p.ClusterName = name
		p.State = newState(state, berthv1.CheckReady, fmt.Sprintf("admitted on worker cluster %s", name), in.Now)
		p.Delete = copiedExcept(in.Workers, name)
		if !in.Workers[name].Job {
			p.CreateJob = name
		}
		return p
	}
	var copied, free, down, refused []string
	for _, name := range in.Clusters {
		w := in.Workers[name]
		switch {
		case !w.Active:
			down = append(down, name)
		case w.Leaving:
			refused = append(refused, name+": it is being removed")
		case w.Conflict != "":
			refused = append(refused, name+": "+w.Conflict)
		case w.Copied:
			copied = append(copied, name)
		default:
			free = append(free, name)
		}
	}
	spread, first := spreading(in, len(copied) > 0)
	switch {
	case spread:
		p.Create = free
	case len(copied) == 0 && slices.Contains(free, in.Preferred):
		p.Create = []string{in.Preferred}
	case len(copied) == 0 && len(free) > 0:
		p.Create = free[:1]
	}
	var waiting, later []string
	for _, name := range in.Clusters {
		switch {
		case slices.Contains(copied, name) || slices.Contains(p.Create, name):
			waiting = append(waiting, name)
		case slices.Contains(free, name):
			later = append(later, name)
		}
	}
	if len(waiting) > 0 {
		p.FirstCopy = first
	}
	// Copies on workers dropped from the config, or leaving, go.
	for name, w := range in.Workers {
		if (w.Copied || w.Job) && (!slices.Contains(in.Clusters, name) || w.Leaving) {
			p.Delete = append(p.Delete, name)
		}
	}
	slices.Sort(p.Delete)
	if !spread && len(waiting) > 0 {
		p.RecheckAfter = first.Add(in.SpreadAfter).Sub(in.Now)
		if state.Message == "" {
			// A workload admitted within SpreadAfter never needed a message:
			// the write is saved. (One written before is kept up to date.)
			return p
		}
	}
	var msg []string
	if len(waiting) > 0 {
		msg = append(msg, "dispatched to "+strings.Join(waiting, ", ")+"; waiting for one of them to admit it")
	} else {
		msg = append(msg, "no worker cluster can take it yet")
	}
	if len(later) > 0 {
		msg = append(msg, fmt.Sprintf("to be dispatched to %s too if none has within %s", strings.Join(later, ", "), in.SpreadAfter))
	}
	if len(down) > 0 {
		msg = append(msg, "not reached: "+strings.Join(down, ", "))
	}
	if len(refused) > 0 {
		msg = append(msg, "not copied to "+strings.Join(refused, "; "))
	}
	p.State = newState(state, berthv1.CheckPending, strings.Join(msg, "; "), in.Now)
	return p
}

// spreading says whether a waiting workload's copies go to every worker
// that can take one (not only to the first), and since when it has had a
// copy. It spreads once it has waited SpreadAfter since its first copy, or
// at once when SpreadAfter is zero, or when copies exist that were made at
// a time not known (before a restart, say).
func spreading(in Input, copied bool) (bool, time.Time) {
	first := in.FirstCopy
	if first.IsZero() {
		if copied {
			return true, in.Now
		}
		first = in.Now
	}
	return in.SpreadAfter <= 0 || !in.Now.Before(first.Add(in.SpreadAfter)), first
}

// winner is the worker a waiting workload runs on, "" while none admitted
// it: one holding its Job already (made before a restart, say, when its
// record had not been written yet), else the first to reserve quota, else
// the first in the config's order.
func winner(in Input) string {
	best := ""
	for _, name := range in.Clusters {
		w := in.Workers[name]
		if !w.Active || !w.Admitted || w.Leaving || (!w.Job && w.Conflict != "") {
			continue
		}
		if best == "" {
			best = name
			continue
		}
		b := in.Workers[best]
		switch {
		case w.Job != b.Job:
			if w.Job {
				best = name
			}
		case !w.ReservedAt.IsZero() && (b.ReservedAt.IsZero() || w.ReservedAt.Before(b.ReservedAt)):
			best = name
		}
	}
	return best
}

func running(in Input, state berthv1.AdmissionCheckState) Plan {
	var p Plan
	name := in.Workload.Status.ClusterName
	p.Delete = copiedExcept(in.Workers, name)
	w, known := in.Workers[name]
	switch {
	case known && w.Leaving:
		p.State = newState(state, berthv1.CheckRetry,
			fmt.Sprintf("worker cluster %s is being removed; it is queued again", name), in.Now)
		p.Delete = copiedExcept(in.Workers, "")
	case known && w.Active && !w.Copied:
		p.State = newState(state, berthv1.CheckRetry,
			fmt.Sprintf("its Workload on worker cluster %s is gone; it is queued again", name), in.Now)
	case known && w.Active && !w.Job && w.Conflict != "":
		p.State = newState(state, berthv1.CheckRetry,
			fmt.Sprintf("its Job or JobSet cannot be made on worker cluster %s: %s; it is queued again", name, w.Conflict), in.Now)
	case known && w.Active && !w.Job:
		p.CreateJob = name
	case known && w.Active:
		p.CopyStatusFrom = name
	default:
		lost := in.Now.Sub(w.Since)
		if !known || lost >= in.LostTimeout {
			p.State = newState(state, berthv1.CheckRetry,
				fmt.Sprintf("worker cluster %s has not been reached for %s; it is queued again", name,
					in.LostTimeout), in.Now)
			p.Delete = copiedExcept(in.Workers, "")
		} else {
			p.RecheckAfter = in.LostTimeout - lost
		}
	}
	return p
}

// recall sets Recalled for a workload that holds quota and ran on a worker
// where nothing of it is left, or that is lost for longer than LostTimeout
// (RecheckAfter then, while it is lost for less).
func recall(in Input, p *Plan) {
	wl := in.Workload
	name := wl.Status.ClusterName
	if name == "" || !workload.HasQuota(wl) || workload.IsFinished(wl) {
		return
	}
	w, known := in.Workers[name]
	switch {
	case !known:
		p.Recalled = true // no such worker any more: its copies were collected when it went
	case w.Active:
		p.Recalled = !w.Copied && !w.Job
	case in.Now.Sub(w.Since) >= in.LostTimeout:
		p.Recalled = true
	default:
		p.RecheckAfter = in.LostTimeout - in.Now.Sub(w.Since)
	}
}

func checkState(wl *berthv1.Workload, name string) (berthv1.AdmissionCheckState, bool) {
	for _, c := range wl.Status.AdmissionChecks {
		if c.Name == name {
			return c, true
		}
	}
	return berthv1.AdmissionCheckState{}, false
}

// newState is the check's state after a decision, or nil when it says what
// the check says already.
func newState(old berthv1.AdmissionCheckState, state berthv1.CheckState, message string, now time.Time) *berthv1.AdmissionCheckState {
	if old.State == state && old.Message == message {
		return nil
	}
	s := old
	s.State, s.Message = state, message
	if old.State != state {
		s.LastTransitionTime.Time = now
	}
	return &s
}

func copiedExcept(workers map[string]Worker, keep string) []string {
	var out []string
	for name, w := range workers {
		if (w.Copied || w.Job) && name != keep {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
