package scheduler

import (
	"time"

	"github.com/berth-dev/berth/internal/budget"
	"github.com/berth-dev/berth/internal/core"
)

// budgetWrite is how often a budget that is being spent has its ledger
// marked for its ClusterQueue's status: the ledger changes with every
// charge, and a status write a second per queue would cost the API server
// for nothing. A change of whether it is spent is marked at once.
const budgetWrite = 10 * time.Second

type budgetState struct {
	spec   budget.Spec
	ledger budget.Ledger
	spent  bool
	marked time.Time
}

// setBudget keeps ClusterQueue cq's budget as its spec says: a new one
// starts empty, one whose resource or window changed starts again, and
// one removed stops holding the queue back.
func (s *Scheduler) setBudget(cq string, spec *budget.Spec) {
	st, ok := s.budgets[cq]
	switch {
	case spec == nil:
		if ok {
			delete(s.budgets, cq)
			s.cluster.SetBudgetSpent(cq, nil)
			s.queueInadmissible(s.cluster.CohortTree(cq)...)
		}
		return
	case !ok || st.spec.Resource != spec.Resource || st.spec.Rolling != spec.Rolling:
		st = &budgetState{}
		s.budgets[cq] = st
	}
	st.spec = *spec
	s.applyBudget(cq, st, s.clock.Now())
}

// TakeUpLedger takes up what a ClusterQueue's status says its budget spent
// when it is newer than what this scheduler knows: at start-up, and on a
// replica that does not lead, which charges nothing itself.
func (s *Scheduler) TakeUpLedger(cq string, l budget.Ledger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.budgets[cq]
	if !ok || l.At.IsZero() || !l.At.After(st.ledger.At) {
		return
	}
	st.ledger = l
	s.applyBudget(cq, st, s.clock.Now())
}

// ChargeBudgets charges every budget with what its ClusterQueue's
// workloads hold now, and says which are spent; the caller calls it every
// second or so (the leader alone).
func (s *Scheduler) ChargeBudgets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for cq, st := range s.budgets {
		var inUse float64
		for fr, v := range s.cluster.Usage(cq) {
			if fr.Resource == st.spec.Resource {
				inUse += float64(v) / 1000
			}
		}
		st.ledger = st.spec.Charge(st.ledger, inUse, now)
		if s.applyBudget(cq, st, now) || now.Sub(st.marked) >= budgetWrite {
			st.marked = now
			s.dirtyCQ[cq] = true
		}
	}
}

// applyBudget tells the core whether cq's budget is spent at now, and
// reports whether that changed. Budget freed gives the queue's waiting
// workloads another look.
func (s *Scheduler) applyBudget(cq string, st *budgetState, now time.Time) bool {
	spent := st.spec.Exhausted(st.ledger, now)
	if spent {
		s.cluster.SetBudgetSpent(cq, &core.Spent{Stop: st.spec.Stop, Why: st.spec.Why(st.ledger, now)})
	} else {
		s.cluster.SetBudgetSpent(cq, nil)
	}
	changed := spent != st.spent
	st.spent = spent
	if changed && !spent {
		s.queueInadmissible(s.cluster.CohortTree(cq)...)
		s.signal()
	}
	return changed
}

// Budget returns ClusterQueue cq's budget and what it has spent; false
// when it has none.
func (s *Scheduler) Budget(cq string) (budget.Spec, budget.Ledger, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.budgets[cq]
	if !ok {
		return budget.Spec{}, budget.Ledger{}, false
	}
	l := st.ledger
	l.Buckets = append([]budget.Bucket(nil), l.Buckets...)
	return st.spec, l, true
}
