package scheduler

import (
	"fmt"
	"math/big"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
)

// bytesReader turns fuzz input into small choices; exhausted input reads zeros.
type bytesReader struct {
	data []byte
	done bool
}

func (r *bytesReader) n(limit int) int {
	if limit <= 0 {
		return 0
	}
	if len(r.data) == 0 {
		r.done = true
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b) % limit
}

// amount is up to limit-1 units of cpu, or now and then an extreme amount
// near the top of int64 milli-units, where arithmetic that wraps around
// would turn a request that cannot fit into one that does.
func (r *bytesReader) amount(limit int) int64 {
	v := r.n(limit + len(extremes))
	if v >= limit {
		return extremes[v-limit]
	}
	return int64(v) * milli
}

var extremes = []int64{core.MaxAmount, core.MaxAmount/2 + 1, 1 << 62}

type modelCQ struct {
	spec   core.ClusterQueue
	strict bool
}

type modelAdmitted struct {
	cq        string
	usage     core.Usage
	confirmed bool
	w         *core.Workload
}

// model is an independent account of what should be true.
type model struct {
	cqs      map[string]modelCQ
	pending  map[string]*core.Workload
	admitted map[string]modelAdmitted
}

const milli = 1000

// FuzzAdmission checks, for any queue configuration and any sequence of
// arrivals, cycles, confirmations, failed writes, stale events and finishes,
// with amounts from one cpu to the top of int64, some workloads allowing
// partial admission:
// safety: usage never exceeds nominal quota plus allowed borrowing; lending
// limits hold; an admission's usage is exactly what its admitted pods
// request, never fewer than a pod set's minimum nor more than it asks; usage
// equals the sum of what admitted workloads hold; no workload is admitted
// twice or both admitted and pending; StrictFIFO queues admit in order;
// liveness: once the running workloads finish, every pending workload of a
// BestEffortFIFO queue whose minimum fits in one of its flavors' nominal
// quota is admitted (a scheduler that never admits fails here).
func FuzzAdmission(f *testing.F) {
	f.Add([]byte{3, 1, 0, 5, 2, 1, 0, 0, 0, 1, 2, 3, 1, 0, 4, 2, 1, 1, 0, 1, 3, 1, 1, 4, 0, 9, 1, 1, 2, 3})
	f.Add([]byte{4, 2, 1, 8, 1, 3, 0, 2, 7, 2, 1, 1, 5, 0, 0, 1, 1, 0, 2, 1, 0, 3, 1, 1, 1, 1, 1, 4, 2, 2, 5, 1})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &bytesReader{data: data}
		s := New(clock.RealClock{})
		m := &model{cqs: map[string]modelCQ{}, pending: map[string]*core.Workload{}, admitted: map[string]modelAdmitted{}}
		flavors := []string{"f0", "f1"}
		for _, fl := range flavors {
			s.SetFlavor(core.Flavor{Name: fl})
		}
		nCQ := 1 + r.n(4)
		for i := range nCQ {
			name := fmt.Sprintf("cq%d", i)
			cohort := ""
			if c := r.n(3); c > 0 {
				cohort = fmt.Sprintf("co%d", c)
			}
			spec := core.ClusterQueue{Name: name, Cohort: cohort, Strategy: core.BestEffortFIFO,
				NamespaceSelector: labels.Everything()}
			strict := r.n(2) == 1
			if strict {
				spec.Strategy = core.StrictFIFO
			}
			rg := core.ResourceGroup{Resources: []string{"cpu"}}
			for _, fl := range flavors[:1+r.n(2)] {
				q := core.Quota{Nominal: r.amount(8)}
				if cohort != "" {
					if r.n(2) == 1 {
						v := r.amount(5)
						q.BorrowingLimit = &v
					}
					if r.n(2) == 1 {
						v := min(r.amount(8), q.Nominal)
						q.LendingLimit = &v
					}
				}
				rg.Flavors = append(rg.Flavors, core.FlavorQuotas{Name: fl, Quotas: map[string]core.Quota{"cpu": q}})
			}
			spec.ResourceGroups = []core.ResourceGroup{rg}
			m.cqs[name] = modelCQ{spec: spec, strict: strict}
			s.SetClusterQueue(spec)
			s.SetLocalQueue(queue.LocalQueue{Key: "ns/" + name, ClusterQueue: name})
		}

		next := 0
		for op := 0; op < 300 && !r.done; op++ {
			switch r.n(7) {
			case 0, 1: // a workload arrives
				cq := fmt.Sprintf("cq%d", r.n(nCQ))
				w := &core.Workload{Key: fmt.Sprintf("ns/w%d", next), Priority: int32(r.n(3)),
					NamespaceLabels: labels.Set{}, Timestamp: time.Unix(int64(next), 0), ClusterQueue: cq}
				for p := range 1 + r.n(2) {
					ps := core.PodSet{Name: fmt.Sprintf("ps%d", p), Count: int32(1 + r.n(3)),
						Requests: map[string]int64{"cpu": max(milli, r.amount(5))}}
					if ps.Count > 1 && r.n(2) == 0 { // partial admission allowed
						ps.MinCount = int32(1 + r.n(int(ps.Count)-1))
					}
					w.PodSets = append(w.PodSets, ps)
				}
				next++
				m.pending[w.Key] = w
				s.WorkloadPending(w, "ns/"+cq)
			case 2: // a cycle
				for _, d := range s.Cycle() {
					if d.Admit == nil {
						continue
					}
					m.checkAdmission(t, d)
					delete(m.pending, d.Workload.Key)
					m.admitted[d.Workload.Key] = modelAdmitted{cq: d.Admit.ClusterQueue, usage: d.Admit.Usage, w: d.Workload}
				}
			case 3: // the API shows an admission: confirmed
				if k, a, ok := m.pick(r, false); ok {
					a.confirmed = true
					m.admitted[k] = a
					s.WorkloadAdmitted(core.Admitted{Key: k, ClusterQueue: a.cq, Usage: a.usage}, "ns/"+a.cq)
				}
			case 4: // the admission write failed
				if k, a, ok := m.pick(r, false); ok {
					delete(m.admitted, k)
					m.pending[k] = a.w
					s.Undo(k)
				}
			case 5: // a stale event still shows an assumed workload pending
				if _, a, ok := m.pick(r, false); ok {
					s.WorkloadPending(a.w, "ns/"+a.cq)
				}
			case 6: // a running workload finishes
				if k, _, ok := m.pick(r, true); ok {
					delete(m.admitted, k)
					s.WorkloadGone(k)
				}
			}
			m.checkState(t, s)
		}
		m.settle(t, s)
	})
}

// settle finishes everything admitted and runs cycles until none has
// anything to decide, then checks that no pending workload of a
// BestEffortFIFO queue would fit alone in one of its flavors' nominal quota.
func (m *model) settle(t *testing.T, s *Scheduler) {
	t.Helper()
	for round := 0; ; round++ {
		if round > 10000 {
			t.Fatal("cycles did not settle")
		}
		for k := range m.admitted {
			delete(m.admitted, k)
			s.WorkloadGone(k)
		}
		ds := s.Cycle()
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if d.Admit != nil {
				m.checkAdmission(t, d)
				delete(m.pending, d.Workload.Key)
				m.admitted[d.Workload.Key] = modelAdmitted{cq: d.Admit.ClusterQueue, usage: d.Admit.Usage, w: d.Workload}
			}
		}
		m.checkState(t, s)
	}
	for k, w := range m.pending {
		cq := m.cqs[w.ClusterQueue]
		if cq.strict {
			continue // a head that never fits holds the rest back, by design
		}
		// The least it may be admitted with: its minimum, under partial admission.
		total := new(big.Int)
		for _, ps := range w.PodSets {
			least := ps.Count
			if ps.MinCount > 0 {
				least = ps.MinCount
			}
			total.Add(total, new(big.Int).Mul(big.NewInt(ps.Requests["cpu"]), big.NewInt(int64(least))))
		}
		for _, fq := range cq.spec.ResourceGroups[0].Flavors {
			if total.Cmp(big.NewInt(fq.Quotas["cpu"].Nominal)) <= 0 {
				t.Fatalf("%s needs %s cpu-milli, fits in flavor %s of %s (nominal %d) with nothing running, yet stays pending: %+v",
					k, total, fq.Name, w.ClusterQueue, fq.Quotas["cpu"].Nominal, s.Pending(k))
			}
		}
	}
}

// pick chooses an admitted workload: confirmed ones if confirmed, else assumed ones.
func (m *model) pick(r *bytesReader, confirmed bool) (string, modelAdmitted, bool) {
	var keys []string
	for k, a := range m.admitted {
		if a.confirmed == confirmed {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "", modelAdmitted{}, false
	}
	sort.Strings(keys)
	k := keys[r.n(len(keys))]
	return k, m.admitted[k], true
}

func (m *model) checkAdmission(t *testing.T, d core.Decision) {
	t.Helper()
	k := d.Workload.Key
	if _, ok := m.admitted[k]; ok {
		t.Fatalf("%s admitted twice", k)
	}
	if _, ok := m.pending[k]; !ok {
		t.Fatalf("%s admitted but it was not pending", k)
	}
	// The usage admitted is exactly what the pods request, per flavor.
	exact := map[core.FlavorResource]*big.Int{}
	for i, psa := range d.Admit.PodSets {
		ps := d.Workload.PodSets[i]
		least := ps.Count
		if ps.MinCount > 0 {
			least = ps.MinCount
		}
		if psa.Count < least || psa.Count > ps.Count {
			t.Fatalf("%s pod set %s admitted with %d pods; it asks for %d, at least %d", k, ps.Name, psa.Count, ps.Count, least)
		}
		fr := core.FlavorResource{Flavor: psa.Flavors["cpu"], Resource: "cpu"}
		if exact[fr] == nil {
			exact[fr] = new(big.Int)
		}
		exact[fr].Add(exact[fr], new(big.Int).Mul(big.NewInt(ps.Requests["cpu"]), big.NewInt(int64(psa.Count))))
	}
	for fr, want := range exact {
		// Beyond MaxAmount amounts saturate: such a workload fits only an
		// unlimited (MaxAmount) quota.
		if want.Cmp(big.NewInt(core.MaxAmount)) > 0 {
			want = big.NewInt(core.MaxAmount)
		}
		if got := d.Admit.Usage[fr]; got < 0 || big.NewInt(got).Cmp(want) != 0 {
			t.Fatalf("%s admitted with %d of %v, its pods request %s", k, got, fr, want)
		}
	}
	if m.cqs[d.Admit.ClusterQueue].strict {
		for pk, p := range m.pending {
			if pk != k && p.ClusterQueue == d.Admit.ClusterQueue && core.Before(p, d.Workload) {
				t.Fatalf("StrictFIFO %s admitted %s ahead of %s", d.Admit.ClusterQueue, k, pk)
			}
		}
	}
}

func (m *model) checkState(t *testing.T, s *Scheduler) {
	t.Helper()
	// Usage is exactly what admitted workloads hold.
	want := map[string]core.Usage{}
	for k, a := range m.admitted {
		if want[a.cq] == nil {
			want[a.cq] = core.Usage{}
		}
		want[a.cq].Add(a.usage)
		if s.queues.Has(k) {
			t.Fatalf("%s is both admitted and pending", k)
		}
	}
	for k := range m.pending {
		if _, ok := s.cluster.IsAdmitted(k); ok {
			t.Fatalf("%s is pending but holds quota", k)
		}
	}
	byCohort := map[string][]modelCQ{}
	for name, cq := range m.cqs {
		got := s.cluster.Usage(name)
		for fr, v := range want[name] {
			if got[fr] != v {
				t.Fatalf("usage of %s is %v, admitted workloads hold %v", name, got, want[name])
			}
		}
		for fr, v := range got {
			if want[name][fr] != v {
				t.Fatalf("usage of %s is %v, admitted workloads hold %v", name, got, want[name])
			}
		}
		// Within nominal quota plus the borrowing allowed.
		for _, fq := range cq.spec.ResourceGroups[0].Flavors {
			q := fq.Quotas["cpu"]
			limit := big.NewInt(q.Nominal)
			if cq.spec.Cohort != "" {
				limit = nil
				if q.BorrowingLimit != nil {
					limit = new(big.Int).Add(big.NewInt(q.Nominal), big.NewInt(*q.BorrowingLimit))
				}
			}
			if u := got[core.FlavorResource{Flavor: fq.Name, Resource: "cpu"}]; u < 0 || limit != nil && big.NewInt(u).Cmp(limit) > 0 {
				t.Fatalf("%s uses %d of flavor %s, limit %v", name, u, fq.Name, limit)
			}
		}
		if cq.spec.Cohort != "" {
			byCohort[cq.spec.Cohort] = append(byCohort[cq.spec.Cohort], cq)
		}
	}
	// In a cohort, borrowers only ever use what lenders may lend: the part of
	// each queue's usage above what it keeps never exceeds the lendable total.
	for co, members := range byCohort {
		for _, fl := range []string{"f0", "f1"} {
			fr := core.FlavorResource{Flavor: fl, Resource: "cpu"}
			lendable, above := new(big.Int), new(big.Int)
			for _, cq := range members {
				var q core.Quota
				for _, fq := range cq.spec.ResourceGroups[0].Flavors {
					if fq.Name == fl {
						q = fq.Quotas["cpu"]
					}
				}
				kept := int64(0)
				if q.LendingLimit != nil {
					kept = q.Nominal - *q.LendingLimit
				}
				lendable.Add(lendable, big.NewInt(q.Nominal-kept))
				above.Add(above, big.NewInt(max(0, s.cluster.Usage(cq.spec.Name)[fr]-kept)))
			}
			if above.Cmp(lendable) > 0 {
				t.Fatalf("cohort %s flavor %s: %d used beyond what queues keep, only %d may be lent", co, fl, above, lendable)
			}
		}
	}
}
