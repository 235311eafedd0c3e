package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Class is one kind of workload in a scenario.
type Class struct {
	Name     string
	CPU      int64         // cpu requested, whole cpus
	Runtime  time.Duration // how long it runs once admitted
	Priority int32
	Interval time.Duration // one arrives per queue every Interval
	PerQueue int           // how many arrive per queue
	// Kind is what each workload of the class is: "" a Workload the bench
	// makes and marks finished after Runtime; otherwise berth queues what
	// the bench makes, pods that run for Runtime on the scenario's Nodes: a
	// batch/v1 Job of CPU pods of 1 cpu (KindJob), one plain Pod of CPU cpu
	// (KindPod), or a pod group of CPU Pods of 1 cpu (KindPodGroup).
	Kind string
}

// The kinds of a Class.
const (
	KindJob      = "Job"
	KindPod      = "Pod"
	KindPodGroup = "PodGroup"
)

// Scenario is queues under cohorts and the workloads that arrive at them.
type Scenario struct {
	Name                     string
	Cohorts, QueuesPerCohort int
	NominalCPU, BorrowingCPU int64 // per ClusterQueue
	Classes                  []Class
	// Preemption: reclaimWithinCohort Any, withinClusterQueue LowerPriority.
	Preemption bool
	// Held: the queues start held (stopPolicy Hold) until every workload
	// is created and the API server's raw status-write rate is measured,
	// then are all released at once; the run ends when all are admitted,
	// and nothing is marked finished.
	Held bool
	// Nodes are fake nodes the run makes for its Jobs' pods; the cluster's
	// own simulator (berth up's) plays their kubelets.
	Nodes int
}

// Scenarios are the scenarios Run knows, by name.
var Scenarios = map[string]func(scale float64) Scenario{
	"baseline":    Baseline,
	"large-scale": LargeScale,
	"throughput":  Throughput,
	"fidelity":    Fidelity,
}

// Baseline is the shape of Kueue's own scheduler performance test, for a
// like-for-like comparison: 5 cohorts of 6 ClusterQueues of 20 cpu (each
// may borrow 100), with 350 small, 100 medium and 50 large workloads
// arriving at each queue; 15,000 at scale 1. Scale multiplies the workloads
// per queue (at least one of each class), not the queues.
func Baseline(scale float64) Scenario {
	per := func(n int) int { return max(1, int(math.Round(float64(n)*scale))) }
	return Scenario{
		Name: "baseline", Cohorts: 5, QueuesPerCohort: 6, NominalCPU: 20, BorrowingCPU: 100, Preemption: true,
		Classes: []Class{
			{Name: "small", CPU: 1, Runtime: 200 * time.Millisecond, Priority: 50, Interval: 100 * time.Millisecond, PerQueue: per(350)},
			{Name: "medium", CPU: 5, Runtime: 500 * time.Millisecond, Priority: 100, Interval: 500 * time.Millisecond, PerQueue: per(100)},
			{Name: "large", CPU: 20, Runtime: time.Second, Priority: 200, Interval: 1200 * time.Millisecond, PerQueue: per(50)},
		},
	}
}

// Chaos is the scenario of `berth bench chaos`: Baseline's queues and
// classes, each class arriving ten times as rarely and running eight times
// as long (the same mix, asking for about 95 % of the quota's cpu), plus
// Jobs of 2 pods running 5 s, one every 6 s at each queue, on 20 fake
// nodes: about 103 % in all, in bursts, so queues fill, borrow and preempt.
// Work arrives for d: a run lasts as long as its faults need. Scale
// multiplies how often each class arrives (and so the cpu asked for).
func Chaos(d time.Duration, scale float64) Scenario {
	s := Baseline(1)
	s.Name, s.Nodes = "chaos", 20
	for i := range s.Classes {
		c := &s.Classes[i]
		c.Interval *= 10
		c.Runtime *= 8
	}
	// berth queues Jobs, plain Pods and pod groups each its own way; the
	// faults hit all three.
	s.Classes = append(s.Classes,
		Class{Name: "job", CPU: 2, Runtime: 5 * time.Second, Priority: 100, Interval: 6 * time.Second, Kind: KindJob},
		Class{Name: "pod", CPU: 1, Runtime: 5 * time.Second, Priority: 100, Interval: 12 * time.Second, Kind: KindPod},
		Class{Name: "group", CPU: 2, Runtime: 5 * time.Second, Priority: 100, Interval: 12 * time.Second, Kind: KindPodGroup})
	for i := range s.Classes {
		c := &s.Classes[i]
		c.Interval = time.Duration(float64(c.Interval) / scale)
		c.PerQueue = max(1, int(d/c.Interval))
	}
	return s
}

// LargeScale is Kueue's large-scale shape: 10 cohorts of 100 ClusterQueues,
// 50 workloads arriving at each (35 small, 11 medium, 4 large, as in
// Baseline): 50,000 at scale 1. Here scale multiplies the queues per cohort
// (at least one), since the queues, not the workloads per queue, make it
// large.
func LargeScale(scale float64) Scenario {
	s := Baseline(1)
	s.Name, s.Cohorts, s.QueuesPerCohort = "large-scale", 10, max(1, int(math.Round(100*scale)))
	for i, n := range []int{35, 11, 4} {
		s.Classes[i].PerQueue = n
	}
	return s
}

// Throughput measures how fast admissions go when quota never binds:
// 10 ClusterQueues of a million cpu in one cohort, 1,000 pending workloads
// each (10,000 at scale 1) released at once, against the rate at which the
// same API server takes status writes from a client doing nothing else.
func Throughput(scale float64) Scenario {
	return Scenario{
		Name: "throughput", Cohorts: 1, QueuesPerCohort: 10, NominalCPU: 1_000_000, Held: true,
		Classes: []Class{{Name: "tiny", CPU: 1, Priority: 100, PerQueue: max(1, int(math.Round(1000*scale)))}},
	}
}

// Fidelity is a run where the quota, not the API server, sets the pace,
// for comparing berth whatif's replay of it with what happened
// (docs/whatif.md): 2 cohorts of 3 ClusterQueues of 10 cpu (each may borrow
// 10), workloads running tens of seconds and arriving over two minutes at
// each queue, about 2.2 times what the quota can run in that time, so that
// queues fill, borrow and preempt: 80 small, 20 medium and 6 large a queue
// (636 at scale 1; scale multiplies them, at least one of each). Below
// scale 0.1 the run times shrink too (by 10 x scale), so that a smoke run
// of a few workloads takes seconds.
func Fidelity(scale float64) Scenario {
	per := func(n int) int { return max(1, int(math.Round(float64(n)*scale))) }
	run := func(d time.Duration) time.Duration { return time.Duration(float64(d) * min(1, 10*scale)) }
	return Scenario{
		Name: "fidelity", Cohorts: 2, QueuesPerCohort: 3, NominalCPU: 10, BorrowingCPU: 10, Preemption: true,
		Classes: []Class{
			{Name: "small", CPU: 1, Runtime: run(10 * time.Second), Priority: 50, Interval: 1500 * time.Millisecond, PerQueue: per(80)},
			{Name: "medium", CPU: 3, Runtime: run(15 * time.Second), Priority: 100, Interval: 6 * time.Second, PerQueue: per(20)},
			{Name: "large", CPU: 8, Runtime: run(20 * time.Second), Priority: 200, Interval: 20 * time.Second, PerQueue: per(6)},
		},
	}
}

// hasPods says whether any class runs pods (Jobs, Pods, pod groups).
func (s Scenario) hasPods() bool {
	return slices.ContainsFunc(s.Classes, func(c Class) bool { return c.Kind != "" })
}

// Planned is one workload of a scenario: which queue it goes to, its class,
// and when it arrives, measured from the start.
type Planned struct {
	Name   string
	Cohort int
	Queue  int // index among all queues; its cohort is Queue / QueuesPerCohort
	Class  *Class
	At     time.Duration
}

// Plan lists a scenario's workloads in order of arrival.
func (s Scenario) Plan() []Planned {
	var out []Planned
	for q := range s.Cohorts * s.QueuesPerCohort {
		for i := range s.Classes {
			c := &s.Classes[i]
			for n := range c.PerQueue {
				out = append(out, Planned{Name: fmt.Sprintf("%s-q%d-%d", c.Name, q, n),
					Cohort: q / s.QueuesPerCohort, Queue: q, Class: c, At: time.Duration(n) * c.Interval})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Planned) int { return int(a.At - b.At) })
	return out
}

// LowerBound is the shortest wall time the quota allows for a plan: no
// cohort can run more at once than its queues' nominal cpu, and nothing
// finishes before it arrives and runs. For every cohort and every arrival
// time t, the work arriving from t on needs at least its cpu-seconds
// divided by the cohort's cpu after t. It ignores packing, so a scheduler
// can approach it but not beat it.
func (s Scenario) LowerBound(plan []Planned) time.Duration {
	capacity := float64(int64(s.QueuesPerCohort) * s.NominalCPU)
	var bound time.Duration
	for cohort := range s.Cohorts {
		var items []Planned
		for _, p := range plan {
			if p.Cohort == cohort {
				items = append(items, p)
			}
		}
		// items are in arrival order; suffix sums of cpu-seconds.
		work := 0.0
		for i := len(items) - 1; i >= 0; i-- {
			p := items[i]
			work += float64(p.Class.CPU) * p.Class.Runtime.Seconds()
			bound = max(bound, p.At+p.Class.Runtime,
				p.At+time.Duration(work/capacity*float64(time.Second)))
		}
	}
	return bound
}
