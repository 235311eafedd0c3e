// Package scheduler joins the quota core and the pending queues into the
// admission loop's state machine, still without I/O. Controllers feed it what
// the API says (queues, flavors, cohorts, workloads pending, admitted or gone);
// Cycle decides; the controller writes the decisions and reports back with
// Confirmed or Undo.
//
// It owns the rules that keep quota honest between a decision and the API
// catching up with it. An admission is assumed, counted as usage, from the
// moment a cycle makes it. Events that still show the workload pending are
// taken as stale while the assumption stands: a reservation is never dropped
// because a cache is behind. The assumption ends when the API shows the
// workload admitted (Confirmed by WorkloadAdmitted), when the write fails
// (Undo), or when the workload is gone. Recording the same workload twice
// replaces, never adds.
//
// Whenever quota is released or a queue, cohort or flavor changes, the
// workloads that stepped aside in every ClusterQueue that could now admit
// them get another look.
package scheduler

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/admissionfairsharing"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/topology"
)

// Scheduler is safe for concurrent use.
type Scheduler struct {
	mu       sync.Mutex
	clock    clock.PassiveClock
	cluster  *core.Cluster
	queues   *queue.Manager
	assumed  map[string]assumption // admitted by a cycle, not yet seen in the API
	admitted map[string]string     // workload key -> LocalQueue, for everything holding quota
	perLQ    map[string]int        // quota-holding workloads per LocalQueue
	lqUsage  map[string]core.Usage // their usage per LocalQueue
	usageOf  map[string]core.Usage // workload key -> usage, for everything holding quota
	// checking holds the quota-holding workloads still waiting for their
	// admission checks: reserving, not yet admitted.
	checking map[string]queuePair
	// dirty names the ClusterQueues, LocalQueues and Cohorts whose status
	// may have changed since TakeDirty was last called.
	dirtyCQ, dirtyLQ, dirtyCohort map[string]bool
	// wake is signalled (non-blocking, capacity 1) when a cycle may have work.
	wake chan struct{}
	// armed is the release time the cycle loop last learnt from NextWake
	// (zero: none), so that a workload held back until earlier wakes it.
	armed time.Time
	// nodeSource, when set, hands over the node changes its feed has seen
	// and not yet given; nodesTaken says a cycle took some since waiting
	// workloads last got another look.
	nodeSource func() (set []topology.Node, gone []string)
	nodesTaken bool
	// nodesKnown: a node source is set, its feed having seen every node
	// once; until then a placement's nodes may merely be unseen, not gone.
	nodesKnown bool
	// repairDue says placements may have lost nodes since Repairs last
	// looked; repairAt is when a node not Ready now may be taken for failed.
	repairDue    bool
	repairAt     time.Time
	failureDelay time.Duration

	// Admission fair sharing: how usage is measured, and each LocalQueue's
	// consumption and weight (default 1).
	afs        admissionfairsharing.Config
	shares     map[string]admissionfairsharing.Share
	weights    map[string]float64
	nextSample time.Time // when LocalQueues' shares are next sampled

	// budgets by queue (budget.go).
	budgets map[BudgetOwner]*budgetState
}

type queuePair struct{ cq, lq string }

type assumption struct {
	w          *core.Workload // the latest version seen
	localQueue string
}

// New returns an empty scheduler reading time from clk.
func New(clk clock.PassiveClock) *Scheduler {
	return &Scheduler{
		clock:        clk,
		cluster:      core.NewCluster(),
		queues:       queue.NewManager(clk),
		assumed:      map[string]assumption{},
		admitted:     map[string]string{},
		perLQ:        map[string]int{},
		lqUsage:      map[string]core.Usage{},
		usageOf:      map[string]core.Usage{},
		checking:     map[string]queuePair{},
		dirtyCQ:      map[string]bool{},
		dirtyLQ:      map[string]bool{},
		dirtyCohort:  map[string]bool{},
		wake:         make(chan struct{}, 1),
		repairDue:    true, // placements read at start-up may sit on nodes that failed meanwhile
		failureDelay: DefaultNodeFailureDelay,
		afs:          admissionfairsharing.Default(),
		shares:       map[string]admissionfairsharing.Share{},
		weights:      map[string]float64{},
		budgets:      map[BudgetOwner]*budgetState{},
	}
}

// Wake is signalled when a cycle may have something to do.
func (s *Scheduler) Wake() <-chan struct{} { return s.wake }

// signal wakes the cycle loop when a cycle has work, or when a workload is
// held back until before the time the loop last asked for (NextWake): the
// loop's timer knows nothing of it yet.
func (s *Scheduler) signal() {
	next, held := s.queues.NextRelease()
	if s.queues.Ready() || (held && (s.armed.IsZero() || next.Before(s.armed))) {
		if held {
			s.armed = next // the loop looks again on waking
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// SetFlavor adds or updates a ResourceFlavor.
func (s *Scheduler) SetFlavor(f core.Flavor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster.SetFlavor(f)
	s.requeueAll()
}

// DeleteFlavor removes a ResourceFlavor.
func (s *Scheduler) DeleteFlavor(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster.DeleteFlavor(name)
	s.requeueAll()
}

// SetClusterQueue adds or updates a ClusterQueue.
func (s *Scheduler) SetClusterQueue(cq core.ClusterQueue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.cluster.CohortTree(cq.Name)
	s.cluster.SetClusterQueue(cq)
	s.queues.SetClusterQueue(cq.Name, cq.Strategy, cq.Aging)
	s.queues.SetFair(cq.Name, cq.AdmissionFairSharing)
	s.setBudget(BudgetOwner{Name: cq.Name}, cq.Budget)
	s.queueInadmissible(before...)
	s.queueInadmissible(s.cluster.CohortTree(cq.Name)...)
	s.signal()
}

// DeleteClusterQueue removes a ClusterQueue and returns the workloads that
// held quota in it: they must be evicted, since nothing accounts for them now.
func (s *Scheduler) DeleteClusterQueue(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.cluster.CohortTree(name)
	s.cluster.DeleteClusterQueue(name)
	s.queues.DeleteClusterQueue(name)
	delete(s.budgets, BudgetOwner{Name: name})
	s.cluster.SetBudgetSpent(name, nil)
	s.queueInadmissible(before...)
	s.signal()
	return s.cluster.AdmittedIn(name)
}

// SetCohort adds or updates a Cohort object.
func (s *Scheduler) SetCohort(co core.Cohort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster.SetCohort(co)
	s.cohortsChanged()
}

// DeleteCohort removes a Cohort object.
func (s *Scheduler) DeleteCohort(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster.DeleteCohort(name)
	s.cohortsChanged()
}

// cohortsChanged requeues everything and marks every cohort's status due: a
// parent changing anywhere can make or break a cycle elsewhere.
func (s *Scheduler) cohortsChanged() {
	for _, name := range s.cluster.Cohorts() {
		s.dirtyCohort[name] = true
	}
	s.markAll()
	s.requeueAll()
}

// SetLocalQueue adds or updates a LocalQueue.
func (s *Scheduler) SetLocalQueue(lq queue.LocalQueue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues.SetLocalQueue(lq)
	s.dirtyLQ[lq.Key] = true
	s.dirtyCQ[lq.ClusterQueue] = true
	s.signal()
}

// DeleteLocalQueue removes a LocalQueue.
func (s *Scheduler) DeleteLocalQueue(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues.DeleteLocalQueue(key)
	s.queues.SetLocalQueueSpent(key, "")
	delete(s.budgets, BudgetOwner{LocalQueue: true, Name: key})
	delete(s.shares, key)
	delete(s.weights, key)
	s.markAll()
}

// SetLocalQueueWeight sets a LocalQueue's admission fair-sharing weight
// (its spec.fairSharing.weight; 1 until set).
func (s *Scheduler) SetLocalQueueWeight(key string, weight float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.weights[key]; ok && old == weight {
		return
	}
	s.weights[key] = weight
	s.rescore(key)
	s.signal()
}

// WorkloadPending reports a workload the API shows as waiting for quota,
// submitted through LocalQueue localQueue (namespace/name).
func (s *Scheduler) WorkloadPending(w *core.Workload, localQueue string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.assumed[w.Key]; ok {
		// Our admission is on its way to the API; remember the newest version
		// in case the write fails and it must queue again.
		a.w, a.localQueue = w, localQueue
		s.assumed[w.Key] = a
		return
	}
	if cq, ok := s.cluster.IsAdmitted(w.Key); ok {
		// The API says it no longer holds quota: it was evicted.
		s.release(w.Key, cq)
	}
	if !s.queues.Has(w.Key) {
		s.cluster.ReleaseHold(w.Key)
	}
	s.queues.AddOrUpdate(w, localQueue)
	s.dirtyLQ[localQueue] = true
	if w.ClusterQueue != "" {
		s.dirtyCQ[w.ClusterQueue] = true
	}
	s.signal()
}

// WorkloadAdmitted reports a workload the API shows holding quota.
func (s *Scheduler) WorkloadAdmitted(a core.Admitted, localQueue string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, cq := a.Key, a.ClusterQueue
	delete(s.assumed, key)
	s.queues.Delete(key)
	s.cluster.ReleaseHold(key)
	prev, was := s.cluster.IsAdmitted(key)
	evicting := s.cluster.Evicting(key)
	podsWere := s.cluster.PodsPending(key)
	shrunk := false
	for fr, v := range s.usageOf[key] {
		shrunk = shrunk || a.Usage[fr] < v
	}
	s.cluster.AddAdmitted(a)
	// Its placement as the API has it: on a node that failed, or with a
	// repair not written yet.
	s.repairDue = s.repairDue || len(a.Placements) > 0
	if evicting {
		// Its eviction is on its way; the admitted state is not news.
		s.cluster.MarkEvicting(key)
	}
	s.setAdmitted(key, localQueue, a.Usage)
	s.setChecking(key, cq, localQueue, a.ChecksPending)
	s.dirtyCQ[cq] = true
	if was && (prev != cq || shrunk) {
		// Quota given back (an elastic Job's lowered parallelism, say).
		s.queueInadmissible(s.cluster.CohortTree(prev)...)
		s.signal()
	}
	if podsWere && !a.PodsPending {
		// Its pods are Ready (or it is being evicted): a queue blocked
		// until they were (SetBlockUntilPodsReady) may admit again.
		s.queueInadmissible(cq)
		s.signal()
	}
}

// Placements are where the cycle that admitted a workload placed its
// topology-aware pod sets (core.Cluster.Placements): what a caller that
// keeps no API reports as admitted with it (the what-if replay).
func (s *Scheduler) Placements(key string) []core.Placement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cluster.Placements(key)
}

// WorkloadGone reports a workload deleted, finished, or otherwise no longer
// waiting nor holding quota. Its quota, if any, is released.
func (s *Scheduler) WorkloadGone(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.assumed, key)
	if lq, cq, ok := s.queues.Where(key); ok {
		s.dirtyLQ[lq] = true
		s.dirtyCQ[cq] = true
	}
	s.queues.Delete(key)
	if cq, held := s.cluster.IsHolding(key); held {
		s.cluster.ReleaseHold(key)
		s.queueInadmissible(s.cluster.CohortTree(cq)...)
		s.signal()
	}
	if cq, ok := s.cluster.IsAdmitted(key); ok {
		s.release(key, cq)
	}
}

// Undo withdraws an admission whose write failed: the quota is released and
// the workload, in its newest known version, queues again.
func (s *Scheduler) Undo(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.assumed[key]
	if !ok {
		return
	}
	delete(s.assumed, key)
	if cq, ok := s.cluster.IsAdmitted(key); ok {
		s.release(key, cq)
	}
	s.queues.AddOrUpdate(a.w, a.localQueue)
	s.signal()
}

func (s *Scheduler) release(key, cq string) {
	s.cluster.RemoveAdmitted(key)
	s.setAdmitted(key, "", nil)
	s.setChecking(key, cq, "", false)
	// Only quota came back: what cannot fit even so stays aside.
	cqs := s.cluster.CohortTree(cq)
	s.queues.QueueInadmissibleUnless(s.cluster.Hopeless().Of, cqs...)
	for _, name := range cqs {
		s.dirtyCQ[name] = true
	}
	s.signal()
}

// setChecking records whether a quota-holding workload waits for its
// admission checks.
func (s *Scheduler) setChecking(key, cq, localQueue string, pending bool) {
	if old, ok := s.checking[key]; ok {
		s.dirtyCQ[old.cq], s.dirtyLQ[old.lq] = true, true
		delete(s.checking, key)
	}
	if pending {
		s.checking[key] = queuePair{cq: cq, lq: localQueue}
		s.dirtyCQ[cq], s.dirtyLQ[localQueue] = true, true
	}
}

// setAdmitted records the LocalQueue and usage of a quota-holding workload
// ("" when it holds none), keeping the per-LocalQueue counts and usage.
func (s *Scheduler) setAdmitted(key, localQueue string, usage core.Usage) {
	if old, ok := s.admitted[key]; ok {
		if s.perLQ[old]--; s.perLQ[old] <= 0 {
			delete(s.perLQ, old)
			delete(s.lqUsage, old)
		} else {
			for fr, v := range s.usageOf[key] {
				s.lqUsage[old][fr] -= v
			}
		}
		delete(s.admitted, key)
		delete(s.usageOf, key)
		s.dirtyLQ[old] = true
	}
	if localQueue != "" {
		s.admitted[key] = localQueue
		s.usageOf[key] = usage
		s.perLQ[localQueue]++
		if s.lqUsage[localQueue] == nil {
			s.lqUsage[localQueue] = core.Usage{}
		}
		s.lqUsage[localQueue].Add(usage)
		s.dirtyLQ[localQueue] = true
	}
}

func (s *Scheduler) requeueAll() {
	s.queueInadmissible(s.cluster.ClusterQueues()...)
	s.signal()
}

// queueInadmissible gives the queues' set-aside workloads another look; their
// counts change, so their status is due.
func (s *Scheduler) queueInadmissible(cqs ...string) {
	s.queues.QueueInadmissible(cqs...)
	for _, cq := range cqs {
		s.dirtyCQ[cq] = true
	}
}

func (s *Scheduler) markAll() {
	for _, cq := range s.cluster.ClusterQueues() {
		s.dirtyCQ[cq] = true
	}
}

// MarkDirty asks for the status of these queues and cohorts to be written
// again (after a failed write, say).
func (s *Scheduler) MarkDirty(cqs, lqs, cohorts []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range cqs {
		s.dirtyCQ[k] = true
	}
	for _, k := range lqs {
		s.dirtyLQ[k] = true
	}
	for _, k := range cohorts {
		s.dirtyCohort[k] = true
	}
}

// TakeDirty returns the ClusterQueues, LocalQueues and Cohorts whose status
// may have changed since the last call.
func (s *Scheduler) TakeDirty() (cqs, lqs, cohorts []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.dirtyCQ {
		cqs = append(cqs, k)
	}
	for k := range s.dirtyLQ {
		lqs = append(lqs, k)
	}
	for k := range s.dirtyCohort {
		cohorts = append(cohorts, k)
	}
	clear(s.dirtyCQ)
	clear(s.dirtyLQ)
	clear(s.dirtyCohort)
	return cqs, lqs, cohorts
}

// Cycle runs one admission cycle and returns its decisions. Admitted
// workloads are assumed: the caller writes each admission and then calls Undo
// if the write failed (success is confirmed by WorkloadAdmitted when the API
// shows it).
func (s *Scheduler) Cycle() []core.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Samples due reorder the lines before their heads are taken.
	s.sampleShares()
	heads := s.queues.Heads()
	if len(heads) == 0 {
		return nil
	}
	if s.nodeSource != nil {
		if set, gone := s.nodeSource(); s.applyNodes(set, gone) {
			s.nodesTaken = true
		}
	}
	lqs := make(map[string]string, len(heads))
	for _, w := range heads {
		lqs[w.Key], _ = s.queues.LocalQueueOf(w.Key)
	}
	decisions := s.cluster.Cycle(heads, s.clock.Now())
	for _, d := range decisions {
		if d.Admit != nil {
			s.assumed[d.Workload.Key] = assumption{w: d.Workload, localQueue: lqs[d.Workload.Key]}
			s.setAdmitted(d.Workload.Key, lqs[d.Workload.Key], d.Admit.Usage)
			s.entered(lqs[d.Workload.Key], d.Admit.Usage)
			s.setChecking(d.Workload.Key, d.Admit.ClusterQueue, lqs[d.Workload.Key], len(d.Admit.AdmissionChecks) > 0)
		}
		s.queues.Done(d)
		s.dirtyCQ[d.Workload.ClusterQueue] = true
		s.dirtyLQ[lqs[d.Workload.Key]] = true
	}
	s.signal()
	return decisions
}

// TakePendingChanges returns the pending workloads whose reason changed since
// the last call: the controller writes these, and only these, to the API.
func (s *Scheduler) TakePendingChanges() map[string]core.Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues.TakeChanged()
}

// ClusterQueueStatus is what the ClusterQueue's status reports.
type ClusterQueueStatus struct {
	Pending      int // waiting their turn or being decided on
	Inadmissible int // set aside until something changes
	Reserving    int // holding quota
	Admitted     int // holding quota, every admission check passed
	Usage        core.Usage
	Nominal      core.Usage
	// Inactive says why it cannot admit; "" when it can.
	Inactive string
}

// ClusterQueueStatus reports on a ClusterQueue.
func (s *Scheduler) ClusterQueueStatus(name string) ClusterQueueStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	active, inadm := s.queues.Counts(name)
	st := ClusterQueueStatus{Pending: active, Inadmissible: inadm,
		Reserving: s.cluster.AdmittedCount(name), Usage: s.cluster.Usage(name),
		Inactive: s.cluster.Inactive(name), Nominal: core.Usage{}}
	st.Admitted = st.Reserving
	for _, p := range s.checking {
		if p.cq == name {
			st.Admitted--
		}
	}
	if cq, ok := s.cluster.ClusterQueue(name); ok {
		for _, rg := range cq.ResourceGroups {
			for _, f := range rg.Flavors {
				for r, q := range f.Quotas {
					st.Nominal[core.FlavorResource{Flavor: f.Name, Resource: r}] = q.Nominal
				}
			}
		}
	}
	return st
}

// LocalQueueStatus is what a LocalQueue's status reports.
type LocalQueueStatus struct {
	Pending   int
	Reserving int // holding quota
	Admitted  int // holding quota, every admission check passed
	Usage     core.Usage
}

// LocalQueueStatus reports a LocalQueue's pending and quota-holding workloads
// and the usage of the latter.
func (s *Scheduler) LocalQueueStatus(key string) LocalQueueStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := LocalQueueStatus{Pending: s.queues.PendingInLocalQueue(key), Reserving: s.perLQ[key], Usage: core.Usage{}}
	st.Usage.Add(s.lqUsage[key])
	st.Admitted = st.Reserving
	for _, p := range s.checking {
		if p.lq == key {
			st.Admitted--
		}
	}
	return st
}

// AdmittedIn lists the workloads holding quota in a ClusterQueue.
func (s *Scheduler) AdmittedIn(cq string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cluster.AdmittedIn(cq)
}

// AdmittedThrough lists the workloads holding quota that were submitted
// through a LocalQueue.
func (s *Scheduler) AdmittedThrough(localQueue string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, lq := range s.admitted {
		if lq == localQueue {
			out = append(out, k)
		}
	}
	return out
}

// FlavorUsers lists the workloads holding quota in a flavor.
func (s *Scheduler) FlavorUsers(flavor string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, u := range s.usageOf {
		for fr, v := range u {
			if fr.Flavor == flavor && v != 0 {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// Line copies out the workloads waiting in a ClusterQueue, unordered
// (queue.SortLine orders them); false when it does not exist. The copy is
// made under the lock and sorted outside it, so a large line costs the
// scheduling loop only the copy.
func (s *Scheduler) Line(cq string) ([]queue.Waiting, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues.Line(cq)
}

// LocalQueueLine returns the ClusterQueue a LocalQueue (namespace/name)
// points at and that queue's line, unordered; false when the LocalQueue
// does not exist. The line is empty while the ClusterQueue does not exist.
func (s *Scheduler) LocalQueueLine(key string) (cq string, line []queue.Waiting, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cq, ok = s.queues.ClusterQueueOf(key); !ok {
		return "", nil, false
	}
	line, _ = s.queues.Line(cq)
	return cq, line, true
}

// Pending returns why a workload waits, if it does.
func (s *Scheduler) Pending(key string) *core.Pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues.Pending(key)
}

// CancelEviction withdraws a victim whose eviction could not be written: it
// holds its quota as before, and may be chosen again.
func (s *Scheduler) CancelEviction(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cq, ok := s.cluster.IsAdmitted(key); ok && s.cluster.Evicting(key) {
		s.cluster.UnmarkEvicting(key)
		s.queueInadmissible(s.cluster.CohortTree(cq)...)
		s.signal()
	}
}

// SetFairSharing turns fair sharing on or off.
func (s *Scheduler) SetFairSharing(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster.SetFairSharing(on)
	s.requeueAll()
}

// SetBlockUntilPodsReady makes each ClusterQueue admit nothing while a
// workload it admitted waits for its pods to be all Ready
// (core.Cluster.SetBlockUntilPodsReady).
func (s *Scheduler) SetBlockUntilPodsReady(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cluster.SetBlockUntilPodsReady(on)
	s.requeueAll()
}

// NextWake is when a held-back (evicted) workload next becomes eligible; the
// caller should run a cycle then even if nothing else happens.
func (s *Scheduler) NextWake() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.queues.NextRelease()
	s.armed = at // zero when none is held
	return at, ok
}

// Ready reports whether a cycle would have work.
func (s *Scheduler) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues.Ready()
}

// HasClusterQueue reports whether the ClusterQueue exists.
func (s *Scheduler) HasClusterQueue(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.cluster.ClusterQueue(name)
	return ok
}

// CohortTree lists the ClusterQueues sharing a root cohort with cq.
func (s *Scheduler) CohortTree(cq string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cluster.CohortTree(cq)
}

// CohortCycle returns the cohorts of the cycle of parents the named cohort
// is in (nil when it is in none).
func (s *Scheduler) CohortCycle(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cluster.CohortCycle(name)
}

// SetAdmissionCheck adds or updates an AdmissionCheck; active is its Active
// condition. Queues that name a missing or inactive check admit nothing.
func (s *Scheduler) SetAdmissionCheck(name string, active bool) {
	s.queuesMayChange(func() { s.cluster.SetAdmissionCheck(name, active) })
}

// DeleteAdmissionCheck removes an AdmissionCheck.
func (s *Scheduler) DeleteAdmissionCheck(name string) {
	s.queuesMayChange(func() { s.cluster.DeleteAdmissionCheck(name) })
}

// SetTopology adds or updates a Topology's levels (none: the queues of its
// flavors go inactive, saying so).
func (s *Scheduler) SetTopology(name string, levels []string) {
	s.queuesMayChange(func() { s.cluster.SetTopology(name, levels) })
}

// DeleteTopology removes a Topology.
func (s *Scheduler) DeleteTopology(name string) {
	s.queuesMayChange(func() { s.cluster.DeleteTopology(name) })
}

// queuesMayChange makes a change that may turn any queue active or inactive:
// every queue's status is due, and every set-aside workload gets another look.
func (s *Scheduler) queuesMayChange(change func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change()
	s.markAll()
	s.requeueAll()
}

// SetNodes adds or updates nodes for topology-aware placement and removes
// those named in gone; waiting workloads get another look, since room on
// nodes may have opened, when these or the nodes a cycle took from the
// node source changed anything.
func (s *Scheduler) SetNodes(nodes []topology.Node, gone []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applyNodes(nodes, gone) || s.nodesTaken {
		s.nodesTaken = false
		s.requeueAll()
	}
}

// SetNodeSource has every cycle take the latest node changes from src
// before it places anything, so that placement never works from a view
// older than src's: a pod bound a moment ago is counted. Giving every
// waiting workload another look costs more, and stays with SetNodes.
// The caller sets it once src has seen every node: from then on a node
// missing is a node gone (Repairs).
func (s *Scheduler) SetNodeSource(src func() (set []topology.Node, gone []string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodeSource = src
	s.nodesKnown = true
	s.repairDue = true
}

func (s *Scheduler) applyNodes(nodes []topology.Node, gone []string) bool {
	for _, n := range nodes {
		if old, ok := s.cluster.Node(n.Name); ok && old.Ready && !n.Ready {
			s.repairDue = true
		}
		s.cluster.SetNode(n)
	}
	for _, name := range gone {
		s.cluster.DeleteNode(name)
	}
	s.repairDue = s.repairDue || len(gone) > 0
	return len(nodes)+len(gone) > 0
}

// DefaultNodeFailureDelay is how long a node may be not Ready before the
// placed pods on it are given room elsewhere: a node that comes back
// within it loses nothing.
const DefaultNodeFailureDelay = 30 * time.Second

// SetNodeFailureDelay sets how long a node may be not Ready before it is
// taken for failed (a deleted node fails at once).
func (s *Scheduler) SetNodeFailureDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failureDelay = d
	s.repairDue = true
}

// RepairAgain has the next Repairs look at every placement again: a
// repair's write was given up, and the API's version may still sit on a
// failed node.
func (s *Scheduler) RepairAgain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repairDue = true
}

// Repairs returns what becomes of admitted workloads whose placed pods'
// nodes failed since it was last called (core.Cluster.Repairs): new
// domains, already in effect here, for the caller to write, or evictions
// to make. It costs nothing when no node's health changed, and finds
// nothing before a node source is set (a controller starting has not seen
// the nodes yet, and must not take them for gone).
func (s *Scheduler) Repairs() []core.Repair {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if !s.nodesKnown || (!s.repairDue && (s.repairAt.IsZero() || now.Before(s.repairAt))) {
		return nil
	}
	if s.nodeSource != nil {
		if set, gone := s.nodeSource(); s.applyNodes(set, gone) {
			s.nodesTaken = true
		}
	}
	out, next := s.cluster.Repairs(now, s.failureDelay)
	s.repairDue, s.repairAt = false, next
	if len(out) > 0 {
		// Evictions and moved room change what the queues may admit.
		s.requeueAll()
	}
	return out
}
