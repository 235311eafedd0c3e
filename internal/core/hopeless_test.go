package core

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// A workload Hopeless calls hopeless is one a cycle neither admits nor
// preempts for: checked on random cohort trees of two flavors, with every
// preemption policy, fair sharing on and off, partial admission and
// preemptors holding quota.
func TestHopelessIsNeverAdmittedNorPreemptsInACycle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(ps ...PreemptionPolicy) PreemptionPolicy { return ps[rng.IntN(len(ps))] }
	limit := func() *int64 {
		if rng.IntN(3) > 0 {
			return nil
		}
		v := int64(rng.IntN(4)) * 1000
		return &v
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	hopeless := 0
	for round := range 4000 {
		c := NewCluster()
		c.SetFairSharing(rng.IntN(2) == 0)
		for _, f := range []string{"a", "b"} {
			c.SetFlavor(Flavor{Name: f})
		}
		c.SetCohort(Cohort{Name: "root"})
		var names []string
		for i := range 3 {
			name := fmt.Sprintf("q%d", i)
			names = append(names, name)
			var flavors []FlavorQuotas
			for _, f := range []string{"a", "b"}[:1+rng.IntN(2)] {
				flavors = append(flavors, FlavorQuotas{Name: f, Quotas: map[string]Quota{"cpu": {
					Nominal: int64(rng.IntN(5)) * 1000, BorrowingLimit: limit(), LendingLimit: limit()}}})
			}
			c.SetClusterQueue(ClusterQueue{Name: name, Cohort: "root", NamespaceSelector: labels.Everything(),
				ResourceGroups: []ResourceGroup{{Resources: []string{"cpu"}, Flavors: flavors}},
				Preemption: Preemption{
					WithinClusterQueue:  pick(PreemptNever, PreemptLowerPriority, PreemptLowerOrNewerEqualPriority),
					ReclaimWithinCohort: pick(PreemptNever, PreemptLowerPriority, PreemptAny),
					BorrowWithinCohort:  pick(PreemptNever, PreemptLowerPriority)}})
		}
		for i := range rng.IntN(8) {
			q := names[rng.IntN(3)]
			f := []string{"a", "b"}[rng.IntN(2)]
			c.AddAdmitted(Admitted{Key: fmt.Sprintf("w%d", i), ClusterQueue: q, Priority: int32(rng.IntN(3)),
				Timestamp: now.Add(time.Duration(rng.IntN(5)) * time.Second), AdmittedAt: now.Add(time.Duration(i) * time.Second),
				Usage: Usage{{Flavor: f, Resource: "cpu"}: int64(1+rng.IntN(3)) * 1000}})
		}
		if rng.IntN(3) == 0 {
			// A preemptor holding what was free for it.
			q := names[rng.IntN(3)]
			c.hold(&Workload{Key: "holder"}, &Assignment{ClusterQueue: q, Usage: Usage{{Flavor: "a", Resource: "cpu"}: int64(1+rng.IntN(3)) * 1000}})
		}
		ps := PodSet{Name: "main", Count: int32(1 + rng.IntN(4)), Requests: map[string]int64{"cpu": 1000}}
		if rng.IntN(3) == 0 {
			ps.MinCount = 1
		}
		w := &Workload{Key: "head", ClusterQueue: names[rng.IntN(3)], Priority: int32(rng.IntN(3)),
			Timestamp: now.Add(time.Duration(rng.IntN(5)) * time.Second), PodSets: []PodSet{ps}}
		if !c.Hopeless().Of(w) {
			continue
		}
		hopeless++
		if rng.IntN(2) == 0 {
			// The preemptor gives up: what it held counts as free.
			c.ReleaseHold("holder")
		}
		d := c.Cycle([]*Workload{w}, now.Add(time.Minute))[0]
		if d.Admit != nil || len(d.Preempt) > 0 || d.Pending != nil && d.Pending.Reason == Preempting {
			t.Fatalf("round %d: hopeless, yet the cycle decided %+v (pending %+v)", round, d, d.Pending)
		}
	}
	if hopeless < 500 {
		t.Fatalf("only %d rounds were hopeless: the test checks too little", hopeless)
	}
}
