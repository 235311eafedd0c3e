package core

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Cycle runs one admission cycle over the head workload of each active
// ClusterQueue. It assigns flavors to each against what is free, orders the
// candidates (nominated preemptors first, then those that fit without
// borrowing, then higher priority, then older; under fair sharing, the lower
// share first instead of the borrowing test), and in that order
// admits every one that still fits once the earlier ones hold their quota.
// A candidate that fits only by preemption (of quota, or of room in one
// topology domain for a gang whose quota fits) gets its victims chosen instead,
// at most one such per cohort tree per cycle, and waits for their quota;
// meanwhile it holds what was already free of what it needs, so that the
// quota freed for it is not taken by others before it can be admitted.
//
// Admitted workloads are recorded as holding their usage, and victims as
// evicting; the caller confirms or undoes that after writing to the API.
// Every head gets a Decision, in the order given.
func (c *Cluster) Cycle(heads []*Workload, now time.Time) []Decision {
	decisions := make([]Decision, len(heads))
	candidates := make([]candidate, 0, len(heads))
	// A head that held quota as a preemptor is looked at afresh.
	for _, w := range heads {
		c.ReleaseHold(w.Key)
	}
	for i, w := range heads {
		decisions[i].Workload = w
		// A spent budget may lower the priority it competes at, and is
		// admitted at: it then preempts, and is preempted, as such.
		low := c.atSpentPriority(w)
		if low != nil {
			w = low
		}
		a, p := c.Assign(w)
		if p != nil {
			decisions[i].Pending = p
			continue
		}
		if low != nil {
			a.Priority = &low.Priority
		}
		cd := candidate{w: w, a: a, idx: i, queue: c.cqs[a.ClusterQueue]}
		if c.fairSharing {
			cd.path = c.sharePath(cd.queue, a.Usage)
		}
		candidates = append(candidates, cd)
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.w.Nominated != b.w.Nominated {
			return a.w.Nominated
		}
		if c.fairSharing {
			if before, decided := fairBefore(a.path, b.path); decided {
				return before
			}
		} else if a.a.Borrows != b.a.Borrows {
			return !a.a.Borrows
		}
		return Before(a.w, b.w)
	})
	preempting := map[*node]bool{} // cohort-tree roots with a preemption this cycle
	// ahead are, per cohort-tree root, the queues whose head was admitted
	// this cycle with more of their work waiting behind it.
	ahead := map[*node][]candidate{}
	pl := c.newPlaces()
	for _, cand := range candidates {
		d := &decisions[cand.idx]
		// roomless is why a workload whose quota fits has no domain for a
		// gang: preemption may make room there as it makes quota.
		var roomless *Pending
		if len(cand.a.Preempt) == 0 {
			if !c.fits(cand.a) {
				d.Pending = &Pending{Reason: Contention,
					Message: "the quota it fitted in was taken by workloads admitted before it in the same cycle"}
				continue
			}
			if first := c.firstClaim(ahead[rootOf(cand.queue)], cand); first != "" && !cand.w.Nominated {
				// What it would borrow, the next workload of a queue that
				// comes first would take back by preemption: it is left for
				// the next cycle, where that workload is a head and goes
				// before it. It waits only behind one admitted in this
				// cycle, so a cycle that holds one back has made progress.
				d.Pending = &Pending{Reason: Contention,
					Message: "ClusterQueue " + first + " comes first in the cohort and has more work waiting; looked at again in the next cycle"}
				continue
			}
			placements, p := pl.place(cand.w, cand.a)
			if p != nil && (p.Reason != NoFit || !c.mayPreempt(cand.queue)) {
				d.Pending = p
				continue
			}
			if p == nil {
				c.AddAdmitted(Admitted{Key: cand.w.Key, ClusterQueue: cand.a.ClusterQueue, Usage: cand.a.Usage,
					Priority: cand.w.Priority, Timestamp: cand.w.Timestamp, AdmittedAt: now, Placements: placements,
					PodsPending: cand.w.AwaitsPods && len(cand.a.AdmissionChecks) == 0})
				d.Admit = cand.a
				if cand.w.Behind {
					ahead[rootOf(cand.queue)] = append(ahead[rootOf(cand.queue)], cand)
				}
				continue
			}
			roomless = p
			cand.a.Preempt = c.topologyNeeds(cand.w, cand.a)
		}
		message := func(why, short string) (string, string) {
			if roomless != nil {
				return roomless.Message + "; " + why, cmp.Or(roomless.Stable, roomless.Message) + "; " + short
			}
			return needsMessage(cand.a, cand.queue) + "; " + why, needsStable(cand.a) + "; " + short
		}
		root := rootOf(cand.queue)
		if preempting[root] {
			msg, st := message("another workload in the cohort is preempting first", "waiting behind a preemption")
			d.Pending = &Pending{Reason: NoFit, Message: msg, Stable: st}
			continue
		}
		targets := c.preemptionTargets(cand.w, cand.a, now)
		if len(targets) == 0 {
			msg, st := message("no admitted workload may be preempted to make room", "no preemption possible")
			d.Pending = &Pending{Reason: NoFit, Message: msg, Stable: st}
			continue
		}
		preempting[root] = true
		c.hold(cand.w, cand.a)
		var keys []string
		for _, t := range targets {
			keys = append(keys, t.Key)
			if !c.evicting[t.Key] {
				c.evicting[t.Key] = true
				d.Preempt = append(d.Preempt, t)
			}
		}
		d.Pending = &Pending{Reason: Preempting, Message: fmt.Sprintf("waiting for %d preempted workload(s) to release their quota: %s",
			len(keys), strings.Join(keys, ", ")), Stable: "preempting " + strings.Join(keys, ", ")}
	}
	for i, w := range heads {
		// One that would have fitted by borrowing says that the budget
		// keeps it out, and until when.
		if p := decisions[i].Pending; p != nil && p.Reason == NoFit {
			if s, ok := c.spent[w.ClusterQueue]; ok && !s.Stop {
				p.Message += "; " + s.Why
				p.Stable += "; its ClusterQueue's budget is spent"
			}
		}
	}
	return decisions
}

// firstClaim names a queue admitted ahead this cycle, with more waiting,
// whose next workload could take back what candidate cd borrows by
// reclaiming it: under fair sharing, one whose share stays below cd's
// queue's (fair sharing's preemption evens the shares out); otherwise one
// within its nominal quota. "" when there is none, or cd does not borrow.
func (c *Cluster) firstClaim(ahead []candidate, cd candidate) string {
	if !cd.a.Borrows {
		return ""
	}
	for _, h := range ahead {
		p := h.queue.spec.Preemption.ReclaimWithinCohort
		// The next of h's queue has no higher priority than h.
		if h.queue == cd.queue || !p.allows() || (p != PreemptAny && h.w.Priority <= cd.w.Priority) {
			continue
		}
		if c.fairSharing {
			if before, decided := fairBefore(h.path, cd.path); before && decided {
				return h.queue.name
			}
		} else if !h.a.Borrows {
			return h.queue.name
		}
	}
	return ""
}

// candidate is a head of a cycle with its flavors assigned: the index of
// its decision, and under fair sharing its share path once admitted.
type candidate struct {
	w     *Workload
	a     *Assignment
	idx   int
	path  []pathShare
	queue *cqNode
}

// mayPreempt reports whether the queue's policies let its workloads evict
// any others.
func (c *Cluster) mayPreempt(q *cqNode) bool {
	p := q.spec.Preemption
	return p.WithinClusterQueue.allows() || (p.ReclaimWithinCohort.allows() && q.parent != nil)
}

func rootOf(q *cqNode) *node {
	n := &q.node
	for n.parent != nil {
		n = &n.parent.node
	}
	return n
}

// needsMessage says how much of what needs preemption the workload lacks.
func needsMessage(a *Assignment, q *cqNode) string {
	var b strings.Builder
	for i, fr := range a.Preempt {
		if i > 0 {
			b.WriteString("; ")
		}
		writeNeeds(&b, a, fr)
		b.WriteString(", ")
		b.WriteString(FormatQuantity(fr.Resource, max(0, available(&q.node, fr))))
		b.WriteString(" free")
	}
	return b.String()
}

func needsStable(a *Assignment) string {
	var b strings.Builder
	for i, fr := range a.Preempt {
		if i > 0 {
			b.WriteString("; ")
		}
		writeNeeds(&b, a, fr)
	}
	return b.String()
}

// writeNeeds writes "needs 2 cpu in flavor f"; without fmt, as these are
// written for every waiting head in every cycle.
func writeNeeds(b *strings.Builder, a *Assignment, fr FlavorResource) {
	b.WriteString("needs ")
	b.WriteString(FormatQuantity(fr.Resource, a.Usage[fr]))
	b.WriteString(" ")
	b.WriteString(fr.Resource)
	b.WriteString(" in flavor ")
	b.WriteString(fr.Flavor)
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

// Before orders workloads in a queue: higher (aged) priority first, then
// older, then by key so the order is total.
func Before(a, b *Workload) bool {
	return OrderBefore(a.OrderPriority(), b.OrderPriority(), a.Timestamp, b.Timestamp, a.Key, b.Key)
}

// OrderBefore is Before on the fields that order: (aged) priority, timestamp
// and key of a and of b. Copies of a queue's order (the visibility API's)
// use it, so the two can never disagree.
func OrderBefore(pa, pb int32, ta, tb time.Time, ka, kb string) bool {
	if pa != pb {
		return pa > pb
	}
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return ka < kb
}
