package core

import (
	"sort"
)

// Cycle runs one admission cycle over the head workload of each active
// ClusterQueue. It assigns flavors to each against what is free, orders the
// candidates (those that fit without borrowing first, then higher priority,
// then older), and admits, in that order, every one that still fits once the
// earlier ones hold their quota. Admitted workloads are recorded as holding
// their usage (see AddAdmitted); the caller confirms or undoes that after
// writing to the API. Every head gets a Decision, in the order given.
func (c *Cluster) Cycle(heads []*Workload) []Decision {
	type candidate struct {
		w   *Workload
		a   *Assignment
		idx int
	}
	decisions := make([]Decision, len(heads))
	candidates := make([]candidate, 0, len(heads))
	for i, w := range heads {
		decisions[i].Workload = w
		a, p := c.Assign(w)
		if p != nil {
			decisions[i].Pending = p
			continue
		}
		candidates = append(candidates, candidate{w: w, a: a, idx: i})
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.a.Borrows != b.a.Borrows {
			return !a.a.Borrows
		}
		return Before(a.w, b.w)
	})
	for _, cand := range candidates {
		if !c.fits(cand.a) {
			decisions[cand.idx].Pending = &Pending{Reason: Contention,
				Message: "the quota it fitted in was taken by workloads admitted before it in the same cycle"}
			continue
		}
		c.AddAdmitted(cand.w.Key, cand.a.ClusterQueue, cand.a.Usage)
		decisions[cand.idx].Admit = cand.a
	}
	return decisions
}

// fits reports whether an assignment still fits what is free now.
func (c *Cluster) fits(a *Assignment) bool {
	q := c.cqs[a.ClusterQueue]
	if q == nil || q.inactive != "" {
		return false
	}
	for fr, v := range a.Usage {
		if v > available(&q.node, fr) {
			return false
		}
	}
	return true
}

// Before orders workloads in a queue: higher priority first, then older, then
// by key so the order is total.
func Before(a, b *Workload) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if !a.Timestamp.Equal(b.Timestamp) {
		return a.Timestamp.Before(b.Timestamp)
	}
	return a.Key < b.Key
}
