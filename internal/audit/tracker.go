package audit

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Tracker follows workloads, Jobs and Pods over time, for the rules one
// snapshot cannot show. It is not safe for concurrent use.
type Tracker struct {
	// Grace is how long a queued Job or Pod may run while its Workload holds
	// no quota: after an eviction berth suspends the Job or deletes the
	// Pods, which takes a moment.
	Grace time.Duration

	admittedAt map[string]admission // workload -> the admission it holds
	since      map[string]time.Time // "Job ns/name", "Pod ns/name" -> since when it runs without quota
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

// Running checks that no queued Job has run (unsuspended, not finished), and
// no queued Pod has been bound to a node or run, for longer than Grace while
// its Workload was not admitted: it held no quota, or still waited for an
// admission check. Pods are judged from themselves, whatever made them: a
// Job's, a plain Pod, a pod group's, a virtual cluster tenant's host Pod.
func (t *Tracker) Running(s Snapshot) []Violation {
	admitted, queuedBy := workloadOwners(s.Workloads)
	jobs := map[types.UID]*batchv1.Job{}
	var running []string
	for _, j := range s.Jobs {
		jobs[j.UID] = j
		if runsUnadmitted(j, admitted) {
			running = append(running, "Job "+key(j.Namespace, j.Name))
		}
	}
	for _, p := range s.Pods {
		if podRunsUnadmitted(p, jobs, queuedBy, admitted) {
			running = append(running, "Pod "+key(p.Namespace, p.Name))
		}
	}
	var out []Violation
	seen := map[string]bool{}
	for _, k := range running {
		seen[k] = true
		start, ok := t.since[k]
		if !ok {
			t.since[k] = s.At
			continue
		}
		if s.At.Sub(start) > t.Grace && !t.reported[k] {
			t.reported[k] = true
			what := "unsuspended"
			if strings.HasPrefix(k, "Pod ") {
				what = "bound to a node"
			}
			out = append(out, Violation{At: s.At, Rule: RunsWithoutQuota, Objects: []string{k},
				Message: fmt.Sprintf("%s since %s without an admitted Workload", what, start.Format(time.RFC3339Nano))})
		}
	}
	for k := range t.since {
		if !seen[k] {
			delete(t.since, k)
		}
	}
	return out
}

// Postpone forgets that object k was reported, keeping when it was first
// seen running: the next Running reports it again, for a report that could
// not be confirmed or dismissed yet.
func (t *Tracker) Postpone(k string) { delete(t.reported, k) }

// Unreport forgets that object k ("Job ns/name", "Pod ns/name") was
// reported, and starts its grace again: the report was not confirmed.
func (t *Tracker) Unreport(k string, now time.Time) {
	if t.reported[k] {
		delete(t.reported, k)
		t.since[k] = now
	}
}

// workloadOwners lists, by UID, the objects whose Workload is admitted
// (quota and every check), and every object that owns a Workload at all:
// what berth queues.
func workloadOwners(workloads []*berthv1.Workload) (admitted, queuedBy map[types.UID]bool) {
	admitted, queuedBy = map[types.UID]bool{}, map[types.UID]bool{}
	for _, w := range workloads {
		in := holdsQuota(w) && meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadAdmitted)
		for _, o := range w.OwnerReferences {
			queuedBy[o.UID] = true
			if in {
				admitted[o.UID] = true
			}
		}
	}
	return admitted, queuedBy
}

// runsUnadmitted: a queued Job that runs (not suspended, not finished)
// while its Workload is not admitted.
func runsUnadmitted(j *batchv1.Job, admitted map[types.UID]bool) bool {
	return queued(j) && !suspended(j) && !finished(j) && !admitted[j.UID]
}

// podRunsUnadmitted: a Pod bound to a node and not finished nor being
// deleted, that berth queues (by its queue label, its Job's, or a Workload
// for it or its owner), while neither it nor its owner has an admitted
// Workload. A Pod being deleted is let go: stopping takes its grace period.
func podRunsUnadmitted(p *corev1.Pod, jobs map[types.UID]*batchv1.Job, queuedBy, admitted map[types.UID]bool) bool {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil ||
		p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	owner := types.UID("")
	if ref := metav1.GetControllerOf(p); ref != nil {
		owner = ref.UID
	}
	isQueued := p.Labels[berthv1.QueueNameLabel] != "" || p.Labels[berthv1.KueueQueueNameLabel] != "" || queuedBy[p.UID] ||
		(owner != "" && (queuedBy[owner] || (jobs[owner] != nil && queued(jobs[owner]))))
	return isQueued && !admitted[p.UID] && (owner == "" || !admitted[owner])
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
