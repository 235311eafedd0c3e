package core

// Spent is what a ClusterQueue whose budget is spent may still admit
// (internal/budget decides when): nothing (Stop), or only within its
// nominal quota, without borrowing. Why is said as the queue's reason.
type Spent struct {
	Stop bool
	Why  string
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
	q.noBorrow = ok && !s.Stop
}
