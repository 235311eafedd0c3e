package podsready

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// Options are the rules, from berth controller's flags.
type Options struct {
	// Timeout is how long after its admission a workload's pods have to be
	// all Ready at once.
	Timeout time.Duration
	// BackoffBase and BackoffMax: after its n-th timeout a workload waits
	// BackoffBase doubled n-1 times, at most BackoffMax, before it may be
	// admitted again.
	BackoffBase, BackoffMax time.Duration
	// RequeueLimit is how many timeouts deactivate a workload; 0 never does.
	RequeueLimit int32
	// BlockAdmission: a ClusterQueue admits nothing while a workload it
	// admitted waits for its pods (the scheduler's, not Decide's, to apply).
	BlockAdmission bool
	// Since is when the controller started: a workload admitted before is
	// given the whole Timeout from then, as its pods' readiness may not have
	// been recorded while no controller ran.
	Since time.Time
}

// DefaultOptions are Kueue's defaults: a timeout of 5 minutes, backing off
// from a minute to an hour, never deactivated.
func DefaultOptions() Options {
	return Options{Timeout: 5 * time.Minute, BackoffBase: time.Minute, BackoffMax: time.Hour}
}

// Validate refuses rules that cannot be followed, naming the flag.
func (o Options) Validate() error {
	switch {
	case o.Timeout <= 0:
		return fmt.Errorf("--pods-ready-timeout %s: must be positive", o.Timeout)
	case o.BackoffBase <= 0:
		return fmt.Errorf("--pods-ready-backoff-base %s: must be positive", o.BackoffBase)
	case o.BackoffMax < o.BackoffBase:
		return fmt.Errorf("--pods-ready-backoff-max %s: must be at least --pods-ready-backoff-base %s", o.BackoffMax, o.BackoffBase)
	case o.RequeueLimit < 0:
		return fmt.Errorf("--pods-ready-requeue-limit %d: must be 0 (no limit) or more", o.RequeueLimit)
	}
	return nil
}

// Action is what a workload calls for.
type Action int

const (
	// Wait: nothing now; look again After, if it is set.
	Wait Action = iota
	// Evict: its pods were not all Ready in time; it gives its quota back
	// and queues again after a backoff.
	Evict
	// Deactivate: as Evict, and it was the last try: the workload is taken
	// out of its queue (spec.active false) until someone resumes it.
	Deactivate
	// Reset: it was resumed after it was deactivated for its timeouts: its
	// tries start again.
	Reset
)

// Decision is what to do, and why in words.
type Decision struct {
	Action  Action
	After   time.Duration
	Message string
}

// Decide looks at a workload at now.
func Decide(w *berthv1.Workload, o Options, now time.Time) Decision {
	if !workload.PodsReadySubject(w) || workload.IsFinished(w) || !workload.IsActive(w) {
		return Decision{}
	}
	if c := limited(w); c != nil {
		// Deactivated for its timeouts: the status says so first, then
		// spec.active false. Active at the same generation, the second
		// write is still to make (the controller stopped in between);
		// active at a later one, someone resumed it.
		switch {
		case c.ObservedGeneration == w.Generation:
			return Decision{Action: Deactivate, Message: c.Message}
		case workload.HasQuota(w):
			return Decision{} // its pods are still stopping
		default:
			return Decision{Action: Reset, Message: "it was resumed: its tries start again"}
		}
	}
	if !workload.IsAdmitted(w) || workload.IsStopping(w) || workload.PodsReady(w) {
		return Decision{}
	}
	start := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadAdmitted).LastTransitionTime.Time
	if start.Before(o.Since) {
		start = o.Since
	}
	if left := start.Add(o.Timeout).Sub(now); left > 0 {
		return Decision{After: left}
	}
	try := workload.PodsReadyTimeouts(w) + 1
	msg := fmt.Sprintf("its pods were not all Ready within %s of its admission", o.Timeout)
	if o.RequeueLimit > 0 && try >= o.RequeueLimit {
		return Decision{Action: Deactivate, Message: fmt.Sprintf(
			"%s, %d times: it is deactivated (spec.active is false) until it is resumed (berth resume)", msg, try)}
	}
	return Decision{Action: Evict, Message: fmt.Sprintf("%s (try %d); it queues again after %s",
		msg, try, workload.Backoff(try, o.BackoffBase, o.BackoffMax))}
}

// limited is the PodsReady condition of a workload deactivated for its
// timeouts, nil for any other.
func limited(w *berthv1.Workload) *metav1.Condition {
	c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady)
	if c != nil && c.Status == metav1.ConditionFalse && c.Reason == workload.RequeuingLimitExceeded {
		return c
	}
	return nil
}

// Apply makes the status change d calls for, and reports whether it
// changed anything. For Deactivate, the caller then sets spec.active false.
func Apply(w *berthv1.Workload, d Decision, o Options, now time.Time) bool {
	switch d.Action {
	case Evict, Deactivate:
		if limited(w) != nil {
			return false // recorded already
		}
		try := workload.PodsReadyTimeouts(w) + 1
		reason := workload.PodsReadyTimeout
		if d.Action == Deactivate {
			reason = workload.RequeuingLimitExceeded
		}
		// Its quota goes back once its pods are gone (the Job integration
		// releases it), as for any eviction of a Job.
		workload.SetStopping(w, workload.PodsReadyTimeout, d.Message, now, true)
		workload.SetPodsNotReady(w, reason, d.Message, now)
		w.Status.RequeueState.PodsReadyTimeouts = &try
		workload.DelayRequeue(w, now.Add(workload.Backoff(try, o.BackoffBase, o.BackoffMax)))
		return true
	case Reset:
		if w.Status.RequeueState != nil {
			w.Status.RequeueState.PodsReadyTimeouts = nil
		}
		meta.RemoveStatusCondition(&w.Status.Conditions, berthv1.WorkloadPodsReady)
		return true
	}
	return false
}
