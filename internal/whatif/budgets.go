package whatif

import (
	"cmp"
	"slices"
	"time"

	"github.com/berth-dev/berth/internal/scheduler"
)

// BudgetUse is what one queue's budget did over a replay.
type BudgetUse struct {
	// Queue is a ClusterQueue's name, or a LocalQueue's namespace/name.
	Queue      string `json:"queue"`
	LocalQueue bool   `json:"localQueue,omitempty"`
	// Budget says it in words ("2 cpu-hours per 24h0m0s (rolling)").
	Budget string `json:"budget"`
	// SpentFor is how long, in seconds, it was spent (its queue held back).
	SpentFor float64 `json:"spentFor"`
	// FirstSpent is when it was first spent, seconds after the trace's
	// start; nil when it never was.
	FirstSpent *float64 `json:"firstSpent,omitempty"`
}

// budgetMeter follows the budgets from instant to instant: whether each is
// spent holds until the next instant, when anything may change.
type budgetMeter struct {
	start  time.Time
	owners []scheduler.BudgetOwner
	uses   []BudgetUse
	spent  []bool
	last   time.Time
}

func newBudgetMeter(start time.Time, cfg *Config) *budgetMeter {
	m := &budgetMeter{start: start, last: start}
	for _, cq := range cfg.ClusterQueues {
		if cq.Spec.Budget != nil {
			m.owners = append(m.owners, scheduler.BudgetOwner{Name: cq.Name})
		}
	}
	for _, lq := range cfg.LocalQueues {
		if lq.Spec.Budget != nil {
			m.owners = append(m.owners, scheduler.BudgetOwner{LocalQueue: true, Name: lq.Namespace + "/" + lq.Name})
		}
	}
	m.uses = make([]BudgetUse, len(m.owners))
	m.spent = make([]bool, len(m.owners))
	return m
}

// at records the budgets' state from now on, closing the interval since
// the last instant.
func (m *budgetMeter) at(s *scheduler.Scheduler, now time.Time) {
	for i, o := range m.owners {
		spec, ledger, ok := s.Budget(o)
		if !ok {
			continue
		}
		u := &m.uses[i]
		u.Queue, u.LocalQueue, u.Budget = o.Name, o.LocalQueue, spec.Describe()
		if m.spent[i] {
			u.SpentFor += now.Sub(m.last).Seconds()
		}
		m.spent[i] = spec.Exhausted(ledger, now)
		if m.spent[i] && u.FirstSpent == nil {
			t := now.Sub(m.start).Seconds()
			u.FirstSpent = &t
		}
	}
	m.last = now
}

func (m *budgetMeter) result() []BudgetUse {
	out := slices.Clone(m.uses)
	slices.SortFunc(out, func(a, b BudgetUse) int {
		return cmp.Or(cmp.Compare(boolRank(a.LocalQueue), boolRank(b.LocalQueue)), cmp.Compare(a.Queue, b.Queue))
	})
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BudgetPair is one queue's budget under two configurations; nil where
// one has none.
type BudgetPair struct {
	Queue      string     `json:"queue"`
	LocalQueue bool       `json:"localQueue,omitempty"`
	A          *BudgetUse `json:"a,omitempty"`
	B          *BudgetUse `json:"b,omitempty"`
}

func pairBudgets(a, b []BudgetUse) []BudgetPair {
	return pairUp(a, b, func(u *BudgetUse) BudgetPair { return BudgetPair{Queue: u.Queue, LocalQueue: u.LocalQueue} },
		func(u *BudgetUse) BudgetPair { return BudgetPair{Queue: u.Queue, LocalQueue: u.LocalQueue} },
		func(p *BudgetPair, inA bool, u *BudgetUse) {
			if inA {
				p.A = u
			} else {
				p.B = u
			}
		})
}
