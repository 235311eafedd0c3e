package scheduler

import (
	"time"

	"github.com/berth-dev/berth/internal/budget"
	"github.com/berth-dev/berth/internal/core"
)

// budgetWrite is how often a budget that is being spent has its ledger
// marked for its queue's status: the ledger changes with every charge, and
// a status write a second per queue would cost the API server for nothing.
// A change of whether it is spent is marked at once.
const budgetWrite = 10 * time.Second

// BudgetOwner names a queue with a budget: a ClusterQueue by name, or a
// LocalQueue by namespace/name.
type BudgetOwner struct {
	LocalQueue bool
	Name       string
}

type budgetState struct {
	spec   budget.Spec
	ledger budget.Ledger
	spent  bool
	marked time.Time
}

// setBudget keeps a queue's budget as its spec says: a new one starts
// empty, one whose resource or window changed starts again, and one
// removed stops holding the queue back.
func (s *Scheduler) setBudget(o BudgetOwner, spec *budget.Spec) {
	st, ok := s.budgets[o]
	switch {
	case spec == nil:
		if ok {
			delete(s.budgets, o)
			s.holdBack(o, nil, "")
		}
		return
	case !ok || st.spec.Resource != spec.Resource || st.spec.Rolling != spec.Rolling:
		st = &budgetState{}
		s.budgets[o] = st
	}
	st.spec = *spec
	s.applyBudget(o, st, s.clock.Now())
}

// SetLocalQueueBudget sets a LocalQueue's budget (nil: none).
func (s *Scheduler) SetLocalQueueBudget(key string, spec *budget.Spec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setBudget(BudgetOwner{LocalQueue: true, Name: key}, spec)
}

// TakeUpLedger takes up what a queue's status says its budget spent when
// it is newer than what this scheduler knows: at start-up, and on a
// replica that does not lead, which charges nothing itself.
func (s *Scheduler) TakeUpLedger(o BudgetOwner, l budget.Ledger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.budgets[o]
	if !ok || l.At.IsZero() || !l.At.After(st.ledger.At) {
		return
	}
	st.ledger = l
	s.applyBudget(o, st, s.clock.Now())
}

// ChargeBudgets charges every budget with what its queue's workloads hold
// now, and says which are spent; the caller calls it every second or so
// (the leader alone).
func (s *Scheduler) ChargeBudgets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for o, st := range s.budgets {
		usage := s.lqUsage[o.Name]
		if !o.LocalQueue {
			usage = s.cluster.Usage(o.Name)
		}
		var inUse float64
		for fr, v := range usage {
			if fr.Resource == st.spec.Resource {
				inUse += float64(v) / 1000
			}
		}
		st.ledger = st.spec.Charge(st.ledger, inUse, now)
		if s.applyBudget(o, st, now) || now.Sub(st.marked) >= budgetWrite {
			st.marked = now
			if o.LocalQueue {
				s.dirtyLQ[o.Name] = true
			} else {
				s.dirtyCQ[o.Name] = true
			}
		}
	}
}

// NextBudgetChange is the earliest time a budget may become spent (at
// what its queue holds now) or have room again, when nothing else
// changes; false when none will. A replay in virtual time charges the
// budgets then, as the controller's periodic charge would.
func (s *Scheduler) NextBudgetChange() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var next time.Time
	for _, st := range s.budgets {
		at, ok := st.spec.SpentAt(st.ledger, st.ledger.InUse, now)
		if st.spent {
			at, _ = st.spec.FreeAt(st.ledger, now)
			ok = !at.IsZero()
		}
		if ok && at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, !next.IsZero()
}

// applyBudget holds the queue back while its budget is spent at now, and
// reports whether that changed. Budget freed gives the queue's waiting
// workloads another look.
func (s *Scheduler) applyBudget(o BudgetOwner, st *budgetState, now time.Time) bool {
	spent := st.spec.Exhausted(st.ledger, now)
	if spent {
		s.holdBack(o, &st.spec, st.spec.Why(st.ledger, now))
	} else {
		s.holdBack(o, nil, "")
	}
	changed := spent != st.spent
	st.spent = spent
	if changed && !spent {
		s.signal()
	}
	return changed
}

// holdBack tells the core (a ClusterQueue) or the queues (a LocalQueue)
// that the queue's budget is spent, why, or (spec nil) that it is not.
func (s *Scheduler) holdBack(o BudgetOwner, spec *budget.Spec, why string) {
	if o.LocalQueue {
		s.queues.SetLocalQueueSpent(o.Name, why)
		return
	}
	was := s.cluster.BudgetSpent(o.Name)
	if spec == nil {
		s.cluster.SetBudgetSpent(o.Name, nil)
	} else {
		s.cluster.SetBudgetSpent(o.Name, core.SpentOf(spec, why))
	}
	if was != "" && spec == nil {
		s.queueInadmissible(s.cluster.CohortTree(o.Name)...)
	}
}

// Budget returns a queue's budget and what it has spent; false when it has
// none.
func (s *Scheduler) Budget(o BudgetOwner) (budget.Spec, budget.Ledger, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.budgets[o]
	if !ok {
		return budget.Spec{}, budget.Ledger{}, false
	}
	l := st.ledger
	l.Buckets = append([]budget.Bucket(nil), l.Buckets...)
	return st.spec, l, true
}
