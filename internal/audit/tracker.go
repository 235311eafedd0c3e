package audit

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Tracker follows workloads and Jobs over time, for the rules one snapshot
// cannot show. It is not safe for concurrent use.
type Tracker struct {
	// Grace is how long a queued Job may run while its Workload holds no
	// quota: after an eviction berth suspends the Job, which takes a moment.
	Grace time.Duration

	admittedAt map[string]admission // workload -> the admission it holds
	since      map[string]time.Time // Job -> since when it runs without quota
	reported   map[string]bool
}

// NewTracker returns a tracker with the given grace.
func NewTracker(grace time.Duration) *Tracker {
	return &Tracker{Grace: grace, admittedAt: map[string]admission{}, since: map[string]time.Time{}, reported: map[string]bool{}}
}

// Workload observes one version of a Workload, as a watch delivers them in
// order: a new admission while the last one was never seen released is a
// violation.
func (t *Tracker) Workload(w *berthv1.Workload, at time.Time) []Violation {
	k := key(w.Namespace, w.Name)
	if !holdsQuota(w) {
		delete(t.admittedAt, k)
		return nil
	}
	now := admission{requeues: requeues(w)}
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved); c != nil {
		now.made = c.LastTransitionTime.Time
	}
	prev, held := t.admittedAt[k]
	t.admittedAt[k] = now
	made := now.made
	// Every release of quota before a new admission counts a requeue, so a
	// higher count proves the release even when the watch never showed it
	// (a relist after a lost watch delivers only the latest version).
	if held && !prev.made.Equal(made) && now.requeues == prev.requeues {
		return []Violation{{At: at, Rule: AdmittedTwice, Objects: []string{"Workload " + k},
			Message: fmt.Sprintf("admitted at %s in ClusterQueue %s while its admission of %s was never released",
				made.Format(time.RFC3339), w.Status.Admission.ClusterQueue, prev.made.Format(time.RFC3339))}}
	}
	return nil
}

// admission is what the tracker remembers of a workload's admission: when
// it was made, and how often the workload had been requeued then.
type admission struct {
	made     time.Time
	requeues int32
}

func requeues(w *berthv1.Workload) int32 {
	if rs := w.Status.RequeueState; rs != nil && rs.Count != nil {
		return *rs.Count
	}
	return 0
}

// Forget drops a deleted Workload.
func (t *Tracker) Forget(namespace, name string) { delete(t.admittedAt, key(namespace, name)) }

// Jobs checks that no queued Job has run (unsuspended, not finished) for
// longer than Grace while its Workload was not admitted: it held no quota,
// or still waited for an admission check.
func (t *Tracker) Jobs(s Snapshot) []Violation {
	quota := admittedJobs(s.Workloads)
	var out []Violation
	seen := map[string]bool{}
	for _, j := range s.Jobs {
		k := key(j.Namespace, j.Name)
		if !runsUnadmitted(j, quota) {
			continue
		}
		seen[k] = true
		start, ok := t.since[k]
		if !ok {
			t.since[k] = s.At
			continue
		}
		if s.At.Sub(start) > t.Grace && !t.reported[k] {
			t.reported[k] = true
			out = append(out, Violation{At: s.At, Rule: RunsWithoutQuota, Objects: []string{"Job " + k},
				Message: fmt.Sprintf("unsuspended since %s without an admitted Workload", start.Format(time.RFC3339Nano))})
		}
	}
	for k := range t.since {
		if !seen[k] {
			delete(t.since, k)
		}
	}
	return out
}

// Unreport forgets that Job k was reported, and starts its grace again: the
// report was not confirmed.
func (t *Tracker) Unreport(k string, now time.Time) {
	if t.reported[k] {
		delete(t.reported, k)
		t.since[k] = now
	}
}

// admittedJobs are the Jobs whose Workload is admitted (quota and every
// check), by UID.
func admittedJobs(workloads []*berthv1.Workload) map[types.UID]bool {
	quota := map[types.UID]bool{}
	for _, w := range workloads {
		for _, o := range w.OwnerReferences {
			if o.Kind == "Job" && holdsQuota(w) && meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadAdmitted) {
				quota[o.UID] = true
			}
		}
	}
	return quota
}

// runsUnadmitted: a queued Job that runs (not suspended, not finished)
// while its Workload is not admitted.
func runsUnadmitted(j *batchv1.Job, admitted map[types.UID]bool) bool {
	return queued(j) && !suspended(j) && !finished(j) && !admitted[j.UID]
}

func queued(j *batchv1.Job) bool {
	return j.Labels[berthv1.QueueNameLabel] != "" || j.Labels[berthv1.KueueQueueNameLabel] != ""
}

func suspended(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == "True" {
			return true
		}
	}
	return false
}
