package core

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// preemptionTargets chooses the admitted workloads to evict so that w fits
// its assignment, disturbing as little as possible, or returns nil when no
// set allowed by the queue's policies makes room.
//
// Candidates are workloads using a flavor-resource w needs more of than is
// free: in w's own ClusterQueue with lower priority (or, under
// LowerOrNewerEqualPriority, equal priority and newer than w), and in other
// ClusterQueues of its cohort tree that are borrowing, per
// reclaimWithinCohort. They are tried already-evicting first (their quota is
// on its way back), then from other queues before w's own, lower priority
// first, most recently admitted first. Removal is greedy until w fits; then
// every victim whose return still lets w fit is put back, so only workloads
// whose removal is needed are evicted.
//
// Reclaiming from another queue requires that w then fits without borrowing;
// borrowWithinCohort relaxes that for victims of strictly lower priority (and
// at most its threshold). Victims in other queues must be borrowing at the
// moment they are taken. Whatever set they choose must also raise the claims
// held (see improves), which keeps preemption from going back and forth.
func (c *Cluster) preemptionTargets(w *Workload, a *Assignment, now time.Time) []Victim {
	victims := c.chooseVictims(w, a)
	if len(victims) == 0 || !c.settles(w, a, victims, now) {
		return nil
	}
	return victims
}

// settles is the termination check every preemption must pass: without fair
// sharing, the claims held must rise (see improves); with it, the shares of
// the queues involved must fall, or stay the same while the claims rise.
// Both orders are well-founded, so preemption cannot go on forever.
func (c *Cluster) settles(w *Workload, a *Assignment, victims []Victim, now time.Time) bool {
	if !c.fairSharing {
		return c.improves(w, a, victims, now)
	}
	switch c.sharesFall(w, a, victims) {
	case -1:
		return true
	case 0:
		return c.improves(w, a, victims, now)
	default:
		return false
	}
}

func (c *Cluster) chooseVictims(w *Workload, a *Assignment) []Victim {
	q := c.cqs[a.ClusterQueue]
	if q == nil || len(a.Preempt) == 0 {
		return nil
	}
	// A slice, not a set: it holds one or two, and each admitted
	// workload is tested against it.
	var needed []FlavorResource
	for _, fr := range a.Preempt {
		if !slices.Contains(needed, fr) {
			needed = append(needed, fr)
		}
	}
	p := q.spec.Preemption
	threshold := borrowThreshold(p, w)
	// Other queues' workloads are looked at only when a rule below could
	// take one: fair sharing, borrowWithinCohort, or reclaiming quota lent
	// while this queue is under its nominal quota. Most heads that wait do
	// so above it, and gathering and sorting the cohort's workloads for
	// nothing was most of the preemption search's cost.
	others := c.fairSharing || threshold != nil || underNominal(q, needed)
	cands := c.candidates(w, q, needed, others)
	if !enough(a, q, needed, cands, true) {
		return nil
	}
	var same []*Admitted
	for _, cd := range cands {
		if cd.ClusterQueue == q.name {
			same = append(same, cd)
		}
	}
	if c.fairSharing {
		// Across queues, shares alone decide under fair sharing: a priority
		// threshold beside them lets two rules undo each other forever.
		return c.fairTargets(w, a, q, cands, needed)
	}
	if len(same) == len(cands) {
		return c.minimal(w, a, q, needed, cands, true, nil)
	}
	if threshold != nil {
		if !underNominal(q, needed) {
			cands = slices.DeleteFunc(slices.Clone(cands), func(cd *Admitted) bool {
				return cd.ClusterQueue != q.name && cd.Priority >= *threshold
			})
		}
		return c.minimal(w, a, q, needed, cands, true, threshold)
	}
	if underNominal(q, needed) {
		if t := c.minimal(w, a, q, needed, cands, false, nil); len(t) > 0 {
			return t
		}
	}
	return c.minimal(w, a, q, needed, same, true, nil)
}

// borrowThreshold is the priority below which borrowWithinCohort lets w evict
// other queues' workloads, or nil when the policy is off.
func borrowThreshold(p Preemption, w *Workload) *int32 {
	if !p.BorrowWithinCohort.allows() {
		return nil
	}
	t := w.Priority
	if p.MaxPriorityThreshold != nil && *p.MaxPriorityThreshold < t {
		t = *p.MaxPriorityThreshold + 1
	}
	return &t
}

// candidates lists the admitted workloads the policies let w evict; other
// queues' only when others is set.
func (c *Cluster) candidates(w *Workload, q *cqNode, needed []FlavorResource, others bool) []*Admitted {
	var out []*Admitted
	p := q.spec.Preemption
	if p.WithinClusterQueue.allows() {
		for _, a := range c.byCQ[q.name] {
			// Priorities first: they are compared, usage is looked up.
			if (a.Priority < w.Priority ||
				(p.WithinClusterQueue == PreemptLowerOrNewerEqualPriority && a.Priority == w.Priority && w.Timestamp.Before(a.Timestamp))) && uses(a, needed) {
				out = append(out, a)
			}
		}
	}
	if others && p.ReclaimWithinCohort.allows() && q.parent != nil {
		for _, other := range c.trees[q.name] {
			oq := c.cqs[other]
			if other == q.name || oq == nil || !borrowing(oq, needed) {
				continue
			}
			for _, a := range c.byCQ[other] {
				if (p.ReclaimWithinCohort == PreemptAny || a.Priority < w.Priority) && uses(a, needed) {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// enough reports whether evicting all of cands could free what a needs
// (without borrowing, unless allowBorrowing): evicting a workload raises
// what is available to a's queue by at most what it uses, and lowers the
// queue's own use only if it is one of its own. Most heads that wait find
// candidates that are not enough, and this saves ordering and trying them.
func enough(a *Assignment, q *cqNode, needed []FlavorResource, cands []*Admitted, allowBorrowing bool) bool {
	if len(cands) == 0 {
		return false
	}
	for _, fr := range needed {
		free, own := max(0, available(&q.node, fr)), int64(0)
		for _, cd := range cands {
			free = AddAmounts(free, cd.Usage[fr])
			if cd.ClusterQueue == q.name {
				own = AddAmounts(own, cd.Usage[fr])
			}
		}
		if free < a.Usage[fr] || !allowBorrowing && q.usage[fr]-own+a.Usage[fr] > q.quotas[fr].Nominal {
			return false
		}
	}
	return true
}

// order sorts candidates in the order they should be tried.
func (c *Cluster) order(q *cqNode, out []*Admitted) {
	// What orders them is copied out once into a small key (the evicting
	// mark is a map lookup, the rest behind a pointer): this sort runs for
	// every head that waits in every cycle, over every workload it may
	// take, and was a large part of the scheduler's time.
	type keyed struct {
		sec      int64 // when admitted: seconds,
		nsec     int32 // and nanoseconds
		priority int32
		idx      int32 // in out
		rank     int8  // evicting first, then other queues', then its own
	}
	ks := make([]keyed, len(out))
	for i, a := range out {
		k := keyed{sec: a.AdmittedAt.Unix(), nsec: int32(a.AdmittedAt.Nanosecond()), priority: a.Priority, idx: int32(i), rank: 2}
		if c.evicting[a.Key] {
			k.rank = 0
		} else if a.ClusterQueue != q.name {
			k.rank = 1
		}
		ks[i] = k
	}
	slices.SortFunc(ks, func(x, y keyed) int {
		if x.rank != y.rank {
			return cmp.Compare(x.rank, y.rank)
		}
		if x.priority != y.priority {
			return cmp.Compare(x.priority, y.priority)
		}
		// Most recently admitted first: the reverse of the order nominal
		// quota is filled in (see claims), so victims come from a queue's
		// borrowed end.
		if x.sec != y.sec {
			return cmp.Compare(y.sec, x.sec)
		}
		if x.nsec != y.nsec {
			return cmp.Compare(y.nsec, x.nsec)
		}
		return strings.Compare(out[y.idx].Key, out[x.idx].Key)
	})
	sorted := make([]*Admitted, len(out))
	for i, k := range ks {
		sorted[i] = out[k.idx]
	}
	copy(out, sorted)
}

// minimal removes candidates in the order they should be tried (skipping
// other queues' workloads once their queue no longer borrows) until the
// assignment fits, then puts back
// every removed workload, newest removal first, whose return still lets it
// fit. It leaves the cluster as it found it.
//
// With threshold set (borrowWithinCohort), taking a victim of another queue
// at or above it forbids the preemptor from borrowing.
func (c *Cluster) minimal(w *Workload, a *Assignment, q *cqNode, needed []FlavorResource, cands []*Admitted,
	allowBorrowing bool, threshold *int32) []Victim {
	if !enough(a, q, needed, cands, allowBorrowing) {
		return nil
	}
	c.order(q, cands)
	var removed []*Admitted
	var victims []Victim
	defer func() {
		for _, r := range removed {
			c.insert(r)
		}
	}()
	fits := false
	for _, cd := range cands {
		reason := InClusterQueue
		if cd.ClusterQueue != q.name {
			if !borrowing(c.cqs[cd.ClusterQueue], needed) {
				continue
			}
			reason = InCohortReclamation
			if threshold != nil {
				if cd.Priority >= *threshold {
					allowBorrowing = false
				} else {
					reason = InCohortReclaimWhileBorrowing
				}
			}
		}
		c.remove(cd)
		removed = append(removed, cd)
		victims = append(victims, Victim{Key: cd.Key, ClusterQueue: cd.ClusterQueue, Reason: reason})
		if c.fitsWithout(w, a, q, allowBorrowing) {
			fits = true
			break
		}
	}
	if !fits {
		return nil
	}
	removed, victims = c.fillBack(w, a, q, allowBorrowing, removed, victims)
	return victims
}

// fillBack puts back the removed workloads that are not needed for a to
// fit, newest removal first, and returns the workloads still removed and
// their victims. The last one removed is what made it fit, so it stays.
// removed[i] is victims[i].
func (c *Cluster) fillBack(w *Workload, a *Assignment, q *cqNode, allowBorrowing bool, removed []*Admitted, victims []Victim) ([]*Admitted, []Victim) {
	for i := len(removed) - 2; i >= 0; i-- {
		c.insert(removed[i])
		if c.fitsWithout(w, a, q, allowBorrowing) {
			removed = slices.Delete(removed, i, i+1)
			victims = slices.Delete(victims, i, i+1)
		} else {
			c.remove(removed[i])
		}
	}
	return removed, victims
}

// fitsWithout reports whether the assignment fits now, optionally without
// taking its queue above nominal quota, and w's topology-aware pod sets can
// be placed as they ask (each gang in one domain of its level): victims
// are chosen for the room they leave where w needs it, not for quota alone.
func (c *Cluster) fitsWithout(w *Workload, a *Assignment, q *cqNode, allowBorrowing bool) bool {
	for fr, v := range a.Usage {
		if !allowBorrowing && q.usage[fr]+v > q.quotas[fr].Nominal {
			return false
		}
		if v > available(&q.node, fr) {
			return false
		}
	}
	return c.placeable(w, a)
}

// borrowing reports whether a queue uses more than its nominal quota of any
// of the needed flavor-resources.
func borrowing(q *cqNode, needed []FlavorResource) bool {
	if q == nil || q.parent == nil {
		return false
	}
	for _, fr := range needed {
		if q.usage[fr] > q.quotas[fr].Nominal {
			return true
		}
	}
	return false
}

// underNominal reports whether the queue uses less than its nominal quota of
// every needed flavor-resource.
func underNominal(q *cqNode, needed []FlavorResource) bool {
	for _, fr := range needed {
		if q.usage[fr] >= q.quotas[fr].Nominal {
			return false
		}
	}
	return true
}

func uses(a *Admitted, needed []FlavorResource) bool {
	for _, fr := range needed {
		if a.Usage[fr] > 0 {
			return true
		}
	}
	return false
}
