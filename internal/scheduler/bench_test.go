package scheduler

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
)

// BenchmarkCycle measures one scheduling cycle (heads of every ClusterQueue,
// flavor assignment, ordering, admission, requeue) with 1,000 ClusterQueues in
// 10 cohorts, each with 20 cpu of nominal quota and a borrowing limit of 100,
// half used, and pending workloads of 1, 5 and 20 cpu as in the baseline
// scenario. Each iteration's admissions are undone outside the timer so every
// cycle starts from the same state. ns/decision is the figure to watch; it
// should grow no faster than log(pending).
func BenchmarkCycle(b *testing.B) {
	for _, pending := range []int{5_000, 50_000, 500_000} {
		b.Run(fmt.Sprintf("cqs=1000/pending=%d", pending), func(b *testing.B) {
			s := benchScheduler(1000, 10, pending)
			decisions, admitted := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ds := s.Cycle()
				b.StopTimer()
				decisions += len(ds)
				for _, d := range ds {
					if d.Admit != nil {
						admitted++
						s.Undo(d.Workload.Key)
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(decisions), "ns/decision")
			b.ReportMetric(float64(decisions)/float64(b.N), "decisions/cycle")
			b.ReportMetric(float64(admitted)/float64(b.N), "admitted/cycle")
		})
	}
}

func benchScheduler(nCQ, nCohorts, pending int) *Scheduler {
	s := New(clock.RealClock{})
	s.SetFlavor(core.Flavor{Name: "default"})
	borrow := int64(100_000)
	for i := range nCQ {
		name := fmt.Sprintf("cq-%d", i)
		s.SetClusterQueue(core.ClusterQueue{
			Name: name, Cohort: fmt.Sprintf("cohort-%d", i%nCohorts), Strategy: core.BestEffortFIFO,
			NamespaceSelector: labels.Everything(),
			ResourceGroups: []core.ResourceGroup{{Resources: []string{"cpu"}, Flavors: []core.FlavorQuotas{
				{Name: "default", Quotas: map[string]core.Quota{"cpu": {Nominal: 20_000, BorrowingLimit: &borrow}}}}}},
		})
		s.SetLocalQueue(queue.LocalQueue{Key: "ns/" + name, ClusterQueue: name})
		// Half the nominal quota is in use.
		s.WorkloadAdmitted(core.Admitted{Key: fmt.Sprintf("ns/running-%d", i), ClusterQueue: name,
			Usage: core.Usage{{Flavor: "default", Resource: "cpu"}: 10_000}}, "ns/"+name)
	}
	sizes := []struct {
		cpu      int64
		priority int32
	}{{1_000, 50}, {5_000, 100}, {20_000, 200}}
	start := time.Unix(0, 0)
	for i := range pending {
		cq := fmt.Sprintf("cq-%d", i%nCQ)
		sz := sizes[i%3]
		s.WorkloadPending(&core.Workload{
			Key: fmt.Sprintf("ns/w-%d", i), Priority: sz.priority, Timestamp: start.Add(time.Duration(i) * time.Millisecond),
			NamespaceLabels: labels.Set{},
			PodSets:         []core.PodSet{{Name: "main", Count: 1, Requests: map[string]int64{"cpu": sz.cpu}}},
		}, "ns/"+cq)
	}
	return s
}
