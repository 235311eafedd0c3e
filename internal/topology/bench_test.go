package topology

import (
	"fmt"
	"testing"
)

// BenchmarkPlace places a 256-pod gang (1 cpu each, a block required, on
// hosts of 8 cpu) on trees of 1,000 to 40,000 nodes in 3 levels: blocks of
// 20 racks of 25 hosts. The cost should grow no faster than the node count.
func BenchmarkPlace(b *testing.B) {
	for _, blocks := range []int{2, 20, 80} {
		nodes := makeNodes(blocks, 20, 25, 8)
		b.Run(fmt.Sprintf("nodes=%d", len(nodes)), func(b *testing.B) {
			tr := build(b, nodes)
			ps := gang(256, 1)
			req := Request{Mode: Required, Level: blockLabel}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.Place(ps, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCycle is what one admission cycle of 100 pending topology-aware
// gangs costs the placer on 10,000 nodes: 100 placements of 8 to 64 pods
// (a rack required, or a rack preferred), each taken before the next.
func BenchmarkCycle(b *testing.B) {
	nodes := makeNodes(20, 20, 25, 8)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		fresh := make([]Node, len(nodes))
		for i, n := range nodes {
			n.Free = map[string]int64{"cpu": 8000, PodsResource: 110_000}
			fresh[i] = n
		}
		tr := build(b, fresh)
		b.StartTimer()
		for i := range 100 {
			ps := gang(int32(8<<(i%4)), 1)
			req := Request{Mode: Required, Level: rackLabel}
			if i%2 == 1 {
				req.Mode = Preferred
			}
			a, err := tr.Place(ps, req)
			if err != nil {
				b.Fatal(err)
			}
			tr.Take(a, ps)
		}
	}
}
