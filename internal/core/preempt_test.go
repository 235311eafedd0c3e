package core_test

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

type preemptCase struct {
	name    string
	cqs     []core.ClusterQueue
	cohorts []core.Cohort
	running []*AdmittedWrapper
	head    *core.Workload
	fair    bool
	// wantVictims maps each victim to the rule that must have chosen it; nil
	// means no preemption, and then wantPending (if set) must appear in the reason.
	wantVictims map[string]string
	wantAdmit   bool
	wantPending string
}

func runPreempt(t *testing.T, tc preemptCase) {
	t.Helper()
	c := core.NewCluster()
	c.SetFairSharing(tc.fair)
	c.SetFlavor(MakeFlavor("f").Obj())
	c.SetFlavor(MakeFlavor("g").Obj())
	for _, co := range tc.cohorts {
		c.SetCohort(co)
	}
	for _, cq := range tc.cqs {
		c.SetClusterQueue(cq)
	}
	for _, r := range tc.running {
		c.AddAdmitted(r.Obj())
	}
	d := c.Cycle([]*core.Workload{tc.head}, Epoch.Add(time.Hour))[0]
	got := map[string]string{}
	for _, v := range d.Preempt {
		got[strings.TrimPrefix(v.Key, "default/")] = v.Reason
	}
	if tc.wantAdmit != (d.Admit != nil) {
		t.Fatalf("admitted = %v, want %v (%s)", d.Admit != nil, tc.wantAdmit, Describe([]core.Decision{d}))
	}
	if len(got) != len(tc.wantVictims) {
		t.Fatalf("victims %v, want %v (%s)", got, tc.wantVictims, Describe([]core.Decision{d}))
	}
	for k, rule := range tc.wantVictims {
		if got[k] != rule {
			t.Errorf("victim %s chosen by %q, want %q (all: %v)", k, got[k], rule, got)
		}
	}
	if tc.wantPending != "" && (d.Pending == nil || !strings.Contains(d.Pending.Message, tc.wantPending)) {
		t.Errorf("pending %+v, want a reason containing %q", d.Pending, tc.wantPending)
	}
	if len(got) > 0 && (d.Pending == nil || d.Pending.Reason != core.Preempting) {
		t.Errorf("a preemptor must wait for its victims: %+v", d.Pending)
	}
}

func cpuQueue(name, cohort, nominal string, within, reclaim core.PreemptionPolicy, limits ...string) *ClusterQueueWrapper {
	return MakeClusterQueue(name).Cohort(cohort).Preemption(within, reclaim).
		ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", nominal, limits...).Obj())
}

func TestPreemptionWithinClusterQueue(t *testing.T) {
	lower := cpuQueue("cq", "", "4", core.PreemptLowerPriority, core.PreemptNever).Obj()
	newer := cpuQueue("cq", "", "4", core.PreemptLowerOrNewerEqualPriority, core.PreemptNever).Obj()
	for _, tc := range []preemptCase{
		{
			name: "a higher priority workload evicts a lower one", cqs: []core.ClusterQueue{lower},
			running:     []*AdmittedWrapper{Running("low", "cq").Priority(1).Use("f", "cpu", "4")},
			head:        MakeWorkload("high", "cq").Priority(5).Request("cpu", "2").Obj(),
			wantVictims: map[string]string{"low": core.InClusterQueue},
		},
		{
			name: "equal priority is not enough under LowerPriority", cqs: []core.ClusterQueue{lower},
			running:     []*AdmittedWrapper{Running("peer", "cq").Priority(5).Created(time.Minute).Use("f", "cpu", "4")},
			head:        MakeWorkload("w", "cq").Priority(5).Request("cpu", "2").Obj(),
			wantPending: "no admitted workload may be preempted",
		},
		{
			name: "LowerOrNewerEqualPriority evicts a newer workload of equal priority", cqs: []core.ClusterQueue{newer},
			running:     []*AdmittedWrapper{Running("newer", "cq").Priority(5).Created(time.Minute).Use("f", "cpu", "4")},
			head:        MakeWorkload("older", "cq").Priority(5).Request("cpu", "2").Obj(),
			wantVictims: map[string]string{"newer": core.InClusterQueue},
		},
		{
			name: "but never an older one", cqs: []core.ClusterQueue{newer},
			running: []*AdmittedWrapper{Running("older", "cq").Priority(5).Use("f", "cpu", "4")},
			head:    MakeWorkload("newer", "cq").Priority(5).Created(time.Minute).Request("cpu", "2").Obj(),
		},
		{
			name: "the fewest, lowest-priority, most recently admitted victims",
			cqs:  []core.ClusterQueue{cpuQueue("cq", "", "6", core.PreemptLowerPriority, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{
				Running("p1-old", "cq").Priority(1).AdmittedAt(time.Minute).Use("f", "cpu", "1"),
				Running("p1-new", "cq").Priority(1).AdmittedAt(time.Hour).Use("f", "cpu", "1"),
				Running("p2", "cq").Priority(2).Use("f", "cpu", "1"),
				Running("p3-big", "cq").Priority(3).Use("f", "cpu", "3"),
			},
			head:        MakeWorkload("w", "cq").Priority(9).Request("cpu", "2").Obj(),
			wantVictims: map[string]string{"p1-new": core.InClusterQueue, "p1-old": core.InClusterQueue},
		},
		{
			name: "a victim whose removal is not needed is put back",
			cqs:  []core.ClusterQueue{cpuQueue("cq", "", "6", core.PreemptLowerPriority, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{
				Running("small", "cq").Priority(1).Use("f", "cpu", "1"),
				Running("big", "cq").Priority(2).Use("f", "cpu", "5"),
			},
			head:        MakeWorkload("w", "cq").Priority(9).Request("cpu", "4").Obj(),
			wantVictims: map[string]string{"big": core.InClusterQueue},
		},
		{
			name: "never evict when it still would not fit",
			cqs:  []core.ClusterQueue{cpuQueue("cq", "", "4", core.PreemptLowerPriority, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{
				Running("low", "cq").Priority(1).Use("f", "cpu", "2"),
				Running("high", "cq").Priority(9).Use("f", "cpu", "2"),
			},
			head:        MakeWorkload("w", "cq").Priority(5).Request("cpu", "3").Obj(),
			wantPending: "no admitted workload may be preempted",
		},
		{
			name:    "Never evicts nothing",
			cqs:     []core.ClusterQueue{cpuQueue("cq", "", "4", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{Running("low", "cq").Priority(1).Use("f", "cpu", "4")},
			head:    MakeWorkload("w", "cq").Priority(9).Request("cpu", "1").Obj(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runPreempt(t, tc) })
	}
}

func TestPreemptionInCohort(t *testing.T) {
	for _, tc := range []preemptCase{
		{
			name: "a lender reclaims its quota from a borrower, whatever the priorities (Any)",
			cqs: []core.ClusterQueue{
				cpuQueue("lender", "co", "4", core.PreemptNever, core.PreemptAny).Obj(),
				cpuQueue("borrower", "co", "0", core.PreemptNever, core.PreemptNever).Obj()},
			running:     []*AdmittedWrapper{Running("b", "borrower").Priority(100).Use("f", "cpu", "4")},
			head:        MakeWorkload("l", "lender").Priority(0).Request("cpu", "2").Obj(),
			wantVictims: map[string]string{"b": core.InCohortReclamation},
		},
		{
			name: "LowerPriority reclaims only from lower priorities",
			cqs: []core.ClusterQueue{
				cpuQueue("lender", "co", "4", core.PreemptNever, core.PreemptLowerPriority).Obj(),
				cpuQueue("borrower", "co", "0", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{Running("b", "borrower").Priority(100).Use("f", "cpu", "4")},
			head:    MakeWorkload("l", "lender").Priority(0).Request("cpu", "2").Obj(),
		},
		{
			name: "nothing is reclaimed from a queue within its nominal quota",
			cqs: []core.ClusterQueue{
				cpuQueue("a", "co", "2", core.PreemptNever, core.PreemptAny).Obj(),
				cpuQueue("b", "co", "4", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{Running("b1", "b").Use("f", "cpu", "4"), Running("a1", "a").Use("f", "cpu", "2")},
			head:    MakeWorkload("a2", "a").Request("cpu", "1").Obj(),
		},
		{
			name: "reclaiming needs the preemptor to fit within its nominal quota",
			cqs: []core.ClusterQueue{
				cpuQueue("lender", "co", "2", core.PreemptNever, core.PreemptAny).Obj(),
				cpuQueue("borrower", "co", "2", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{Running("b", "borrower").Use("f", "cpu", "3")},
			head:    MakeWorkload("l", "lender").Request("cpu", "3").Obj(),
		},
		{
			name: "victims in several borrowing queues, fewest first",
			cqs: []core.ClusterQueue{
				cpuQueue("lender", "co", "6", core.PreemptNever, core.PreemptAny).Obj(),
				cpuQueue("x", "co", "0", core.PreemptNever, core.PreemptNever).Obj(),
				cpuQueue("y", "co", "0", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{
				Running("x1", "x").Priority(1).Use("f", "cpu", "3"),
				Running("y1", "y").Priority(2).Use("f", "cpu", "3"),
			},
			head:        MakeWorkload("l", "lender").Request("cpu", "6").Obj(),
			wantVictims: map[string]string{"x1": core.InCohortReclamation, "y1": core.InCohortReclamation},
		},
		{
			name: "borrowWithinCohort evicts a lower-priority borrower to borrow",
			cqs: []core.ClusterQueue{
				cpuQueue("a", "co", "1", core.PreemptNever, core.PreemptLowerPriority).BorrowWithinCohort(nil).Obj(),
				cpuQueue("b", "co", "1", core.PreemptNever, core.PreemptNever).Obj(),
				cpuQueue("lender", "co", "4", core.PreemptNever, core.PreemptNever).Obj()},
			running:     []*AdmittedWrapper{Running("b1", "b").Priority(1).Use("f", "cpu", "5")},
			head:        MakeWorkload("a1", "a").Priority(5).Request("cpu", "3").Obj(),
			wantVictims: map[string]string{"b1": core.InCohortReclaimWhileBorrowing},
		},
		{
			name: "not above its maxPriorityThreshold",
			cqs: []core.ClusterQueue{
				cpuQueue("a", "co", "1", core.PreemptNever, core.PreemptLowerPriority).BorrowWithinCohort(ptr(int32(0))).Obj(),
				cpuQueue("b", "co", "1", core.PreemptNever, core.PreemptNever).Obj(),
				cpuQueue("lender", "co", "4", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{Running("b1", "b").Priority(1).Use("f", "cpu", "5")},
			head:    MakeWorkload("a1", "a").Priority(5).Request("cpu", "3").Obj(),
		},
		{
			name: "without borrowWithinCohort a borrower cannot preempt",
			cqs: []core.ClusterQueue{
				cpuQueue("a", "co", "1", core.PreemptNever, core.PreemptLowerPriority).Obj(),
				cpuQueue("b", "co", "1", core.PreemptNever, core.PreemptNever).Obj(),
				cpuQueue("lender", "co", "4", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{Running("b1", "b").Priority(1).Use("f", "cpu", "5")},
			head:    MakeWorkload("a1", "a").Priority(5).Request("cpu", "3").Obj(),
		},
		{
			// b1 borrows, b2 runs within b's nominal quota. Evicting the
			// lower-priority b2 is fine: b1 takes over b's nominal quota and
			// the claims held rise.
			name: "a borrower may evict within another queue's nominal quota when the claims rise",
			cqs: []core.ClusterQueue{
				cpuQueue("a", "co", "1", core.PreemptNever, core.PreemptAny).BorrowWithinCohort(nil).Obj(),
				cpuQueue("b", "co", "2", core.PreemptNever, core.PreemptAny).Obj(),
				cpuQueue("lender", "co", "2", core.PreemptNever, core.PreemptNever).Obj()},
			running: []*AdmittedWrapper{
				Running("b2", "b").Priority(0).AdmittedAt(time.Minute).Use("f", "cpu", "2"),
				Running("b1", "b").Priority(1).AdmittedAt(time.Hour).Use("f", "cpu", "2"),
			},
			head:        MakeWorkload("a1", "a").Priority(5).Request("cpu", "3").Obj(),
			wantVictims: map[string]string{"b2": core.InCohortReclaimWhileBorrowing},
		},
		{
			// a1 holds a's own 2 cpu and borrows 2 of b's. Reclaiming b's 2
			// means evicting a1 whole: 2 cpu of b's entitled use at priority
			// 0 would replace 2 of a's at priority 2 and 2 borrowed. Kueue
			// does it; it is the step that lets preemptions cycle (found by
			// FuzzPreemption), so berth refuses it: the claims would fall.
			name: "a reclaim may not destroy higher-priority entitled use",
			cqs: []core.ClusterQueue{
				cpuQueue("a", "co", "2", core.PreemptNever, core.PreemptNever).Obj(),
				cpuQueue("b", "co", "2", core.PreemptNever, core.PreemptAny).Obj()},
			running:     []*AdmittedWrapper{Running("a1", "a").Priority(2).Use("f", "cpu", "4")},
			head:        MakeWorkload("b1", "b").Priority(0).Request("cpu", "2").Obj(),
			wantPending: "no admitted workload may be preempted",
		},
		{
			name: "but a higher-priority reclaimer may",
			cqs: []core.ClusterQueue{
				cpuQueue("a", "co", "2", core.PreemptNever, core.PreemptNever).Obj(),
				cpuQueue("b", "co", "2", core.PreemptNever, core.PreemptAny).Obj()},
			running:     []*AdmittedWrapper{Running("a1", "a").Priority(2).Use("f", "cpu", "4")},
			head:        MakeWorkload("b1", "b").Priority(3).Request("cpu", "2").Obj(),
			wantVictims: map[string]string{"a1": core.InCohortReclamation},
		},
		{
			name: "whenCanPreempt: Preempt preempts in the first flavor",
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").Preemption(core.PreemptLowerPriority, core.PreemptNever).
				PreemptWhenCanPreempt().ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "2").Obj(),
				MakeFlavorQuotas("g").Resource("cpu", "2").Obj()).Obj()},
			running:     []*AdmittedWrapper{Running("low", "cq").Priority(1).Use("f", "cpu", "2")},
			head:        MakeWorkload("w", "cq").Priority(5).Request("cpu", "2").Obj(),
			wantVictims: map[string]string{"low": core.InClusterQueue},
		},
		{
			name: "whenCanPreempt: TryNextFlavor takes a later flavor that fits",
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").Preemption(core.PreemptLowerPriority, core.PreemptNever).
				ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "2").Obj(),
					MakeFlavorQuotas("g").Resource("cpu", "2").Obj()).Obj()},
			running:   []*AdmittedWrapper{Running("low", "cq").Priority(1).Use("f", "cpu", "2")},
			head:      MakeWorkload("w", "cq").Priority(5).Request("cpu", "2").Obj(),
			wantAdmit: true,
		},
		{
			name:    "a parent cohort's borrowers are reclaimed from too",
			cohorts: []core.Cohort{MakeCohort("left").Parent("root").Obj(), MakeCohort("right").Parent("root").Obj()},
			cqs: []core.ClusterQueue{
				cpuQueue("lender", "left", "4", core.PreemptNever, core.PreemptAny).Obj(),
				cpuQueue("borrower", "right", "0", core.PreemptNever, core.PreemptNever).Obj()},
			running:     []*AdmittedWrapper{Running("b", "borrower").Use("f", "cpu", "4")},
			head:        MakeWorkload("l", "lender").Request("cpu", "4").Obj(),
			wantVictims: map[string]string{"b": core.InCohortReclamation},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runPreempt(t, tc) })
	}
}

func TestFairSharing(t *testing.T) {
	// Three queues share a cohort whose only quota is the lender's 12 cpu.
	queues := func(weightB string) []core.ClusterQueue {
		b := cpuQueue("b", "co", "0", core.PreemptNever, core.PreemptAny)
		if weightB != "" {
			b.FairWeight(weightB)
		}
		return []core.ClusterQueue{
			cpuQueue("a", "co", "0", core.PreemptNever, core.PreemptAny).Obj(), b.Obj(),
			cpuQueue("lender", "co", "12", core.PreemptNever, core.PreemptNever).Obj()}
	}
	for _, tc := range []preemptCase{
		{
			name: "the queue furthest above its fair share is reclaimed from", fair: true, cqs: queues(""),
			running: []*AdmittedWrapper{
				Running("a1", "a").Use("f", "cpu", "2"),
				Running("b1", "b").Use("f", "cpu", "4"), Running("b2", "b").AdmittedAt(time.Minute).Use("f", "cpu", "4"),
				Running("l1", "lender").Use("f", "cpu", "2"),
			},
			head:        MakeWorkload("a2", "a").Request("cpu", "2").Obj(),
			wantVictims: map[string]string{"b2": core.InCohortFairSharing},
		},
		{
			name: "not when the preemptor would end above the victim's queue", fair: true, cqs: queues(""),
			running: []*AdmittedWrapper{
				Running("a1", "a").Use("f", "cpu", "4"),
				Running("b1", "b").Use("f", "cpu", "4"),
				Running("l1", "lender").Use("f", "cpu", "4"),
			},
			head: MakeWorkload("a2", "a").Request("cpu", "2").Obj(),
		},
		{
			name: "weights scale shares: a queue of weight 2 may hold twice as much", fair: true, cqs: queues("2"),
			running: []*AdmittedWrapper{
				Running("a1", "a").Use("f", "cpu", "3"),
				Running("b1", "b").Use("f", "cpu", "3"), Running("b2", "b").Use("f", "cpu", "3"),
				Running("l1", "lender").Use("f", "cpu", "3"),
			},
			head: MakeWorkload("a2", "a").Request("cpu", "2").Obj(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runPreempt(t, tc) })
	}
}

// Under fair sharing, the queue with the lower share goes first in a cycle.
func TestFairSharingOrdersAdmission(t *testing.T) {
	c := core.NewCluster()
	c.SetFairSharing(true)
	c.SetFlavor(MakeFlavor("f").Obj())
	for _, q := range []core.ClusterQueue{
		cpuQueue("a", "co", "0", core.PreemptNever, core.PreemptNever).Obj(),
		cpuQueue("b", "co", "0", core.PreemptNever, core.PreemptNever).Obj(),
		cpuQueue("lender", "co", "10", core.PreemptNever, core.PreemptNever).Obj(),
	} {
		c.SetClusterQueue(q)
	}
	c.AddAdmitted(Running("a1", "a").Use("f", "cpu", "6").Obj())
	heads := []*core.Workload{
		MakeWorkload("a2", "a").Priority(100).Request("cpu", "4").Obj(), // higher priority, but a already borrows more
		MakeWorkload("b1", "b").Request("cpu", "4").Obj(),
	}
	ds := c.Cycle(heads, Epoch)
	if ds[1].Admit == nil || ds[0].Admit != nil {
		t.Fatalf("fair sharing should admit b1 before a2:\n%s", Describe(ds))
	}
}

// A preemptor holds what was already free of what it needs, so that others
// cannot take it while its victims release theirs.
func TestPreemptorHoldsFreeQuota(t *testing.T) {
	c := core.NewCluster()
	c.SetFlavor(MakeFlavor("f").Obj())
	c.SetClusterQueue(cpuQueue("lender", "co", "4", core.PreemptNever, core.PreemptAny).Obj())
	c.SetClusterQueue(cpuQueue("borrower", "co", "0", core.PreemptNever, core.PreemptNever).Obj())
	c.AddAdmitted(Running("b1", "borrower").Use("f", "cpu", "3").Obj())
	d := c.Cycle([]*core.Workload{MakeWorkload("l", "lender").Request("cpu", "4").Obj()}, Epoch)[0]
	if len(d.Preempt) != 1 {
		t.Fatalf("want one victim: %s", Describe([]core.Decision{d}))
	}
	if got := c.Held("lender")[FR("f", "cpu")]; got != Milli("1") {
		t.Fatalf("held %d, want the 1 cpu that was free", got)
	}
	// Another borrower finds nothing free now.
	d2 := c.Cycle([]*core.Workload{MakeWorkload("b2", "borrower").Request("cpu", "1").Obj()}, Epoch)[0]
	if d2.Admit != nil {
		t.Fatal("a borrower took the quota held for the preemptor")
	}
	// Once the victim is gone, the preemptor fits, and holds nothing more.
	c.RemoveAdmitted("default/b1")
	d3 := c.Cycle([]*core.Workload{MakeWorkload("l", "lender").Request("cpu", "4").Obj()}, Epoch)[0]
	if d3.Admit == nil {
		t.Fatalf("the preemptor is not admitted after its victim left: %s", Describe([]core.Decision{d3}))
	}
	if held := c.Held("lender"); len(held) != 0 && held[FR("f", "cpu")] != 0 {
		t.Errorf("still holding %v after admission", held)
	}
}

func ptr[T any](v T) *T { return &v }
