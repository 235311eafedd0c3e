package core

import (
	"slices"
	"strings"
	"time"
)

// claim is a kind of quota use, for the termination check: entitled use
// (within the queue's nominal quota, filled in the order workloads were
// admitted) above borrowed use, then by the holder's priority, then older.
type claim struct {
	entitled bool
	priority int32
	ts       time.Time
	key      string
}

func (a claim) greater(b claim) bool {
	if a.entitled != b.entitled {
		return a.entitled
	}
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if !a.ts.Equal(b.ts) {
		return a.ts.Before(b.ts)
	}
	return a.key < b.key
}

// held is one workload's claim of one kind (entitled or borrowed), counted
// by the workload rather than by its claim: a pointer hashes faster than a
// claim's key and time, and every workload holds a claim of its own.
type held struct {
	a        *Admitted
	entitled bool
}

func (h held) claim() claim {
	return claim{entitled: h.entitled, priority: h.a.Priority, ts: h.a.Timestamp, key: h.a.Key}
}

// claims adds (sign 1) or subtracts (sign -1) a queue's use of quota, unit
// by unit, to count. Nominal quota goes to workloads in the order they were
// admitted: admitting one more never changes what those before it hold.
func (c *Cluster) claims(q *cqNode, admitted []*Admitted, sign int64, count map[held]int64) {
	slices.SortFunc(admitted, func(a, b *Admitted) int {
		if d := a.AdmittedAt.Compare(b.AdmittedAt); d != 0 {
			return d
		}
		return strings.Compare(a.Key, b.Key)
	})
	used := Usage{}
	for _, a := range admitted {
		var entitled, borrowed int64
		for fr, v := range a.Usage {
			in := min(v, max(0, q.quotas[fr].Nominal-used[fr]))
			entitled = AddAmounts(entitled, in)
			borrowed = AddAmounts(borrowed, v-in)
			used[fr] = AddAmounts(used[fr], v)
		}
		ke, kb := held{a, true}, held{a, false}
		count[ke] = AddAmounts(count[ke], sign*entitled)
		count[kb] = AddAmounts(count[kb], sign*borrowed)
	}
}

// improves reports whether evicting the victims and then admitting w raises
// the quota claims of the queues involved, in the multiset order: the
// highest kind of claim whose amount changes must be one that grows.
// Admissions only add claims, and this check makes every preemption raise
// them too; the multiset order is well-founded, so preemptions cannot go on
// forever, whatever the policies.
//
// The rules that choose victims pass it in the cases they were made for (a
// reclaim turns borrowed use into entitled use; priority preemption replaces
// lower claims with higher ones). It refuses their combinations that would
// undo each other, such as evicting use within a queue's nominal quota to
// make room for borrowing.
func (c *Cluster) improves(w *Workload, a *Assignment, victims []Victim, now time.Time) bool {
	involved := map[string]bool{a.ClusterQueue: true}
	gone := map[string]bool{}
	for _, v := range victims {
		involved[v.ClusterQueue] = true
		gone[v.Key] = true
	}
	count := map[held]int64{}
	for name := range involved {
		q := c.cqs[name]
		var before, after []*Admitted
		for _, ad := range c.byCQ[name] {
			before = append(before, ad)
			if !gone[ad.Key] {
				after = append(after, ad)
			}
		}
		if name == a.ClusterQueue {
			after = append(after, &Admitted{Key: w.Key, ClusterQueue: name, Usage: a.Usage,
				Priority: w.Priority, Timestamp: w.Timestamp, AdmittedAt: now})
		}
		c.claims(q, before, -1, count)
		c.claims(q, after, 1, count)
	}
	var top claim
	var found, grows bool
	for h, n := range count {
		if cl := h.claim(); n != 0 && (!found || cl.greater(top)) {
			top, found, grows = cl, true, n > 0
		}
	}
	return found && grows
}
