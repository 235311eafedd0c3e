package scheduler

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/admissionfairsharing"
	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
)

// fairQueue is a scheduler with one ClusterQueue of cpu that orders by
// LocalQueue usage, and LocalQueues by weight.
func fairQueue(t *testing.T, cpu string, weights map[string]float64) (*Scheduler, *clocktesting.FakePassiveClock) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	s := New(clk)
	s.SetAdmissionFairSharing(admissionfairsharing.Config{HalfLife: 10 * time.Minute, SamplingInterval: 30 * time.Second})
	s.SetFlavor(MakeFlavor("default").Obj())
	s.SetClusterQueue(MakeClusterQueue("cq").AdmissionFairSharing().ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", cpu).Obj()).Obj())
	for lq, w := range weights {
		s.SetLocalQueue(queue.LocalQueue{Key: "default/" + lq, ClusterQueue: "cq"})
		s.SetLocalQueueWeight("default/"+lq, w)
	}
	return s, clk
}

// Teams that always have work waiting share a ClusterQueue in proportion to
// their LocalQueues' weights, over a long random trace: workloads of random
// size and length, all of the same priority, each team's submitted in one
// burst after another.
func TestLocalQueuesShareByWeightOnALongRandomTrace(t *testing.T) {
	weights := map[string]float64{"a": 1, "b": 2, "c": 3}
	used := shareTrace(t, weights, true)
	for lq, w := range weights {
		if got, want := used[lq], w/6; math.Abs(got-want) > 0.04 {
			t.Errorf("LocalQueue %s (weight %v) used %.3f of the quota; want %.3f", lq, w, got, want)
		}
	}
	t.Logf("shares: a %.3f, b %.3f, c %.3f", used["a"], used["b"], used["c"])
	// Without fair sharing the same trace is first come, first served, and
	// the teams share alike: it is the ordering that shares, not the trace.
	used = shareTrace(t, weights, false)
	for lq := range weights {
		if got := used[lq]; math.Abs(got-1.0/3) > 0.04 {
			t.Errorf("without fair sharing LocalQueue %s used %.3f of the quota; want about a third", lq, got)
		}
	}
}

// shareTrace runs the trace and returns each LocalQueue's part of the cpu
// used after a warm-up.
func shareTrace(t *testing.T, weights map[string]float64, fair bool) map[string]float64 {
	s, clk := fairQueue(t, "12", weights)
	if !fair {
		s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "12").Obj()).Obj())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type running struct {
		lq   string
		cpu  int
		ends time.Time
	}
	run := map[string]running{}
	waiting := map[string]int{}
	sizes := map[string]int{}
	used := map[string]float64{} // cpu-seconds after warm-up
	n := 0
	start, step := clk.Now(), 5*time.Second
	warm, end := start.Add(2*time.Hour), start.Add(14*time.Hour)
	for now := start; now.Before(end); now = now.Add(step) {
		clk.SetTime(now)
		// In a fixed order, so that the random sizes and run times fall the
		// same way each time: map order would make the trace differ per run.
		for _, key := range slices.Sorted(maps.Keys(run)) {
			if r := run[key]; !now.Before(r.ends) {
				delete(run, key)
				s.WorkloadGone(key)
			}
		}
		for _, lq := range slices.Sorted(maps.Keys(weights)) {
			for waiting[lq] < 20 { // a burst of work, as a team submits it
				n++
				cpu := 1 + rng.IntN(3)
				name := fmt.Sprintf("%s-%d", lq, n)
				sizes["default/"+name] = cpu
				s.WorkloadPending(MakeWorkload(name, "").PodSet("main", 1).Request("cpu", fmt.Sprint(cpu)).Created(now.Sub(start)).Obj(), "default/"+lq)
				waiting[lq]++
			}
		}
		for {
			admitted := 0
			for _, d := range s.Cycle() {
				if d.Admit == nil {
					continue
				}
				lq, _, _ := strings.Cut(strings.TrimPrefix(d.Workload.Key, "default/"), "-")
				run[d.Workload.Key] = running{lq: lq, cpu: sizes[d.Workload.Key], ends: now.Add(time.Duration(1+rng.IntN(10)) * time.Minute)}
				waiting[lq]--
				admitted++
			}
			if admitted == 0 {
				break
			}
		}
		if !now.Before(warm) {
			for _, r := range run {
				used[r.lq] += float64(r.cpu) * step.Seconds()
			}
		}
	}
	var total float64
	for lq := range weights {
		total += used[lq]
	}
	for lq := range used {
		used[lq] /= total
	}
	return used
}

// A LocalQueue that used more waits behind one that used less, whatever
// their workloads' age; an admission alone (its entry penalty) turns the
// order before any sample sees its usage.
func TestLessUsedLocalQueueGoesFirst(t *testing.T) {
	s, clk := fairQueue(t, "4", map[string]float64{"a": 1, "b": 1})
	s.WorkloadPending(MakeWorkload("a-1", "").PodSet("main", 1).Request("cpu", "1").Obj(), "default/a")
	s.WorkloadPending(MakeWorkload("a-2", "").PodSet("main", 1).Request("cpu", "1").Created(time.Second).Obj(), "default/a")
	s.WorkloadPending(MakeWorkload("b-1", "").PodSet("main", 1).Request("cpu", "1").Created(2*time.Second).Obj(), "default/b")
	var order []string
	for range 3 {
		for _, d := range s.Cycle() {
			if d.Admit != nil {
				order = append(order, d.Workload.Key)
			}
		}
	}
	if want := "default/a-1 default/b-1 default/a-2"; strings.Join(order, " ") != want {
		t.Fatalf("admitted %v; want %s: b-1 goes before a-2 once a-1 counts against a", order, want)
	}

	// Sampled, a's usage is in its status; a scheduler started afresh from
	// it puts b first, as this one does.
	clk.SetTime(clk.Now().Add(time.Minute))
	s.SampleShares()
	shA, scoreA, okA := s.Share("default/a")
	shB, scoreB, okB := s.Share("default/b")
	if !okA || !okB || shA.Consumed["cpu"] <= shB.Consumed["cpu"] || scoreA <= scoreB {
		t.Fatalf("shares a %+v (score %v) %v, b %+v (score %v) %v: want a's above b's", shA, scoreA, okA, shB, scoreB, okB)
	}
	fresh, _ := fairQueue(t, "4", map[string]float64{"a": 1, "b": 1})
	fresh.TakeUpShare("default/a", shA)
	fresh.TakeUpShare("default/b", shB)
	fresh.WorkloadPending(MakeWorkload("a-3", "").PodSet("main", 1).Request("cpu", "1").Obj(), "default/a")
	fresh.WorkloadPending(MakeWorkload("b-2", "").PodSet("main", 1).Request("cpu", "1").Created(time.Second).Obj(), "default/b")
	line, _ := fresh.Line("cq")
	queue.SortLine(line)
	if len(line) != 2 || line[0].Key != "default/b-2" {
		t.Fatalf("line after a restart %+v; want b-2 first", line)
	}
}

// Weight 0 puts a LocalQueue's work after every other's; a ClusterQueue
// that does not order by usage keeps priority and age alone.
func TestWeightZeroGoesLastAndUnfairQueuesIgnoreUsage(t *testing.T) {
	s, _ := fairQueue(t, "1", map[string]float64{"a": 0, "b": 1})
	s.WorkloadPending(MakeWorkload("a-1", "").PodSet("main", 1).Request("cpu", "1").Obj(), "default/a")
	s.WorkloadPending(MakeWorkload("b-1", "").PodSet("main", 1).Request("cpu", "1").Created(time.Hour).Obj(), "default/b")
	if d := admittedKeys(s.Cycle()); d != "default/b-1" {
		t.Fatalf("admitted %q; want b-1 before weight-0 a's older a-1", d)
	}

	s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj())
	if _, _, ok := s.Share("default/a"); ok {
		t.Fatal("a ClusterQueue that does not order by usage reports its LocalQueues' shares")
	}
	if d := admittedKeys(s.Cycle()); d != "default/a-1" {
		t.Fatalf("admitted %q; want a-1 by age alone once the ClusterQueue stops ordering by usage", d)
	}
}

func admittedKeys(ds []core.Decision) string {
	var out []string
	for _, d := range ds {
		if d.Admit != nil {
			out = append(out, d.Workload.Key)
		}
	}
	return strings.Join(out, " ")
}
