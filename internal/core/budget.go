package core

import "github.com/berth-dev/berth/internal/budget"

// Spent is what a ClusterQueue whose budget is spent may still admit
// (internal/budget decides when): nothing (Stop), workloads at Priority at
// most, or only within its nominal quota, without borrowing. Why is said as
// the queue's reason.
type Spent struct {
	Stop     bool
	Priority *int32
	Why      string
}

// SpentOf is what budget b, spent, holds its queue to.
func SpentOf(b *budget.Spec, why string) *Spent {
	return &Spent{Stop: b.Stop, Priority: b.LowerTo, Why: why}
}

// atSpentPriority is w as its ClusterQueue's spent budget lets it compete:
// at the budget's lower priority, when its own is higher (a copy; nil when
// it stands as it is).
func (c *Cluster) atSpentPriority(w *Workload) *Workload {
	s, ok := c.spent[w.ClusterQueue]
	if !ok || s.Priority == nil || *s.Priority >= w.Priority {
		return nil
	}
	low := *w
	low.Priority, low.Aged = *s.Priority, 0
	return &low
}

// SetBudgetSpent records that ClusterQueue cq's budget is spent (nil: it is
// not). It outlives changes to the queue, and does not touch what the
// queue has admitted: those run on.
func (c *Cluster) SetBudgetSpent(cq string, s *Spent) {
	if s == nil {
		delete(c.spent, cq)
	} else {
		c.spent[cq] = *s
	}
	if q := c.cqs[cq]; q != nil {
		c.applySpent(q)
		q.inactive = c.inactiveReason(q)
	}
}

// BudgetSpent says why ClusterQueue cq holds back for its budget, "" when
// it does not.
func (c *Cluster) BudgetSpent(cq string) string { return c.spent[cq].Why }

func (c *Cluster) applySpent(q *cqNode) {
	s, ok := c.spent[q.name]
	q.noBorrow = ok && !s.Stop && s.Priority == nil
}
