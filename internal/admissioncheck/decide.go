package admissioncheck

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// Action is what a workload's check states call for.
type Action int

const (
	// Wait: nothing to do; a check is still Pending, or the workload holds
	// no quota, is already Admitted, or has finished.
	Wait Action = iota
	// Admit: every check is Ready; Apply sets Admitted.
	Admit
	// Sync: its ClusterQueue's checks changed while it waited; Apply lists
	// the new ones as Pending and drops the ones no longer asked for.
	Sync
	// Retry: a check asks to try later; the quota goes back and the
	// workload queues again after a backoff (Message says why).
	Retry
	// Reject: a check refused it; it is deactivated (spec.active false).
	Reject
)

// Decision is what to do, and why in words.
type Decision struct {
	Action  Action
	Message string
}

// RetryReason is the Evicted reason of a workload a check asked to retry.
const RetryReason = "AdmissionCheckRetry"

// Decide looks at a workload's check states against checks, the list its
// ClusterQueue asks for now. A Rejected or Retry state counts even once the
// workload is Admitted: a check may take back its Ready.
func Decide(w *berthv1.Workload, checks []string) Decision {
	if !workload.HasQuota(w) || workload.IsFinished(w) || workload.IsStopping(w) || !workload.IsActive(w) {
		return Decision{}
	}
	if c, ok := workload.RejectedBy(w); ok {
		return Decision{Action: Reject, Message: said(c, "rejected the workload")}
	}
	for _, c := range w.Status.AdmissionChecks {
		if c.State == berthv1.CheckRetry {
			return Decision{Action: Retry, Message: said(c, "asked to retry later")}
		}
	}
	if workload.IsAdmitted(w) {
		return Decision{}
	}
	if len(checks) == 0 {
		// Its queue no longer asks for any check: nothing left to wait for.
		return Decision{Action: Admit, Message: "its ClusterQueue no longer has admission checks"}
	}
	if !sameChecks(w.Status.AdmissionChecks, checks) {
		return Decision{Action: Sync, Message: fmt.Sprintf("its ClusterQueue's admission checks are now %v", checks)}
	}
	for _, c := range w.Status.AdmissionChecks {
		if c.State != berthv1.CheckReady {
			return Decision{}
		}
	}
	return Decision{Action: Admit}
}

func said(c berthv1.AdmissionCheckState, what string) string {
	msg := fmt.Sprintf("admission check %s %s", c.Name, what)
	if c.Message != "" {
		msg += ": " + c.Message
	}
	return msg
}

func sameChecks(states []berthv1.AdmissionCheckState, checks []string) bool {
	if len(states) != len(checks) {
		return false
	}
	for _, s := range states {
		if !slices.Contains(checks, s.Name) {
			return false
		}
	}
	return true
}

// Apply makes the status change an Admit or Sync decision calls for. Sync
// keeps the states of checks still asked for, in checks' order.
func Apply(w *berthv1.Workload, d Decision, checks []string, now time.Time) {
	switch d.Action {
	case Admit:
		if len(checks) == 0 {
			w.Status.AdmissionChecks = nil
		}
		workload.SetChecksPassed(w, now)
	case Sync:
		var out []berthv1.AdmissionCheckState
		for _, name := range checks {
			i := slices.IndexFunc(w.Status.AdmissionChecks, func(s berthv1.AdmissionCheckState) bool { return s.Name == name })
			if i >= 0 {
				out = append(out, w.Status.AdmissionChecks[i])
			} else {
				out = append(out, berthv1.AdmissionCheckState{Name: name, State: berthv1.CheckPending,
					LastTransitionTime: metav1.NewTime(now)})
			}
		}
		w.Status.AdmissionChecks = out
	}
}
