package core_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

// BenchmarkPreemption measures one cycle whose only head must preempt: a
// cohort of 50 ClusterQueues of 20 cpu each, full with 1,000 admitted
// workloads of 1 cpu (mixed priorities, 21 in most queues, so they borrow),
// and an empty queue reclaiming 10 cpu. The victims' marks and the hold are
// undone outside the timer so every iteration searches the same state.
func BenchmarkPreemption(b *testing.B) {
	for _, fair := range []bool{false, true} {
		b.Run(fmt.Sprintf("fair=%v", fair), func(b *testing.B) {
			c := core.NewCluster()
			c.SetFairSharing(fair)
			c.SetFlavor(MakeFlavor("f").Obj())
			for i := range 50 {
				c.SetClusterQueue(MakeClusterQueue(fmt.Sprintf("cq-%d", i)).Cohort("co").
					Preemption(core.PreemptLowerPriority, core.PreemptAny).
					ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "20").Obj()).Obj())
			}
			for i := range 1000 {
				cq := fmt.Sprintf("cq-%d", 1+i%49)
				c.AddAdmitted(Running(fmt.Sprintf("w-%d", i), cq).Priority(int32(i%5)).
					AdmittedAt(time.Duration(i)*time.Second).Use("f", "cpu", "1").Obj())
			}
			head := &core.Workload{Key: "default/reclaimer", ClusterQueue: "cq-0", NamespaceLabels: labels.Set{},
				Priority: 3, Timestamp: Epoch,
				PodSets: []core.PodSet{{Name: "main", Count: 10, Requests: map[string]int64{"cpu": 1000}}}}
			victims := 0
			b.ReportAllocs()
			for b.Loop() {
				d := c.Cycle([]*core.Workload{head}, Epoch)[0]
				b.StopTimer()
				if len(d.Preempt) == 0 {
					b.Fatalf("no preemption: %+v", d.Pending)
				}
				victims = len(d.Preempt)
				for _, v := range d.Preempt {
					c.UnmarkEvicting(v.Key)
				}
				c.ReleaseHold(head.Key)
				b.StartTimer()
			}
			b.ReportMetric(float64(victims), "victims")
		})
	}
}
