// Package workload holds what berth knows about its Workload objects: their
// state as read from conditions, their translation to and from the scheduling
// core, and the status changes that admit, evict or finish them. It reads and
// builds objects; it never talks to the API server.
package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/runtimelimit"
	"github.com/berth-dev/berth/internal/topology"
)

// Key is namespace/name.
func Key(w *berthv1.Workload) string { return w.Namespace + "/" + w.Name }

// LocalQueueKey is the namespace/name of the LocalQueue a workload is submitted to.
func LocalQueueKey(w *berthv1.Workload) string { return w.Namespace + "/" + w.Spec.QueueName }

// IsFinished reports the Finished condition.
func IsFinished(w *berthv1.Workload) bool {
	return meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadFinished)
}

// Outline strips a finished workload down to what berth still reads of it:
// its metadata, queue, priority, Finished condition and the worker cluster
// it ran on (its copies there are deleted once it finished). A finished workload
// is final and holds no quota, so berth only needs to know that it finished;
// the rest is dead weight in the controller's cache, where most workloads of
// a busy cluster are finished ones (docs/benchmarks.md). Other workloads are
// left as they are.
func Outline(w *berthv1.Workload) {
	finished := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadFinished)
	if finished == nil || finished.Status != metav1.ConditionTrue {
		return
	}
	w.Spec.PodSets = nil
	w.Status = berthv1.WorkloadStatus{Conditions: []metav1.Condition{*finished}, ClusterName: w.Status.ClusterName}
}

// IsActive reports spec.active, true when unset.
func IsActive(w *berthv1.Workload) bool { return w.Spec.Active == nil || *w.Spec.Active }

// HasQuota reports whether the workload holds quota: it has an admission and
// QuotaReserved is True.
func HasQuota(w *berthv1.Workload) bool {
	return w.Status.Admission != nil && meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadQuotaReserved)
}

// IsAdmitted reports the Admitted condition on a workload that holds quota.
func IsAdmitted(w *berthv1.Workload) bool {
	return HasQuota(w) && meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadAdmitted)
}

// Priority is the workload's priority (0 when unset).
func Priority(w *berthv1.Workload) int32 {
	if w.Spec.Priority != nil {
		return *w.Spec.Priority
	}
	return 0
}

// QueueTimestamp orders a workload in its queue: its last eviction, if it was
// evicted, else its creation.
func QueueTimestamp(w *berthv1.Workload) time.Time {
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return w.CreationTimestamp.Time
}

// ToCore translates a pending workload for the scheduling core.
func ToCore(w *berthv1.Workload, nsLabels labels.Set) *core.Workload {
	cw := &core.Workload{
		Key:             Key(w),
		NamespaceLabels: nsLabels,
		Priority:        Priority(w),
		Timestamp:       QueueTimestamp(w),
		Version:         w.ResourceVersion,
		PodSets:         make([]core.PodSet, 0, len(w.Spec.PodSets)),
		AwaitsPods:      PodsReadySubject(w),
	}
	if rs := w.Status.RequeueState; rs != nil && rs.RequeueAt != nil {
		cw.NotBefore = rs.RequeueAt.Time
	}
	steerable := steerable(w)
	// A growth Workload (written by berth alone) is admitted only in the
	// flavors its Job's pods run in.
	var pinned map[string]string
	if data, ok := w.Annotations[berthv1.GrowthFlavorsAnnotation]; ok {
		_ = json.Unmarshal([]byte(data), &pinned)
	}
	for _, ps := range w.Spec.PodSets {
		cps := core.PodSet{Name: ps.Name, Count: ps.Count, Requests: CoreRequests(RequestsOf(w, ps)),
			NodeSelector: ps.NodeSelector, Tolerations: ps.Tolerations, NodeAffinity: ps.NodeAffinity,
			Topology: TopologyRequestOf(ps.TopologyRequest), Steerable: steerable, Flavors: pinned}
		if ps.MinCount != nil {
			cps.MinCount = *ps.MinCount
		}
		cw.PodSets = append(cw.PodSets, cps)
	}
	return cw
}

// RequestsOf is what one pod of ps, a pod set of w, asks for as quota
// counts it: its status.resourceRequests when written (devices counted in),
// else its spec's.
func RequestsOf(w *berthv1.Workload, ps berthv1.PodSet) corev1.ResourceList {
	for _, r := range w.Status.ResourceRequests {
		if r.Name == ps.Name {
			return r.Resources
		}
	}
	return ps.Requests
}

// CoreRequests are requests in the core's milli-units.
func CoreRequests(rl corev1.ResourceList) map[string]int64 {
	out := make(map[string]int64, len(rl))
	for r, q := range rl {
		out[string(r)] = core.Milli(q)
	}
	return out
}

// steerable reports a Workload of a Job, a Pod or a pod group: berth gives
// their pods domains when their flavor has a topology (a Job's pod template
// is labelled so that its pods are gated until then; a queued Pod is
// created gated), whether or not they ask.
func steerable(w *berthv1.Workload) bool {
	if ref := metav1.GetControllerOf(w); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
		return true
	}
	return slices.ContainsFunc(w.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.Kind == "Pod" && r.APIVersion == "v1"
	})
}

// AdmittedOf describes a workload holding quota for the core.
func AdmittedOf(w *berthv1.Workload) core.Admitted {
	a := core.Admitted{Key: Key(w), ClusterQueue: w.Status.Admission.ClusterQueue, Usage: UsageOf(w.Status.Admission),
		Priority: Priority(w), Timestamp: QueueTimestamp(w), ChecksPending: !IsAdmitted(w), PodsPending: AwaitsPods(w)}
	if p := w.Status.Admission.Priority; p != nil && *p < a.Priority {
		a.Priority = *p // admitted lowered by a spent budget
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved); c != nil {
		a.AdmittedAt = c.LastTransitionTime.Time
	}
	for _, psa := range w.Status.Admission.PodSetAssignments {
		if psa.TopologyAssignment == nil {
			continue
		}
		i := slices.IndexFunc(w.Spec.PodSets, func(ps berthv1.PodSet) bool { return ps.Name == psa.Name })
		if i < 0 {
			continue
		}
		ps := w.Spec.PodSets[i]
		tps := topology.PodSet{Requests: map[string]int64{}, Tolerations: ps.Tolerations,
			Allows: core.Allows(core.PodSet{NodeSelector: ps.NodeSelector, NodeAffinity: ps.NodeAffinity})}
		for r, q := range ps.Requests {
			tps.Requests[string(r)] = core.Milli(q)
		}
		tps.Shape = core.ShapeOf(tps.Requests)
		var flavor string
		for _, f := range psa.Flavors {
			flavor = f
		}
		req := topology.Request{Mode: topology.Unconstrained} // placed without asking
		if r := TopologyRequestOf(ps.TopologyRequest); r != nil {
			req = *r
		}
		a.Placements = append(a.Placements, core.Placement{Flavor: flavor, Name: ps.Name, Request: req, PodSet: tps,
			Domains: DomainsOf(psa.TopologyAssignment)})
	}
	return a
}

// UsageOf returns the quota an admitted workload holds, from its admission.
func UsageOf(a *berthv1.Admission) core.Usage {
	u := core.Usage{}
	if a == nil {
		return u
	}
	for _, psa := range a.PodSetAssignments {
		for r, q := range psa.ResourceUsage {
			if f, ok := psa.Flavors[r]; ok {
				fr := core.FlavorResource{Flavor: f, Resource: string(r)}
				u[fr] = core.AddAmounts(u[fr], core.Milli(q))
			}
		}
	}
	return u
}

// AdmissionOf renders a core assignment as a Workload admission.
func AdmissionOf(a *core.Assignment) *berthv1.Admission {
	out := &berthv1.Admission{ClusterQueue: a.ClusterQueue, Priority: a.Priority}
	for _, ps := range a.PodSets {
		psa := berthv1.PodSetAssignment{Name: ps.Name, Count: ps.Count,
			Flavors: map[corev1.ResourceName]string{}, ResourceUsage: corev1.ResourceList{},
			TopologyAssignment: TopologyAssignmentOf(ps.Topology)}
		for r, f := range ps.Flavors {
			psa.Flavors[corev1.ResourceName(r)] = f
			psa.ResourceUsage[corev1.ResourceName(r)] = Quantity(r, ps.Usage[core.FlavorResource{Flavor: f, Resource: r}])
		}
		out.PodSetAssignments = append(out.PodSetAssignments, psa)
	}
	return out
}

// Quantity renders milli-units of a resource as a canonical Quantity.
func Quantity(res string, milli int64) resource.Quantity {
	q, err := resource.ParseQuantity(core.FormatQuantity(res, milli))
	if err != nil {
		return *resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	return q
}

// SetAdmitted records an admission: QuotaReserved becomes True, and an
// earlier eviction is marked as over. Without admission checks Admitted
// becomes True with it; with checks, each is listed as Pending and
// Admitted waits, False, until every one is Ready (SetChecksPassed).
func SetAdmitted(w *berthv1.Workload, a *berthv1.Admission, checks []string, now time.Time) {
	w.Status.Admission = a
	w.Status.ClusterName = ""
	w.Status.ResourceRequests = nil // the admission says what it holds
	msg := fmt.Sprintf("quota reserved in ClusterQueue %s", a.ClusterQueue)
	if a.Priority != nil {
		msg += fmt.Sprintf(" at priority %d: its budget is spent", *a.Priority)
	}
	setCondition(w, berthv1.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", msg, now)
	w.Status.AdmissionChecks = nil
	if len(checks) == 0 {
		setCondition(w, berthv1.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "admitted by ClusterQueue "+a.ClusterQueue, now)
	} else {
		for _, name := range checks {
			w.Status.AdmissionChecks = append(w.Status.AdmissionChecks, berthv1.AdmissionCheckState{
				Name: name, State: berthv1.CheckPending, LastTransitionTime: metav1.NewTime(now)})
		}
		setCondition(w, berthv1.WorkloadAdmitted, metav1.ConditionFalse, ChecksPendingReason,
			fmt.Sprintf("quota reserved in ClusterQueue %s; waiting for admission checks %s", a.ClusterQueue,
				strings.Join(checks, ", ")), now)
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted); c != nil && c.Status == metav1.ConditionTrue {
		setCondition(w, berthv1.WorkloadEvicted, metav1.ConditionFalse, "Readmitted", "admitted again", now)
	}
	// PodsReady speaks of one admission's pods. Admitted again after it was
	// deactivated for its timeouts, it was resumed: its tries start again,
	// whether or not the PodsReady controller saw it resumed before.
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c != nil &&
		c.Reason == RequeuingLimitExceeded && w.Status.RequeueState != nil {
		w.Status.RequeueState.PodsReadyTimeouts = nil
	}
	meta.RemoveStatusCondition(&w.Status.Conditions, berthv1.WorkloadPodsReady)
}

// ChecksPendingReason is the Admitted reason of a workload that holds quota
// and waits for its admission checks.
const ChecksPendingReason = "AdmissionChecksPending"

// SetChecksPassed admits a workload whose every admission check is Ready.
func SetChecksPassed(w *berthv1.Workload, now time.Time) {
	var names []string
	for _, c := range w.Status.AdmissionChecks {
		names = append(names, c.Name)
	}
	msg := "admitted by ClusterQueue " + w.Status.Admission.ClusterQueue
	if len(names) > 0 {
		msg += fmt.Sprintf("; admission checks %s are Ready", strings.Join(names, ", "))
	}
	setCondition(w, berthv1.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", msg, now)
}

// RejectedBy returns the first admission check that rejected the workload.
func RejectedBy(w *berthv1.Workload) (berthv1.AdmissionCheckState, bool) {
	for _, c := range w.Status.AdmissionChecks {
		if c.State == berthv1.CheckRejected {
			return c, true
		}
	}
	return berthv1.AdmissionCheckState{}, false
}

// Deactivation says why a workload with spec.active false was taken out of
// its queue: an admission check's rejection, its run time spent, or a
// user's choice.
func Deactivation(w *berthv1.Workload, now time.Time) (reason, message string) {
	if c, ok := RejectedBy(w); ok {
		msg := fmt.Sprintf("admission check %s rejected the workload", c.Name)
		if c.Message != "" {
			msg += ": " + c.Message
		}
		return "AdmissionCheckRejected", msg + "; it is deactivated (spec.active is false)"
	}
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadPodsReady); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == RequeuingLimitExceeded {
		return RequeuingLimitExceeded, c.Message
	}
	// The limit it was held to is its own by then (the controller that
	// deactivates it writes its ClusterQueue's there).
	if out, _, _ := runtimelimit.OutOfRunTime(w, w.Spec.MaximumExecutionTimeSeconds, now); out {
		return runtimelimit.Exceeded, fmt.Sprintf("it ran %s of its maximum %ds (spec.maximumExecutionTimeSeconds); it is deactivated (spec.active is false)",
			runtimelimit.RunTime(w, now).Truncate(time.Second), *w.Spec.MaximumExecutionTimeSeconds)
	}
	return "Deactivated", "the workload was deactivated (spec.active is false)"
}

// SetPending records why the workload waits. It reports whether anything
// changed, so callers write only real changes.
func SetPending(w *berthv1.Workload, reason, message string, now time.Time) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved)
	if c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message == message {
		return false
	}
	setCondition(w, berthv1.WorkloadQuotaReserved, metav1.ConditionFalse, reason, message, now)
	return true
}

// SetEvicted takes the workload's quota away and sends it back to its queue.
// reason is a CamelCase cause; message says what happened in words. With
// backoff, the workload may not be admitted again before BackoffFor(count)
// has passed, count being how often it was requeued.
func SetEvicted(w *berthv1.Workload, reason, message string, now time.Time, backoff bool) {
	if ran := runtimelimit.RunTime(w, now); ran > 0 {
		secs := int32(min(ran/time.Second, math.MaxInt32))
		w.Status.AccumulatedPastExecutionTimeSeconds = &secs
	}
	w.Status.Admission = nil
	w.Status.ClusterName = ""
	setCondition(w, berthv1.WorkloadEvicted, metav1.ConditionTrue, reason, message, now)
	setCondition(w, berthv1.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", "evicted: "+message, now)
	setCondition(w, berthv1.WorkloadAdmitted, metav1.ConditionFalse, reason, message, now)
	rs := w.Status.RequeueState
	if rs == nil {
		rs = &berthv1.RequeueState{}
		w.Status.RequeueState = rs
	}
	count := int32(1)
	if rs.Count != nil {
		count = *rs.Count + 1
	}
	rs.Count = &count
	// A later time already set stays (DelayRequeue, when it was stopped):
	// any other was passed before it was admitted again.
	earlier := rs.RequeueAt
	rs.RequeueAt = nil
	if backoff {
		at := metav1.NewTime(now.Add(BackoffFor(count)))
		rs.RequeueAt = &at
		if earlier != nil && earlier.After(at.Time) {
			rs.RequeueAt = earlier
		}
	}
}

// DelayRequeue keeps an evicted or stopping workload from being admitted
// again before until, if it would be sooner.
func DelayRequeue(w *berthv1.Workload, until time.Time) {
	if w.Status.RequeueState == nil {
		w.Status.RequeueState = &berthv1.RequeueState{}
	}
	rs := w.Status.RequeueState
	if rs.RequeueAt == nil || rs.RequeueAt.Before(&metav1.Time{Time: until}) {
		at := metav1.NewTime(until)
		rs.RequeueAt = &at
	}
}

// KeepsQuotaWhileStopping reports whether an evicted workload keeps its
// quota until its pods have stopped: a plain Pod's or a pod group's (owned
// by its Pods, which can only be deleted), a batch/v1 Job's (suspended,
// its pods then deleted by the Job controller) or a JobSet's (suspended,
// its Jobs then suspended by the JobSet controller), or a configured kind's
// (suspended, its pods then stopped by its controller; labelled
// berthv1.ConfiguredKindLabel). Its integration gives the
// quota back (ReleaseStopped) once they are gone, so the quota is never
// admitted to another workload while these pods still run, however long
// stopping them takes (an API server down, say).
func KeepsQuotaWhileStopping(w *berthv1.Workload) bool {
	if w.Labels[berthv1.ConfiguredKindLabel] == "true" {
		return true
	}
	return slices.ContainsFunc(w.OwnerReferences, func(r metav1.OwnerReference) bool {
		return (r.Kind == "Pod" && r.APIVersion == "v1") || (r.Kind == "Job" && r.APIVersion == "batch/v1") ||
			(r.Kind == "JobSet" && strings.HasPrefix(r.APIVersion, "jobset.x-k8s.io/"))
	})
}

// SetStopping records that a workload that KeepsQuotaWhileStopping must
// give its quota back: Evicted becomes True, with reason and message, while
// it keeps its admission, so its quota is counted until its pods are gone.
// Whether it then waits before it may be admitted again (backoff, as in
// SetEvicted) is decided now and kept in its requeue state.
func SetStopping(w *berthv1.Workload, reason, message string, now time.Time, backoff bool) {
	setCondition(w, berthv1.WorkloadEvicted, metav1.ConditionTrue, reason, message, now)
	switch {
	case backoff:
		if w.Status.RequeueState == nil {
			w.Status.RequeueState = &berthv1.RequeueState{}
		}
		// A mark that it backs off (the time is worked out when it is
		// released), unless a later time is set already.
		if rs := w.Status.RequeueState; rs.RequeueAt == nil || !rs.RequeueAt.After(now) {
			at := metav1.NewTime(now)
			rs.RequeueAt = &at
		}
	case w.Status.RequeueState != nil:
		w.Status.RequeueState.RequeueAt = nil
	}
}

// ReleaseStopped gives back the quota of a stopping workload whose pods are
// gone: it is evicted as SetStopping recorded, and queues again.
func ReleaseStopped(w *berthv1.Workload, now time.Time) {
	reason, message := "Evicted", "evicted"
	if c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadEvicted); c != nil {
		reason, message = c.Reason, c.Message
	}
	SetEvicted(w, reason, message, now, w.Status.RequeueState != nil && w.Status.RequeueState.RequeueAt != nil)
}

// IsStopping reports a workload that holds quota while its pods are being
// stopped (SetStopping).
func IsStopping(w *berthv1.Workload) bool {
	return HasQuota(w) && meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadEvicted)
}

// SetPreempted records who preempted the workload and by which rule.
func SetPreempted(w *berthv1.Workload, rule, message string, now time.Time) {
	setCondition(w, berthv1.WorkloadPreempted, metav1.ConditionTrue, rule, message, now)
}

// Backoff of a preempted workload: BackoffBase after the first eviction,
// doubling each time, at most BackoffMax.
const (
	BackoffBase = time.Second
	BackoffMax  = 10 * time.Minute
)

// BackoffFor is how long a workload evicted for the count-th time waits.
func BackoffFor(count int32) time.Duration { return Backoff(count, BackoffBase, BackoffMax) }

// Backoff is base doubled for each try after the first, at most limit.
func Backoff(try int32, base, limit time.Duration) time.Duration {
	d := base
	for i := int32(1); i < try && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// PodsReady reasons: the workload was evicted because its pods were not all
// Ready within the timeout, and deactivated after too many such evictions.
const (
	PodsReadyTimeout       = "PodsReadyTimeout"
	RequeuingLimitExceeded = "RequeuingLimitExceeded"
)

// PodsReadySubject reports a workload whose pods' readiness berth watches
// (berth controller --wait-for-pods-ready), running here, not dispatched
// to a worker cluster (nor a dispatched copy on a worker): a batch/v1 Job's,
// a JobSet's, a TrainJob's or a configured kind's (their integrations record
// PodsReady, and one evicted is suspended and queues again), or a
// StatefulSet's pod group (owned by the
// StatefulSet: evicted, its pods are deleted, the StatefulSet makes them
// again and the same Workload queues again). Plain Pods and other pod
// groups are not: evicting them deletes their pods, and what comes back,
// if anything, is a new Workload.
func PodsReadySubject(w *berthv1.Workload) bool {
	_, copied := w.Labels[berthv1.MultiClusterOriginLabel]
	if copied || w.Status.ClusterName != "" {
		return false
	}
	if w.Labels[berthv1.ConfiguredKindLabel] == "true" {
		return true
	}
	if ref := metav1.GetControllerOf(w); ref != nil {
		return (ref.Kind == "Job" && ref.APIVersion == "batch/v1") || (ref.Kind == "JobSet" && ref.APIVersion == "jobset.x-k8s.io/v1alpha2") ||
			(ref.Kind == "TrainJob" && ref.APIVersion == "trainer.kubeflow.org/v1alpha1")
	}
	for _, ref := range w.OwnerReferences {
		if ref.Kind == "StatefulSet" && ref.APIVersion == "apps/v1" {
			return true
		}
	}
	return false
}

// AwaitsPods reports an admitted workload whose pods' readiness berth
// watches and that has not recorded them all Ready.
func AwaitsPods(w *berthv1.Workload) bool {
	return PodsReadySubject(w) && IsAdmitted(w) && !IsStopping(w) && !PodsReady(w)
}

// PodsReady reports the PodsReady condition True: every pod of its current
// admission was Ready at once.
func PodsReady(w *berthv1.Workload) bool {
	return meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadPodsReady)
}

// SetPodsReady records that the pods of its admission are all Ready.
func SetPodsReady(w *berthv1.Workload, message string, now time.Time) {
	setCondition(w, berthv1.WorkloadPodsReady, metav1.ConditionTrue, "PodsReady", message, now)
}

// SetPodsNotReady records why the pods' readiness cost it its admission
// (reason PodsReadyTimeout or RequeuingLimitExceeded).
func SetPodsNotReady(w *berthv1.Workload, reason, message string, now time.Time) {
	setCondition(w, berthv1.WorkloadPodsReady, metav1.ConditionFalse, reason, message, now)
}

// PodsReadyTimeouts is how often it was evicted because its pods were not
// Ready in time, since it was last activated.
func PodsReadyTimeouts(w *berthv1.Workload) int32 {
	if rs := w.Status.RequeueState; rs != nil && rs.PodsReadyTimeouts != nil {
		return *rs.PodsReadyTimeouts
	}
	return 0
}

// SetFinished marks the workload finished; its quota is released.
func SetFinished(w *berthv1.Workload, reason, message string, now time.Time) {
	setCondition(w, berthv1.WorkloadFinished, metav1.ConditionTrue, reason, message, now)
}

func setCondition(w *berthv1.Workload, typ string, status metav1.ConditionStatus, reason, message string, now time.Time) {
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: message, ObservedGeneration: w.Generation, LastTransitionTime: metav1.NewTime(now)})
	// Conditions in a fixed order keep status writes and diffs stable.
	sort.SliceStable(w.Status.Conditions, func(i, j int) bool {
		return conditionRank(w.Status.Conditions[i].Type) < conditionRank(w.Status.Conditions[j].Type)
	})
}

func conditionRank(t string) int {
	for i, c := range []string{berthv1.WorkloadQuotaReserved, berthv1.WorkloadAdmitted, berthv1.WorkloadPodsReady, berthv1.WorkloadEvicted,
		berthv1.WorkloadPreempted, berthv1.WorkloadFinished} {
		if c == t {
			return i
		}
	}
	return 100
}

// ResizeAdmission has an admitted workload of one pod set hold quota for
// count pods instead of what it was admitted with (an elastic Job whose
// parallelism was lowered, or raised and the increase admitted): the pod
// set's count and usage scaled in its admission. The caller checks that
// the quota held covers what runs.
func ResizeAdmission(w *berthv1.Workload, count int32) {
	psa := &w.Status.Admission.PodSetAssignments[0]
	was := int64(psa.Count)
	for r, q := range psa.ResourceUsage {
		perPod := core.Milli(q) / was
		psa.ResourceUsage[r] = Quantity(string(r), core.MulAmount(perPod, int64(count)))
	}
	psa.Count = count
}
