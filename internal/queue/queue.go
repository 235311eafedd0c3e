// Package queue keeps the pending workloads: one ordered queue per
// ClusterQueue, and a parking place for workloads that cannot be queued yet
// because their LocalQueue or ClusterQueue does not exist (they arrived out of
// order). It decides nothing about quota; it decides what the scheduling core
// looks at next and when a workload is looked at again.
//
// Strategies: under BestEffortFIFO a head that does not fit steps aside into
// the queue's inadmissible set; under StrictFIFO it stays the head and the
// queue is blocked. Either way it is looked at again only when something that
// could change the answer happens: QueueInadmissible is called for the queue
// (quota released nearby, the queue or its cohort or a flavor changed), or the
// workload itself changes. Parked workloads move into their queue as soon as
// the missing LocalQueue or ClusterQueue appears: nothing else needs to happen.
//
// Manager is not safe for concurrent use; the scheduler serialises access.
package queue

import (
	"container/heap"
	"fmt"
	"slices"
	"sort"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/core"
)

// LocalQueue is what the manager needs of a LocalQueue.
type LocalQueue struct {
	Key          string // namespace/name
	ClusterQueue string
	Stopped      bool
	// Deleting: it is being deleted, and so takes nothing new (stopped too).
	Deleting bool
	// Unguarded: it does not carry its in-use finalizer yet, and so takes
	// nothing new (deleted now, it would go under work admitted through it).
	Unguarded bool
}

// place is where a pending workload is.
type place int

const (
	detached     place = iota // between places, only inside a method
	parked                    // no queue to be in yet
	backoff                   // evicted, held back until its NotBefore
	inHeap                    // waiting its turn
	inadmissible              // stepped aside until something changes
	inFlight                  // handed out by Heads, decision not yet back
)

type entry struct {
	w          *core.Workload
	localQueue string
	place      place
	index      int // in the heap, while inHeap
	cq         *cqQueue
	pending    *core.Pending // why it waits, as last decided
	// replaced holds a newer version that arrived while in flight.
	replaced *entry
	deleted  bool
	// followers were set aside with this entry, asking for the same
	// (setAsideLike); a follower's leader is the entry it follows. They
	// stay aside while their leader waits its turn, and come back when it
	// is decided otherwise than set aside again.
	followers []*entry
	leader    *entry
}

type cqQueue struct {
	name         string
	strategy     core.QueueingStrategy
	aging        *core.Aging
	nextAging    time.Time // when aged priorities are next brought up to date
	heap         entryHeap[queueOrder]
	inadmissible map[string]*entry
	inFlight     map[string]*entry
	// blocked: a StrictFIFO head did not fit; nothing is handed out until
	// something changes.
	blocked bool
	// fair: ordered first by its LocalQueues' scores (lowest first;
	// admission fair sharing), shared with the manager; reorder says a
	// score changed since the heap was last ordered.
	fair    bool
	scores  map[string]float64
	reorder bool
}

// Manager holds every pending workload.
type Manager struct {
	cqs     map[string]*cqQueue
	lqs     map[string]LocalQueue
	entries map[string]*entry            // by workload key
	byLQ    map[string]map[string]*entry // by LocalQueue, then workload key
	parked  map[string]*entry            // by workload key
	held    entryHeap[backoffOrder]      // evicted workloads waiting out their backoff
	changed map[string]bool              // keys whose pending reason changed
	scores  map[string]float64           // by LocalQueue, for admission fair sharing
	spent   map[string]string            // LocalQueues whose budget is spent: why
	clock   clock.PassiveClock
}

// NewManager returns an empty manager that reads time from clk.
func NewManager(clk clock.PassiveClock) *Manager {
	return &Manager{cqs: map[string]*cqQueue{}, lqs: map[string]LocalQueue{},
		entries: map[string]*entry{}, byLQ: map[string]map[string]*entry{},
		parked: map[string]*entry{}, changed: map[string]bool{}, scores: map[string]float64{}, spent: map[string]string{}, clock: clk}
}

// put makes e the entry of its workload, in the indexes.
func (m *Manager) put(e *entry) {
	key := e.w.Key
	if old, ok := m.entries[key]; ok && old.localQueue != e.localQueue {
		m.unindex(old)
	}
	m.entries[key] = e
	if m.byLQ[e.localQueue] == nil {
		m.byLQ[e.localQueue] = map[string]*entry{}
	}
	m.byLQ[e.localQueue][key] = e
}

// drop forgets a workload entirely.
func (m *Manager) drop(e *entry) {
	e.place = detached // out of every line: no follower follows it (follows)
	delete(m.entries, e.w.Key)
	delete(m.changed, e.w.Key)
	m.unindex(e)
}

func (m *Manager) unindex(e *entry) {
	delete(m.parked, e.w.Key)
	if set := m.byLQ[e.localQueue]; set != nil {
		delete(set, e.w.Key)
		if len(set) == 0 {
			delete(m.byLQ, e.localQueue)
		}
	}
}

// SetClusterQueue adds or updates a ClusterQueue; workloads parked for it
// move in. aging, when set, raises the ordering priority of its waiting workloads.
func (m *Manager) SetClusterQueue(name string, strategy core.QueueingStrategy, aging *core.Aging) {
	q, ok := m.cqs[name]
	if !ok {
		q = &cqQueue{name: name, inadmissible: map[string]*entry{}, inFlight: map[string]*entry{}, scores: m.scores}
		m.cqs[name] = q
	}
	if q.strategy != strategy {
		q.strategy = strategy
		m.requeueAll(q)
	}
	if (q.aging == nil) != (aging == nil) || (aging != nil && *q.aging != *aging) {
		q.aging = aging
		q.nextAging = time.Time{}
	}
	for _, e := range m.parked {
		m.remove(e)
		m.route(e)
	}
}

// SetFair makes a ClusterQueue order its waiting workloads first by their
// LocalQueues' scores (SetScore, lowest first), or stop doing so.
func (m *Manager) SetFair(cq string, on bool) {
	if q, ok := m.cqs[cq]; ok && q.fair != on {
		q.fair = on
		q.reorder = true
	}
}

// Fair lists the LocalQueues whose ClusterQueue orders by score.
func (m *Manager) Fair() []string {
	var out []string
	for key, lq := range m.lqs {
		if q, ok := m.cqs[lq.ClusterQueue]; ok && q.fair {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// IsFair reports whether a LocalQueue's ClusterQueue orders by score.
func (m *Manager) IsFair(localQueue string) bool {
	lq, ok := m.lqs[localQueue]
	if !ok {
		return false
	}
	q, ok := m.cqs[lq.ClusterQueue]
	return ok && q.fair
}

// SetScore sets a LocalQueue's score; its ClusterQueue's line is put in the
// new order before it next hands out a head.
func (m *Manager) SetScore(localQueue string, score float64) {
	if old, ok := m.scores[localQueue]; ok && old == score {
		return
	}
	m.scores[localQueue] = score
	if lq, ok := m.lqs[localQueue]; ok {
		if q, ok := m.cqs[lq.ClusterQueue]; ok && q.fair {
			q.reorder = true
		}
	}
}

// DeleteClusterQueue parks its workloads until it comes back.
func (m *Manager) DeleteClusterQueue(name string) {
	q, ok := m.cqs[name]
	if !ok {
		return
	}
	delete(m.cqs, name)
	for _, e := range m.entries {
		if e.cq == q && e.place != inFlight {
			m.park(e, fmt.Sprintf("ClusterQueue %s does not exist", name))
		}
	}
}

// SetLocalQueue adds or updates a LocalQueue; its workloads move to its ClusterQueue.
func (m *Manager) SetLocalQueue(lq LocalQueue) {
	if old, ok := m.lqs[lq.Key]; ok && old == lq {
		return
	}
	m.lqs[lq.Key] = lq
	m.reroute(lq.Key)
}

// SetLocalQueueSpent parks a LocalQueue's workloads, saying why, while its
// budget is spent ("": it is not); they go back in line when it is not.
func (m *Manager) SetLocalQueueSpent(key, why string) {
	if m.spent[key] == why {
		return
	}
	if why == "" {
		delete(m.spent, key)
	} else {
		m.spent[key] = why
	}
	m.reroute(key)
}

// DeleteLocalQueue parks its workloads until it comes back.
func (m *Manager) DeleteLocalQueue(key string) {
	delete(m.lqs, key)
	delete(m.scores, key)
	m.reroute(key)
}

// LocalQueueOf returns the LocalQueue a workload is queued through.
func (m *Manager) LocalQueueOf(key string) (string, bool) {
	e, ok := m.entries[key]
	if !ok {
		return "", false
	}
	return e.localQueue, true
}

// Where returns the LocalQueue a workload was submitted through and the
// ClusterQueue it waits in ("" while parked).
func (m *Manager) Where(key string) (localQueue, clusterQueue string, ok bool) {
	e, ok := m.entries[key]
	if !ok {
		return "", "", false
	}
	if e.cq != nil {
		clusterQueue = e.cq.name
	}
	return e.localQueue, clusterQueue, true
}

// AddOrUpdate queues a pending workload submitted to LocalQueue localQueue
// (namespace/name), replacing an earlier version of it. A changed workload is
// looked at afresh, wherever the old version was.
func (m *Manager) AddOrUpdate(w *core.Workload, localQueue string) {
	e := &entry{w: w, localQueue: localQueue, index: -1}
	if old, ok := m.entries[w.Key]; ok {
		if old.place == inFlight {
			// Its decision is on the way; the new version is queued when it arrives.
			old.replaced = e
			return
		}
		m.remove(old)
		e.pending = old.pending
		w.Nominated = old.w.Nominated
		// A new version of a leader (its status written, say) leads on.
		e.followers = old.followers
		for _, f := range e.followers {
			if f.leader == old {
				f.leader = e
			}
		}
		old.followers = nil
	}
	m.put(e)
	m.route(e)
}

// Delete forgets a workload (deleted, admitted, or finished).
func (m *Manager) Delete(key string) {
	e, ok := m.entries[key]
	if !ok {
		return
	}
	if e.place == inFlight {
		e.deleted = true
		return
	}
	m.remove(e)
	m.drop(e)
}

// Has reports whether a workload is pending here.
func (m *Manager) Has(key string) bool {
	e, ok := m.entries[key]
	return ok && !e.deleted
}

// Heads hands out the head of every ClusterQueue that has one and is not
// blocked. Each must come back through Done.
func (m *Manager) Heads() []*core.Workload {
	m.releaseDue()
	var out []*core.Workload
	for _, q := range m.cqs {
		m.age(q)
		m.rescore(q)
		if q.blocked || len(q.heap) == 0 {
			continue
		}
		e := heap.Pop(&q.heap).(*entry)
		e.place = inFlight
		q.inFlight[e.w.Key] = e
		e.w.Behind = len(q.heap) > 0
		out = append(out, e.w)
	}
	// A stable order keeps cycles reproducible.
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Ready reports whether Heads would hand out anything.
func (m *Manager) Ready() bool {
	m.releaseDue()
	for _, q := range m.cqs {
		if !q.blocked && len(q.heap) > 0 {
			return true
		}
	}
	return false
}

// Done takes back a workload handed out by Heads, with the cycle's decision.
// Admitted workloads leave the manager; others are requeued by their reason.
func (m *Manager) Done(d core.Decision) {
	e, ok := m.entries[d.Workload.Key]
	if !ok || e.place != inFlight || e.w != d.Workload {
		return
	}
	delete(e.cq.inFlight, e.w.Key)
	// Unless it is set aside again, what it was decided says nothing more
	// of its followers: they come back into line.
	asideAgain := false
	defer func() {
		if !asideAgain {
			m.releaseFollowers(e)
		}
	}()
	switch {
	case e.deleted, d.Admit != nil && e.replaced == nil:
		m.drop(e)
	case e.replaced != nil:
		// The workload changed during the cycle: look at the new version.
		e.place = detached
		n := e.replaced
		n.pending = e.pending
		if d.Pending != nil {
			n.pending = d.Pending
			n.w.Nominated = d.Pending.Reason == core.Preempting
		}
		m.put(n)
		m.route(n)
	default:
		m.setPending(e, d.Pending)
		q := e.cq
		// A preemptor stays nominated while it preempts, and only then.
		e.w.Nominated = d.Pending.Reason == core.Preempting
		if lq, ok := m.lqs[e.localQueue]; !ok || lq.Stopped || lq.Unguarded || lq.ClusterQueue != q.name || m.cqs[q.name] != q {
			// Its queues changed while it was being decided on.
			e.place = detached
			m.route(e)
			return
		}
		switch {
		case d.Pending.Reason == core.Contention:
			m.pushHeap(q, e)
		case d.Pending.Reason == core.Preempting:
			// It stays the head, and its queue waits until the victims'
			// quota is released (QueueInadmissible); then it goes first.
			m.pushHeap(q, e)
			q.blocked = true
		case q.strategy == core.StrictFIFO:
			m.pushHeap(q, e)
			q.blocked = true
		default:
			e.place = inadmissible
			q.inadmissible[e.w.Key] = e
			m.setAsideLike(q, e)
			asideAgain = true
		}
	}
}

// setAsideLike sets aside, with e, the workloads next in line that ask for
// the same as e (core.SameDemand) and are no older: as things stand none
// of them fits either, and looking at each in a cycle of its own is most of
// the scheduler's work when a long line of equal workloads waits (the next
// release of quota gives them all another look, as it does e). It stops at
// the first one that differs, so the order of the line is kept.
func (m *Manager) setAsideLike(q *cqQueue, e *entry) {
	for len(q.heap) > 0 {
		next := q.heap[0]
		if next.w.Nominated || next.w.Timestamp.Before(e.w.Timestamp) || !core.SameDemand(e.w, next.w) {
			return
		}
		heap.Pop(&q.heap)
		next.place = inadmissible
		q.inadmissible[next.w.Key] = next
		m.setPending(next, e.pending)
		next.leader = e
		e.followers = append(e.followers, next)
	}
}

// releaseFollowers puts e's followers still aside behind it back in line.
func (m *Manager) releaseFollowers(e *entry) {
	for _, f := range e.followers {
		if f.leader != e {
			continue
		}
		f.leader = nil
		if f.place == inadmissible && f.cq != nil && f.cq.inadmissible[f.w.Key] == f && m.entries[f.w.Key] == f {
			delete(f.cq.inadmissible, f.w.Key)
			m.pushHeap(f.cq, f)
		}
	}
	e.followers = nil
}

// follows reports whether f waits for its leader, which is still in q's
// line: set aside, waiting its turn or being decided on. An entry that
// leaves the manager, or is replaced by a newer version, is detached
// first (remove, drop, Done), so its place says so without a look-up:
// requeue asks this of every set-aside workload on every release.
func follows(q *cqQueue, f *entry) bool {
	l := f.leader
	return l != nil && l.cq == q && (l.place == inadmissible || l.place == inHeap || l.place == inFlight)
}

// QueueInadmissible gives the named ClusterQueues' stepped-aside workloads
// another look and unblocks them: call it when something happened that could
// change their answer.
func (m *Manager) QueueInadmissible(cqs ...string) {
	m.QueueInadmissibleUnless(nil, cqs...)
}

// QueueInadmissibleUnless is QueueInadmissible, but leaves set aside the
// workloads hopeless reports true for (core.Hopeless): those that cannot
// be admitted as things are. Call it when quota was given back, and
// QueueInadmissible when anything else changed.
func (m *Manager) QueueInadmissibleUnless(hopeless func(*core.Workload) bool, cqs ...string) {
	for _, name := range cqs {
		if q, ok := m.cqs[name]; ok {
			m.requeue(q, false, hopeless)
		}
	}
}

func (m *Manager) requeueAll(q *cqQueue) { m.requeue(q, true, nil) }

// requeue gives q's set-aside workloads another look; unless all, only
// the first of each run of equal ones (its leader): the others follow
// once it is decided. Each release of quota put a whole line of equal
// workloads back in the heap, and took it out again the next cycle.
// Those hopeless reports true for stay aside (a nil hopeless: none).
func (m *Manager) requeue(q *cqQueue, all bool, hopeless func(*core.Workload) bool) {
	q.blocked = false
	for k, e := range q.inadmissible {
		if !all && follows(q, e) {
			continue
		}
		if hopeless != nil && hopeless(e.w) {
			continue
		}
		delete(q.inadmissible, k)
		e.leader = nil
		m.pushHeap(q, e)
	}
}

// Counts returns a ClusterQueue's pending workloads: those waiting their turn
// (or being decided on) and those set aside until something changes.
func (m *Manager) Counts(cq string) (active, inadmissibleCount int) {
	q, ok := m.cqs[cq]
	if !ok {
		return 0, 0
	}
	active = len(q.heap) + len(q.inFlight)
	if q.blocked && active > 0 {
		active--
		inadmissibleCount++
	}
	return active, inadmissibleCount + len(q.inadmissible)
}

// Waiting is a workload in a ClusterQueue's line, as Line copies it out:
// only what orders and describes it, so a line of 50,000 is quick to copy
// under the scheduler's lock and to sort.
type Waiting struct {
	Key, LocalQueue string
	// Priority is the workload's own; Aged what aging added for ordering.
	Priority, Aged int32
	// Timestamp is its creation or last eviction.
	Timestamp time.Time
	// Nominated: a preemptor waiting for its victims' quota, first in line.
	Nominated bool
	// Score is its LocalQueue's in a fair queue (lower first), else 0.
	Score float64
	// Pending is why it waits, as last decided; nil before its first look.
	Pending *core.Pending
}

// Line copies out the workloads waiting in a ClusterQueue: those waiting
// their turn, being decided on, or set aside until something changes. It
// leaves out those held back by an eviction's backoff or parked for want of
// a queue: they are not in line yet. SortLine puts them in order.
func (m *Manager) Line(cq string) ([]Waiting, bool) {
	q, ok := m.cqs[cq]
	if !ok {
		return nil, false
	}
	out := make([]Waiting, 0, len(q.heap)+len(q.inadmissible)+len(q.inFlight))
	add := func(e *entry) {
		var score float64
		if q.fair {
			score = m.scores[e.localQueue]
		}
		out = append(out, Waiting{Key: e.w.Key, LocalQueue: e.localQueue, Priority: e.w.Priority, Aged: e.w.Aged,
			Timestamp: e.w.Timestamp, Nominated: e.w.Nominated, Score: score, Pending: e.pending})
	}
	for _, e := range q.heap {
		add(e)
	}
	for _, e := range q.inadmissible {
		add(e)
	}
	for _, e := range q.inFlight {
		add(e)
	}
	return out, true
}

// InLine reports whether a goes before b in a line, as the queue hands them
// out: a nominated preemptor first, then by LocalQueue score (in a fair
// queue), then by priority (aging included), age and name.
func InLine(a, b *Waiting) bool {
	if a.Nominated != b.Nominated {
		return a.Nominated
	}
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return core.OrderBefore(a.Priority+a.Aged, b.Priority+b.Aged, a.Timestamp, b.Timestamp, a.Key, b.Key)
}

// SortLine puts a line in order (InLine).
func SortLine(line []Waiting) {
	slices.SortFunc(line, func(a, b Waiting) int {
		switch {
		case InLine(&a, &b):
			return -1
		case InLine(&b, &a):
			return 1
		}
		return 0
	})
}

// FirstInLine reorders line so that its first k are the first k in order,
// sorted, and returns them; the rest are left in no order. It costs about
// n + k log n comparisons, against n log n for SortLine: the first page of
// a long line is cheap.
func FirstInLine(line []Waiting, k int) []Waiting {
	n := len(line)
	k = min(k, n)
	if k >= n/4 {
		SortLine(line)
		return line[:k]
	}
	// A heap with the first in line at the root, built bottom-up; each of
	// the k pops moves the root to the end of the shrinking heap.
	down := func(i, size int) {
		for {
			first, l := i, 2*i+1
			if l < size && InLine(&line[l], &line[first]) {
				first = l
			}
			if r := l + 1; r < size && InLine(&line[r], &line[first]) {
				first = r
			}
			if first == i {
				return
			}
			line[i], line[first] = line[first], line[i]
			i = first
		}
	}
	for i := n/2 - 1; i >= 0; i-- {
		down(i, n)
	}
	for size := n; size > n-k; size-- {
		line[0], line[size-1] = line[size-1], line[0]
		down(0, size-1)
	}
	// The popped ones sit at the end, last popped first.
	out := line[n-k:]
	slices.Reverse(out)
	return out
}

// ClusterQueueOf returns the ClusterQueue a LocalQueue (namespace/name)
// points at, if the LocalQueue exists.
func (m *Manager) ClusterQueueOf(localQueue string) (string, bool) {
	lq, ok := m.lqs[localQueue]
	return lq.ClusterQueue, ok
}

// PendingInLocalQueue counts the pending workloads submitted through a LocalQueue.
func (m *Manager) PendingInLocalQueue(key string) int { return len(m.byLQ[key]) }

// Pending returns why a workload waits, as last decided, or nil.
func (m *Manager) Pending(key string) *core.Pending {
	if e, ok := m.entries[key]; ok {
		return e.pending
	}
	return nil
}

// TakeChanged returns the workloads whose pending reason changed since the
// last call, with their reasons, and forgets them.
func (m *Manager) TakeChanged() map[string]core.Pending {
	out := make(map[string]core.Pending, len(m.changed))
	for k := range m.changed {
		if e, ok := m.entries[k]; ok && e.pending != nil {
			out[k] = *e.pending
		}
	}
	clear(m.changed)
	return out
}

// setPending records the latest reason; it counts as a change only when it
// differs in more than drifting amounts (see core.Pending.Stable).
func (m *Manager) setPending(e *entry, p *core.Pending) {
	if p == nil {
		return
	}
	if !e.pending.SameAs(p) {
		m.changed[e.w.Key] = true
	}
	e.pending = p
}

// route puts an entry where it belongs: held back while its backoff lasts,
// else its ClusterQueue's heap, or parked with the reason it cannot be queued.
func (m *Manager) route(e *entry) {
	if e.w.NotBefore.After(m.clock.Now()) {
		e.place = backoff
		heap.Push(&m.held, e)
		m.setPending(e, &core.Pending{Reason: core.NoFit,
			Message: "evicted; back in the queue at " + e.w.NotBefore.UTC().Format(time.RFC3339),
			Stable:  "backoff until " + e.w.NotBefore.UTC().Format(time.RFC3339)})
		return
	}
	lq, ok := m.lqs[e.localQueue]
	switch {
	case e.w.Inadmissible != "":
		m.park(e, e.w.Inadmissible)
	case !ok:
		m.park(e, fmt.Sprintf("LocalQueue %s does not exist", e.localQueue))
	case lq.Stopped && lq.Deleting:
		m.park(e, fmt.Sprintf("LocalQueue %s is being deleted", e.localQueue))
	case lq.Stopped:
		m.park(e, fmt.Sprintf("LocalQueue %s is stopped by its stopPolicy", e.localQueue))
	case m.spent[e.localQueue] != "":
		m.park(e, fmt.Sprintf("LocalQueue %s: %s", e.localQueue, m.spent[e.localQueue]))
	case lq.Unguarded:
		m.park(e, fmt.Sprintf("LocalQueue %s is waiting for its in-use finalizer, added by berth when it first sees the queue", e.localQueue))
	default:
		q, ok := m.cqs[lq.ClusterQueue]
		if !ok {
			e.w.ClusterQueue = lq.ClusterQueue
			m.park(e, fmt.Sprintf("ClusterQueue %s does not exist", lq.ClusterQueue))
			return
		}
		e.w.ClusterQueue = q.name
		m.pushHeap(q, e)
	}
}

// reroute re-routes a LocalQueue's entries, except those in flight (their
// decision routes them when it comes back).
func (m *Manager) reroute(localQueue string) {
	for _, e := range m.byLQ[localQueue] {
		if e.place != inFlight {
			m.remove(e)
			m.route(e)
		}
	}
}

func (m *Manager) park(e *entry, why string) {
	m.remove(e)
	e.place = parked
	e.cq = nil
	m.parked[e.w.Key] = e
	m.setPending(e, &core.Pending{Reason: core.QueueInactive, Message: why})
}

func (m *Manager) pushHeap(q *cqQueue, e *entry) {
	e.cq = q
	e.place = inHeap
	e.w.Aged = aged(q.aging, e.w, m.clock.Now())
	heap.Push(&q.heap, e)
	// A new head of a blocked StrictFIFO queue deserves a look.
	if q.blocked && e.index == 0 {
		q.blocked = false
	}
}

// remove takes an entry out of wherever it is (not in flight).
func (m *Manager) remove(e *entry) {
	switch e.place {
	case inHeap:
		if e.index >= 0 && e.index < len(e.cq.heap) && e.cq.heap[e.index] == e {
			wasHead := e.index == 0
			heap.Remove(&e.cq.heap, e.index)
			if wasHead {
				e.cq.blocked = false
			}
		}
	case inadmissible:
		delete(e.cq.inadmissible, e.w.Key)
	case parked:
		delete(m.parked, e.w.Key)
	case backoff:
		if e.index >= 0 && e.index < len(m.held) && m.held[e.index] == e {
			heap.Remove(&m.held, e.index)
		}
	}
	e.place = detached
	e.index = -1
}

// releaseDue moves workloads whose backoff is over into their queues.
func (m *Manager) releaseDue() {
	now := m.clock.Now()
	for len(m.held) > 0 && !m.held[0].w.NotBefore.After(now) {
		e := heap.Pop(&m.held).(*entry)
		e.place = detached
		m.route(e)
	}
}

// NextRelease is when the next held-back workload's backoff ends.
func (m *Manager) NextRelease() (time.Time, bool) {
	if len(m.held) == 0 {
		return time.Time{}, false
	}
	return m.held[0].w.NotBefore, true
}

// age brings the aged priorities of a queue's waiting workloads up to date,
// a few times per aging interval; priorities change, so the heap is rebuilt.
func (m *Manager) age(q *cqQueue) {
	if q.aging == nil || q.aging.Interval <= 0 {
		return
	}
	now := m.clock.Now()
	if now.Before(q.nextAging) {
		return
	}
	q.nextAging = now.Add(q.aging.Interval / 4)
	for _, e := range q.heap {
		e.w.Aged = aged(q.aging, e.w, now)
	}
	heap.Init(&q.heap)
	if q.blocked && len(q.heap) > 0 {
		// The head may have changed.
		q.blocked = false
	}
}

// rescore puts a fair queue's heap in order after its scores changed: once
// per cycle at most, however many changed.
func (m *Manager) rescore(q *cqQueue) {
	if !q.reorder {
		return
	}
	q.reorder = false
	heap.Init(&q.heap)
	if q.blocked && len(q.heap) > 0 {
		// The head may have changed.
		q.blocked = false
	}
}

// WaitingOf is w as it waits in line through localQueue at now, aged by its
// ClusterQueue's aging: for a copy of the line made outside the queue (berth
// why), so that it orders as the queue does (InLine).
func WaitingOf(w *core.Workload, localQueue string, a *core.Aging, now time.Time) Waiting {
	return Waiting{Key: w.Key, LocalQueue: localQueue, Priority: w.Priority, Aged: aged(a, w, now),
		Timestamp: w.Timestamp, Nominated: w.Nominated}
}

// aged is what waiting has added to a workload's ordering priority.
func aged(a *core.Aging, w *core.Workload, now time.Time) int32 {
	if a == nil || a.Interval <= 0 || a.Step <= 0 {
		return 0
	}
	steps := int64(now.Sub(w.Timestamp) / a.Interval)
	if steps <= 0 {
		return 0
	}
	return int32(min(int64(a.Cap), steps*int64(a.Step)))
}

// entryHeap is a container/heap of entries in the order O gives; each entry
// keeps its index, so it can be removed from the middle.
type entryHeap[O interface{ less(a, b *entry) bool }] []*entry

// queueOrder puts a nominated preemptor first, then, in a fair queue, the
// lower LocalQueue score, then orders by core.Before.
type queueOrder struct{}

func (queueOrder) less(a, b *entry) bool {
	if a.w.Nominated != b.w.Nominated {
		return a.w.Nominated
	}
	if q := a.cq; q != nil && q.fair && a.localQueue != b.localQueue {
		if sa, sb := q.scores[a.localQueue], q.scores[b.localQueue]; sa != sb {
			return sa < sb
		}
	}
	return core.Before(a.w, b.w)
}

// backoffOrder orders held-back entries by the end of their backoff.
type backoffOrder struct{}

func (backoffOrder) less(a, b *entry) bool { return a.w.NotBefore.Before(b.w.NotBefore) }

func (h entryHeap[O]) Len() int { return len(h) }
func (h entryHeap[O]) Less(i, j int) bool {
	var o O
	return o.less(h[i], h[j])
}
func (h entryHeap[O]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *entryHeap[O]) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap[O]) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.index = -1
	*h = old[:n-1]
	return e
}
