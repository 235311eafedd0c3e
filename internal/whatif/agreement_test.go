package whatif

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func admittedAt(ts ...float64) *Result {
	r := &Result{}
	for _, t := range ts {
		o := Outcome{}
		if !math.IsNaN(t) {
			o.Admitted = &t
		}
		r.Workloads = append(r.Workloads, o)
	}
	return r
}

func TestOrderAgreement(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name string
		a, b *Result
		want float64
	}{
		{"same order", admittedAt(1, 2, 3, 4), admittedAt(10, 20, 30, 40), 1},
		{"reversed", admittedAt(1, 2, 3, 4), admittedAt(4, 3, 2, 1), 0},
		{"one swap of six pairs", admittedAt(1, 2, 3, 4), admittedAt(1, 3, 2, 4), 5.0 / 6},
		{"ties within a second agree", admittedAt(1.1, 1.9, 3), admittedAt(2, 1, 3), 1},
		{"only those admitted in both count", admittedAt(1, 2, nan, 4), admittedAt(1, 2, 3, nan), 1},
		{"fewer than two", admittedAt(1), admittedAt(2), 1},
	} {
		if got := OrderAgreement(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Counting inversions by merge sort agrees with counting every pair.
func TestOrderAgreementMatchesEveryPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 2 + rng.IntN(60)
		var as, bs []float64
		for range n {
			as, bs = append(as, float64(rng.IntN(20))), append(bs, float64(rng.IntN(20)))
		}
		agree, pairs := 0, 0
		for i := range n {
			for j := i + 1; j < n; j++ {
				pairs++
				if (as[i]-as[j])*(bs[i]-bs[j]) >= 0 {
					agree++
				}
			}
		}
		want := float64(agree) / float64(pairs)
		if got := OrderAgreement(admittedAt(as...), admittedAt(bs...)); math.Abs(got-want) > 1e-9 {
			t.Fatalf("%v vs %v: %v, want %v", as, bs, got, want)
		}
	}
}

func TestRecordedNeedsAdmissions(t *testing.T) {
	at := 5.0
	trace := []Workload{{Name: "a", Namespace: "ns", LocalQueue: "lq", Arrival: 2, Run: 10, Admitted: &at, Evicted: 2}}
	replay := &Result{Workloads: []Outcome{{ClusterQueue: "cq"}}}
	r, err := Recorded(trace, replay)
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Workloads[0]; o.Wait != 3 || o.ClusterQueue != "cq" || o.LocalQueue != "ns/lq" || o.Preempted != 2 || !r.Recorded || r.End != 15 || r.Preemptions != 2 {
		t.Errorf("recorded %+v, end %v, preemptions %d", o, r.End, r.Preemptions)
	}
	trace[0].Admitted = nil
	if _, err := Recorded(trace, replay); err == nil || !strings.Contains(err.Error(), "workload ns/a: no recorded admission") {
		t.Errorf("a trace without admissions: %v", err)
	}
}

func TestByLastAdmission(t *testing.T) {
	at := 9.0
	r := &Result{Workloads: []Outcome{{Arrival: 1, Admitted: &at, Wait: 2}, {Arrival: 1, Wait: 20}}}
	got := ByLastAdmission(r)
	if got.Workloads[0].Wait != 8 || got.Workloads[1].Wait != 20 || r.Workloads[0].Wait != 2 {
		t.Errorf("waits %v and %v (the original's first: %v); want 8, 20 (never admitted: as it was), and 2 left alone",
			got.Workloads[0].Wait, got.Workloads[1].Wait, r.Workloads[0].Wait)
	}
}
