package core_test

import (
	"fmt"
	"testing"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/topology"
)

// BenchmarkTopologyCycle is one admission cycle whose 100 heads (one per
// ClusterQueue) are gangs of 8 to 64 pods of 1 cpu that require or prefer a
// rack, on a flavor of 10,000 nodes of 8 cpu (20 blocks of 20 racks of 25
// hosts): quota, ordering, the flavor's tree built once, and 100 placements,
// each taken before the next.
func BenchmarkTopologyCycle(b *testing.B) {
	nodes := Nodes("tas", 20, 20, 25, "8")
	var heads []*core.Workload
	for i := range 100 {
		mode := topology.Required
		if i%2 == 1 {
			mode = topology.Preferred
		}
		heads = append(heads, MakeWorkload(fmt.Sprintf("w%d", i), fmt.Sprintf("cq%d", i)).
			PodSet("main", int32(8<<(i%4))).Request("cpu", "1").Topology(mode, RackLabel).Obj())
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := core.NewCluster()
		c.SetTopology("dc", []string{BlockLabel, RackLabel, HostLabel})
		c.SetFlavor(MakeFlavor("tas").Label("pool", "tas").Topology("dc").Obj())
		for i := range 100 {
			c.SetClusterQueue(MakeClusterQueue(fmt.Sprintf("cq%d", i)).
				ResourceGroup(MakeFlavorQuotas("tas").Resource("cpu", "100").Obj()).Obj())
		}
		for _, n := range nodes {
			c.SetNode(n)
		}
		b.StartTimer()
		ds := c.Cycle(heads, Epoch)
		b.StopTimer()
		for _, d := range ds {
			if d.Admit == nil {
				b.Fatalf("not admitted:\n%s", Describe(ds))
			}
		}
		b.StartTimer()
	}
}
