package core

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// enough may skip a preemption search only when no set of the candidates
// could make room: checked here against every subset, on random cohort
// trees with borrowing and lending limits.
func TestEnoughNeverSkipsARoomMakingSet(t *testing.T) {
	fr := FlavorResource{Flavor: "f", Resource: "cpu"}
	rng := rand.New(rand.NewPCG(1, 2))
	limit := func() *int64 {
		if rng.IntN(2) == 0 {
			return nil
		}
		v := int64(rng.IntN(4)) * 1000
		return &v
	}
	checked := 0
	for round := range 3000 {
		c := NewCluster()
		c.SetFlavor(Flavor{Name: "f"})
		c.SetCohort(Cohort{Name: "root"})
		c.SetCohort(Cohort{Name: "mid", Parent: "root", ResourceGroups: []ResourceGroup{{Resources: []string{"cpu"},
			Flavors: []FlavorQuotas{{Name: "f", Quotas: map[string]Quota{"cpu": {Nominal: int64(rng.IntN(3)) * 1000, LendingLimit: limit()}}}}}}})
		var names []string
		for i := range 3 {
			name := fmt.Sprintf("q%d", i)
			names = append(names, name)
			cohort := "mid"
			if i == 2 {
				cohort = "root"
			}
			c.SetClusterQueue(ClusterQueue{Name: name, Cohort: cohort, ResourceGroups: []ResourceGroup{{Resources: []string{"cpu"},
				Flavors: []FlavorQuotas{{Name: "f", Quotas: map[string]Quota{"cpu": {
					Nominal: int64(rng.IntN(5)) * 1000, BorrowingLimit: limit(), LendingLimit: limit()}}}}}}})
		}
		var all []*Admitted
		for i := range rng.IntN(7) {
			c.AddAdmitted(Admitted{Key: fmt.Sprintf("w%d", i), ClusterQueue: names[rng.IntN(3)],
				Usage: Usage{fr: int64(1+rng.IntN(3)) * 1000}})
			all = append(all, c.admitted[fmt.Sprintf("w%d", i)])
		}
		var cands []*Admitted
		for _, a := range all {
			if rng.IntN(3) > 0 {
				cands = append(cands, a)
			}
		}
		q := c.cqs[names[rng.IntN(3)]]
		a := &Assignment{ClusterQueue: q.name, Usage: Usage{fr: int64(1+rng.IntN(6)) * 1000}}
		w := &Workload{Key: "head", ClusterQueue: q.name}
		allowBorrowing := rng.IntN(2) == 0
		if c.fitsWithout(w, a, q, allowBorrowing) {
			continue // no preemption is looked for
		}
		if enough(a, q, []FlavorResource{fr}, cands, allowBorrowing) {
			continue
		}
		checked++
		for set := 1; set < 1<<len(cands); set++ {
			for i, cd := range cands {
				if set&(1<<i) != 0 {
					c.remove(cd)
				}
			}
			fits := c.fitsWithout(w, a, q, allowBorrowing)
			for i, cd := range cands {
				if set&(1<<i) != 0 {
					c.insert(cd)
				}
			}
			if fits {
				t.Fatalf("round %d: enough says no, but evicting set %b of %d candidates lets %s fit (allowBorrowing %v)",
					round, set, len(cands), q.name, allowBorrowing)
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d rounds said not enough: the test checks too little", checked)
	}
}
