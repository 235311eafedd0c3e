package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/whatif"
)

func TestBaselineHasKueuesShape(t *testing.T) {
	s := Baseline(1)
	plan := s.Plan()
	if len(plan) != 15000 {
		t.Fatalf("baseline at scale 1 plans %d workloads, want 15,000", len(plan))
	}
	perClass := map[string]int{}
	for i, p := range plan {
		perClass[p.Class.Name]++
		if i > 0 && p.At < plan[i-1].At {
			t.Fatalf("plan not in arrival order at %d: %v after %v", i, p.At, plan[i-1].At)
		}
		if p.Cohort != p.Queue/s.QueuesPerCohort {
			t.Fatalf("%s: cohort %d, queue %d", p.Name, p.Cohort, p.Queue)
		}
	}
	if perClass["small"] != 30*350 || perClass["medium"] != 30*100 || perClass["large"] != 30*50 {
		t.Errorf("per class %v, want small 10500, medium 3000, large 1500", perClass)
	}
	if last := plan[len(plan)-1].At; last != 49*1200*time.Millisecond {
		t.Errorf("last arrival at %v, want 58.8s (the 50th large)", last)
	}
	if n := len(Baseline(0.01).Plan()); n != 30*(4+1+1) {
		t.Errorf("scale 0.01 plans %d workloads, want 180 (at least one of each class per queue)", n)
	}
}

func TestLowerBound(t *testing.T) {
	c := Class{Name: "c", CPU: 10, Runtime: 2 * time.Second}
	s := Scenario{Cohorts: 2, QueuesPerCohort: 1, NominalCPU: 10}
	cases := []struct {
		name string
		plan []Planned
		want time.Duration
	}{
		{"one workload: its runtime", []Planned{{Class: &c}}, 2 * time.Second},
		{"late arrival: arrival plus runtime", []Planned{{Class: &c, At: 5 * time.Second}}, 7 * time.Second},
		{"three at once need the cohort for 6s", []Planned{{Class: &c}, {Class: &c}, {Class: &c}}, 6 * time.Second},
		{"spread over cohorts: each needs 2s", []Planned{{Class: &c}, {Class: &c, Cohort: 1}}, 2 * time.Second},
		{"all the work from the start: 80 cpu-s on 10 cpu", []Planned{{Class: &c}, {Class: &c, At: time.Second},
			{Class: &c, At: time.Second}, {Class: &c, At: time.Second}}, 8 * time.Second},
		// From 0 it is 8s of work, but the 60 cpu-s arriving at 5s alone
		// take until 11s.
		{"the work after a later time bounds it", []Planned{{Class: &c}, {Class: &c, At: 5 * time.Second},
			{Class: &c, At: 5 * time.Second}, {Class: &c, At: 5 * time.Second}}, 11 * time.Second},
	}
	for _, tc := range cases {
		if got := s.LowerBound(tc.plan); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestThroughputNeverBindsQuota(t *testing.T) {
	s := Throughput(1)
	plan := s.Plan()
	if len(plan) != 10000 || !s.Held {
		t.Fatalf("throughput at scale 1: %d workloads, held %v; want 10,000 held", len(plan), s.Held)
	}
	var cpu int64
	for _, p := range plan {
		cpu += p.Class.CPU
		if p.At != 0 {
			t.Fatalf("%s arrives at %v; all are pending before the release", p.Name, p.At)
		}
	}
	if capacity := int64(s.Cohorts*s.QueuesPerCohort) * s.NominalCPU; cpu > capacity/10 {
		t.Errorf("workloads ask %d cpu of %d: the quota must not bind", cpu, capacity)
	}
}

func TestLargeScaleHasKueuesShape(t *testing.T) {
	s := LargeScale(1)
	if n := len(s.Plan()); n != 50000 || s.Cohorts*s.QueuesPerCohort != 1000 {
		t.Errorf("large-scale at 1: %d workloads on %d queues, want 50,000 on 1,000", n, s.Cohorts*s.QueuesPerCohort)
	}
	if n := len(LargeScale(0.01).Plan()); n != 500 {
		t.Errorf("large-scale at 0.01: %d workloads, want 500 (10 queues of 50)", n)
	}
	if Baseline(1).Classes[0].PerQueue != 350 {
		t.Error("LargeScale changed Baseline's classes")
	}
}

// The deep queue's bounds: 450 gangs of 32 cpu under 1,536 cpu run 48 at a
// time, so 10 waves of 30 s; the last can start after 9.
func TestDeepQueueBounds(t *testing.T) {
	s := DeepQueueAt(1)
	if s.AtOnce() != 48 || s.LastStartBound() != 270*time.Second || s.LowerBound() != 300*time.Second {
		t.Errorf("at once %d, last start %v, bound %v; want 48, 4m30s, 5m0s", s.AtOnce(), s.LastStartBound(), s.LowerBound())
	}
	if len(s.units()) != 450 || queueOf("q2-gang-17") != 2 || queueOf(s.units()[449].Name) != 2 {
		t.Errorf("%d units, the last %s", len(s.units()), s.units()[449].Name)
	}
}

// The queues a run writes are a configuration berth whatif takes as it is.
func TestQueuesYAMLIsAWhatifConfig(t *testing.T) {
	s := Fidelity(1)
	path := filepath.Join(t.TempDir(), "queues.yaml")
	if err := writeQueues(path, &s); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := whatif.ParseConfig("queues.yaml", data)
	if err != nil {
		t.Fatalf("berth whatif refuses the bench's queues: %v\n%s", err, data)
	}
	if got := len(cfg.ClusterQueues); got != s.Cohorts*s.QueuesPerCohort {
		t.Errorf("%d ClusterQueues, want %d", got, s.Cohorts*s.QueuesPerCohort)
	}
}
