package scheduler

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/workload"
)

var debugPreemption = false

// pworld is the preemption fuzz target's independent account of the system.
type pworld struct {
	t       *testing.T
	s       *Scheduler
	clock   *clocktesting.FakeClock
	cqs     map[string]core.ClusterQueue
	pending map[string]*core.Workload
	running map[string]prunning
	evicted map[string]int32 // evictions per workload, for the backoff
	// evictions counts every eviction, to detect preemption that never settles.
	evictions int
}

type prunning struct {
	w     *core.Workload
	cq    string
	usage core.Usage
}

// FuzzPreemption checks, for any queue configuration with any preemption
// policies (fair sharing on or off) and any sequence of arrivals, cycles and
// finishes: usage stays within nominal quota plus allowed borrowing; every
// victim is allowed by the rule that chose it; no workload is admitted and
// pending at once; and once nothing new arrives or finishes, cycles reach a
// fixed point where nobody is evicted any more.
func FuzzPreemption(f *testing.F) {
	f.Add([]byte{2, 1, 1, 2, 1, 0, 5, 1, 2, 0, 1, 0, 0, 0, 3, 1, 0, 2, 0, 1, 1, 1, 0, 3, 2, 3, 0, 1, 2, 0, 0, 0, 2, 2})
	f.Add([]byte{3, 0, 2, 1, 2, 2, 3, 0, 1, 1, 2, 2, 1, 4, 0, 0, 2, 1, 2, 0, 1, 3, 0, 2, 1, 0, 3, 2, 2, 1, 3, 0, 2, 4, 1})
	f.Add([]byte("preemption must settle: ping pong is not a fixed point, no matter the policies chosen"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &bytesReader{data: data}
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		w := &pworld{t: t, s: New(clk), clock: clk, cqs: map[string]core.ClusterQueue{},
			pending: map[string]*core.Workload{}, running: map[string]prunning{}, evicted: map[string]int32{}}
		w.s.SetFairSharing(r.n(3) == 0)
		w.s.SetFlavor(core.Flavor{Name: "f0"})
		policies := []core.PreemptionPolicy{core.PreemptNever, core.PreemptLowerPriority, core.PreemptLowerOrNewerEqualPriority, core.PreemptAny}
		nCQ := 2 + r.n(3)
		for i := range nCQ {
			name := fmt.Sprintf("cq%d", i)
			cq := core.ClusterQueue{Name: name, Strategy: core.BestEffortFIFO, NamespaceSelector: labels.Everything()}
			if r.n(4) > 0 {
				cq.Cohort = "co"
			}
			if r.n(3) == 0 {
				cq.Strategy = core.StrictFIFO
			}
			cq.Preemption.WithinClusterQueue = policies[r.n(3)]
			cq.Preemption.ReclaimWithinCohort = []core.PreemptionPolicy{core.PreemptNever, core.PreemptLowerPriority, core.PreemptAny}[r.n(3)]
			if cq.Preemption.ReclaimWithinCohort != core.PreemptNever && r.n(2) == 0 {
				cq.Preemption.BorrowWithinCohort = core.PreemptLowerPriority
				if r.n(2) == 0 {
					th := int32(r.n(3))
					cq.Preemption.MaxPriorityThreshold = &th
				}
			}
			if r.n(3) == 0 {
				weight := int64(r.n(3)) * 1000
				cq.FairWeight = &weight
			}
			q := core.Quota{Nominal: int64(1+r.n(6)) * milli}
			if cq.Cohort != "" && r.n(2) == 0 {
				v := int64(r.n(4)) * milli
				q.BorrowingLimit = &v
			}
			if cq.Cohort != "" && r.n(2) == 0 {
				v := int64(r.n(int(q.Nominal/milli)+1)) * milli
				q.LendingLimit = &v
			}
			cq.ResourceGroups = []core.ResourceGroup{{Resources: []string{"cpu"},
				Flavors: []core.FlavorQuotas{{Name: "f0", Quotas: map[string]core.Quota{"cpu": q}}}}}
			w.cqs[name] = cq
			w.s.SetClusterQueue(cq)
			w.s.SetLocalQueue(queue.LocalQueue{Key: "ns/" + name, ClusterQueue: name})
		}

		next := 0
		for op := 0; op < 200 && !r.done; op++ {
			switch r.n(5) {
			case 0, 1:
				cq := fmt.Sprintf("cq%d", r.n(nCQ))
				wl := &core.Workload{Key: fmt.Sprintf("ns/w%d", next), Priority: int32(r.n(3)), ClusterQueue: cq,
					NamespaceLabels: labels.Set{}, Timestamp: clk.Now(),
					PodSets: []core.PodSet{{Name: "main", Count: 1, Requests: map[string]int64{"cpu": int64(1+r.n(3)) * milli}}}}
				next++
				w.pending[wl.Key] = wl
				w.s.WorkloadPending(wl, "ns/"+cq)
			case 2, 3:
				w.cycle()
			case 4:
				if k, ok := w.pickRunning(r); ok {
					delete(w.running, k)
					w.s.WorkloadGone(k)
				}
			}
			clk.Step(time.Duration(1+r.n(30)) * time.Second)
			w.check()
		}

		// Nothing arrives or finishes any more: preemption must settle.
		settled, quiet := 0, 0
		for round := 0; round < 400 && quiet < 40; round++ {
			before := w.evictions
			admitted := w.cycle()
			if w.evictions == before && admitted == 0 {
				quiet++
			} else {
				quiet = 0
				settled = round
			}
			clk.Step(time.Minute)
			w.check()
		}
		if quiet < 40 {
			t.Fatalf("preemption does not settle: still evicting or admitting after %d rounds (%d evictions in all)", settled, w.evictions)
		}
	})
}

// cycle runs a cycle and applies its decisions as the controller and the API
// would: admissions confirmed, victims evicted with a backoff.
func (w *pworld) cycle() (admitted int) {
	ds := w.s.Cycle()
	if debugPreemption {
		var hs []string
		for _, d := range ds {
			hs = append(hs, d.Workload.Key+"@"+d.Workload.ClusterQueue)
		}
		w.t.Logf("t=%s heads %v", w.clock.Now().Format("15:04:05"), hs)
	}
	for _, d := range ds {
		if d.Admit != nil {
			admitted++
			k := d.Workload.Key
			if _, ok := w.running[k]; ok {
				w.t.Fatalf("%s admitted twice", k)
			}
			delete(w.pending, k)
			w.running[k] = prunning{w: d.Workload, cq: d.Admit.ClusterQueue, usage: d.Admit.Usage}
			w.s.WorkloadAdmitted(core.Admitted{Key: k, ClusterQueue: d.Admit.ClusterQueue, Usage: d.Admit.Usage,
				Priority: d.Workload.Priority, Timestamp: d.Workload.Timestamp, AdmittedAt: w.clock.Now()}, "ns/"+d.Admit.ClusterQueue)
		}
	}
	for _, d := range ds {
		for _, v := range d.Preempt {
			w.checkVictim(d.Workload, v)
			if debugPreemption {
				r := w.running[v.Key]
				w.t.Logf("t=%s %s (p%d, %s) preempts %s (p%d, %s) by %s", w.clock.Now().Format("15:04:05"), d.Workload.Key,
					d.Workload.Priority, d.Workload.ClusterQueue, v.Key, r.w.Priority, r.cq, v.Reason)
			}
		}
		if debugPreemption && d.Pending != nil && d.Workload.Key == "ns/w7" {
			w.t.Logf("t=%s w7: %s: %s", w.clock.Now().Format("15:04:05"), d.Pending.Reason, d.Pending.Message)
		}
		if debugPreemption && d.Admit != nil {
			w.t.Logf("t=%s admit %s (p%d) in %s", w.clock.Now().Format("15:04:05"), d.Workload.Key, d.Workload.Priority, d.Admit.ClusterQueue)
		}
	}
	for _, d := range ds {
		for _, v := range d.Preempt {
			run, ok := w.running[v.Key]
			if !ok {
				w.t.Fatalf("victim %s is not running", v.Key)
			}
			delete(w.running, v.Key)
			w.evicted[v.Key]++
			w.evictions++
			// Evicted: back in its queue from now, after its backoff.
			back := *run.w
			back.Timestamp = w.clock.Now()
			back.NotBefore = w.clock.Now().Add(workload.BackoffFor(w.evicted[v.Key]))
			w.pending[v.Key] = &back
			w.s.WorkloadPending(&back, "ns/"+run.cq)
		}
	}
	return admitted
}

// checkVictim verifies a victim against the rule that chose it, before the
// eviction is applied.
func (w *pworld) checkVictim(preemptor *core.Workload, v core.Victim) {
	run, ok := w.running[v.Key]
	if !ok {
		w.t.Fatalf("victim %s of %s does not hold quota", v.Key, preemptor.Key)
	}
	pcq := w.cqs[preemptor.ClusterQueue]
	vp, pp := run.w.Priority, preemptor.Priority
	switch v.Reason {
	case core.InClusterQueue:
		ok = run.cq == preemptor.ClusterQueue && (vp < pp ||
			(pcq.Preemption.WithinClusterQueue == core.PreemptLowerOrNewerEqualPriority && vp == pp && preemptor.Timestamp.Before(run.w.Timestamp)))
	case core.InCohortReclamation:
		ok = run.cq != preemptor.ClusterQueue && w.borrowing(run.cq) &&
			(pcq.Preemption.ReclaimWithinCohort == core.PreemptAny || vp < pp)
	case core.InCohortReclaimWhileBorrowing:
		ok = run.cq != preemptor.ClusterQueue && w.borrowing(run.cq) && vp < pp &&
			(pcq.Preemption.MaxPriorityThreshold == nil || vp <= *pcq.Preemption.MaxPriorityThreshold)
	case core.InCohortFairSharing:
		ok = run.cq != preemptor.ClusterQueue && w.borrowing(run.cq) && pcq.Preemption.ReclaimWithinCohort != core.PreemptNever
	default:
		ok = false
	}
	if !ok {
		w.t.Fatalf("%s (priority %d, %s) preempted %s (priority %d, %s) by rule %s, which does not allow it",
			preemptor.Key, pp, preemptor.ClusterQueue, v.Key, vp, run.cq, v.Reason)
	}
}

func (w *pworld) borrowing(cq string) bool {
	var used int64
	for _, r := range w.running {
		if r.cq == cq {
			used += r.usage[core.FlavorResource{Flavor: "f0", Resource: "cpu"}]
		}
	}
	return used > w.cqs[cq].ResourceGroups[0].Flavors[0].Quotas["cpu"].Nominal
}

func (w *pworld) pickRunning(r *bytesReader) (string, bool) {
	var keys []string
	for k := range w.running {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "", false
	}
	sort.Strings(keys)
	return keys[r.n(len(keys))], true
}

// check verifies usage against the model and the limits.
func (w *pworld) check() {
	fr := core.FlavorResource{Flavor: "f0", Resource: "cpu"}
	used := map[string]int64{}
	for k, r := range w.running {
		used[r.cq] += r.usage[fr]
		if w.s.queues.Has(k) {
			w.t.Fatalf("%s is both admitted and pending", k)
		}
	}
	for k := range w.pending {
		if _, ok := w.s.cluster.IsAdmitted(k); ok {
			w.t.Fatalf("%s is pending but holds quota", k)
		}
	}
	var lendable, above int64
	for name, cq := range w.cqs {
		got := w.s.cluster.Usage(name)[fr]
		// What preemptors hold counts against the limits like usage.
		if held := w.s.cluster.Held(name)[fr]; got != used[name]+held {
			w.t.Fatalf("usage of %s is %d; its admitted workloads hold %d and preemptors %d", name, got, used[name], held)
		}
		q := cq.ResourceGroups[0].Flavors[0].Quotas["cpu"]
		if cq.Cohort == "" && got > q.Nominal {
			w.t.Fatalf("%s uses %d beyond its nominal %d without a cohort", name, got, q.Nominal)
		}
		if cq.Cohort != "" && q.BorrowingLimit != nil && got > q.Nominal+*q.BorrowingLimit {
			w.t.Fatalf("%s uses %d beyond nominal %d plus borrowing limit %d", name, got, q.Nominal, *q.BorrowingLimit)
		}
		if cq.Cohort != "" {
			kept := int64(0)
			if q.LendingLimit != nil {
				kept = q.Nominal - *q.LendingLimit
			}
			lendable += q.Nominal - kept
			above += max(0, got-kept)
		}
	}
	if above > lendable {
		w.t.Fatalf("the cohort uses %d beyond what its queues keep, only %d may be lent", above, lendable)
	}
}
