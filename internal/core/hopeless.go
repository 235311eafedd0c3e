package core

import "slices"

// Hopeless tells, cheaply, the waiting workloads that cannot be admitted
// as things are, whatever their queues' policies let them preempt. The
// scheduler leaves those set aside when quota is given back: with
// hundreds waiting in each queue of a cohort, each release used to send
// every one of them through a cycle of its own, only to be set aside again.
//
// It errs one way only: a workload it calls hopeless is one no cycle would
// admit or preempt for now, as its room is bounded from above (what is
// free, what preemptors hold, and all the usage its preemption rules could
// take); one it does not call hopeless may still not fit.
type Hopeless struct {
	c *Cluster
	// own is, per queue, priority and flavor-resource, the usage of the
	// queue's admitted workloads it may preempt; held is what preemptors
	// hold per cohort-tree root. Both are filled as asked.
	own  map[ownKey]int64
	held map[*node]Usage
}

type ownKey struct {
	q         *cqNode
	priority  int32
	withEqual bool
	fr        FlavorResource
}

// Hopeless returns a checker for the cluster as it is now; it must not be
// used after the cluster changes.
func (c *Cluster) Hopeless() *Hopeless {
	return &Hopeless{c: c, own: map[ownKey]int64{}, held: map[*node]Usage{}}
}

// Of reports whether w is hopeless: some pod set of it, alone and at its
// fewest pods, has no flavor where every resource it needs fits in the
// room it could get.
func (h *Hopeless) Of(w *Workload) bool {
	q := h.c.cqs[w.ClusterQueue]
	if q == nil || q.inactive != "" {
		return false // a cycle says why
	}
	for _, ps := range w.PodSets {
		if ps.MinCount > 0 && ps.MinCount < ps.Count {
			ps.Count = ps.MinCount
		}
		requests := totalRequests(q, ps)
		var seen []*ResourceGroup // each group once
		for _, r := range requests {
			rg, ok := q.groupOf[r.resource]
			if !ok {
				return false
			}
			if slices.Contains(seen, rg) {
				continue
			}
			seen = append(seen, rg)
			if !h.anyFlavor(q, w, rg, requests) {
				return true
			}
		}
	}
	return false
}

// anyFlavor reports whether some flavor of rg has room for every request
// of the group.
func (h *Hopeless) anyFlavor(q *cqNode, w *Workload, rg *ResourceGroup, requests []amount) bool {
	for _, fq := range rg.Flavors {
		fits := true
		for _, r := range requests {
			if q.groupOf[r.resource] == rg && r.milli > h.room(q, w, FlavorResource{Flavor: fq.Name, Resource: r.resource}) {
				fits = false
				break
			}
		}
		if fits {
			return true
		}
	}
	return false
}

// room is at most what w could get of fr: what is free, what preemptors
// hold (they may give it up), the usage of its own queue's workloads it
// may preempt, and, where reclaiming in the cohort may apply (as in
// chooseVictims), all usage of the other queues that borrow fr. Evicting
// a workload frees at most what it uses (see enough).
func (h *Hopeless) room(q *cqNode, w *Workload, fr FlavorResource) int64 {
	room := AddAmounts(max(0, available(&q.node, fr)), h.heldIn(q)[fr])
	p := q.spec.Preemption
	if p.WithinClusterQueue.allows() {
		room = AddAmounts(room, h.ownBelow(q, w.Priority, p.WithinClusterQueue == PreemptLowerOrNewerEqualPriority, fr))
	}
	others := h.c.fairSharing || p.BorrowWithinCohort.allows() || q.usage[fr] < q.quotas[fr].Nominal
	if others && p.ReclaimWithinCohort.allows() && q.parent != nil {
		for _, name := range h.c.trees[q.name] {
			if o := h.c.cqs[name]; o != nil && o != q && o.usage[fr] > o.quotas[fr].Nominal {
				room = AddAmounts(room, o.usage[fr])
			}
		}
	}
	return room
}

// ownBelow is the usage of fr by q's admitted workloads of lower priority
// (or equal, withEqual).
func (h *Hopeless) ownBelow(q *cqNode, priority int32, withEqual bool, fr FlavorResource) int64 {
	k := ownKey{q: q, priority: priority, withEqual: withEqual, fr: fr}
	if v, ok := h.own[k]; ok {
		return v
	}
	var sum int64
	for _, a := range h.c.byCQ[q.name] {
		if a.Priority < priority || withEqual && a.Priority == priority {
			sum = AddAmounts(sum, a.Usage[fr])
		}
	}
	h.own[k] = sum
	return sum
}

// heldIn is what preemptors hold in q's cohort tree.
func (h *Hopeless) heldIn(q *cqNode) Usage {
	root := rootOf(q)
	if u, ok := h.held[root]; ok {
		return u
	}
	u := Usage{}
	for _, hd := range h.c.holds {
		if hq := h.c.cqs[hd.ClusterQueue]; hq != nil && rootOf(hq) == root {
			u.Add(hd.Usage)
		}
	}
	h.held[root] = u
	return u
}
