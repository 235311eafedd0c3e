package visibility

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
)

// waiting is a line entry: key namespace/name, from LocalQueue lq.
func waiting(key, lq string, priority int32, created time.Duration) queue.Waiting {
	return queue.Waiting{Key: key, LocalQueue: lq, Priority: priority, Timestamp: Epoch.Add(created)}
}

func TestSummarizeCountsPositionsInTheWholeLine(t *testing.T) {
	line := []queue.Waiting{
		waiting("a/urgent", "a/lq", 9, 0),
		waiting("b/first", "b/lq", 1, 0),
		waiting("a/second", "a/lq", 1, time.Minute),
		waiting("b/third", "b/lq", 1, time.Hour),
	}
	line[1].Pending = &core.Pending{Reason: core.NoFit, Message: "needs 4 cpu, 2 free"}
	queue.SortLine(line)

	all := Summarize("cq", line, "", 0, 10)
	if all.Total != 4 || len(all.Items) != 4 {
		t.Fatalf("total %d, %d items; want 4 and 4", all.Total, len(all.Items))
	}
	want := []string{"a/urgent 1 1", "b/first 2 1", "a/second 3 2", "b/third 4 2"}
	for i, it := range all.Items {
		if got := fmt.Sprintf("%s/%s %d %d", it.Namespace, it.Name, it.PositionInClusterQueue, it.PositionInLocalQueue); got != want[i] {
			t.Errorf("item %d: %s, want %s", i, got, want[i])
		}
	}
	if it := all.Items[1]; it.Reason != string(core.NoFit) || it.Message == "" || it.LocalQueueName != "lq" || it.ClusterQueueName != "cq" {
		t.Errorf("b/first: %+v", it)
	}

	// A LocalQueue's view keeps the ClusterQueue positions.
	b := Summarize("cq", line, "b/lq", 0, 10)
	if b.Total != 2 || len(b.Items) != 2 || b.Items[0].PositionInClusterQueue != 2 || b.Items[1].PositionInClusterQueue != 4 ||
		b.Items[1].PositionInLocalQueue != 2 {
		t.Errorf("b/lq view: %+v", b)
	}
}

func TestSummarizePages(t *testing.T) {
	var line []queue.Waiting
	for i := range 10 {
		line = append(line, waiting(fmt.Sprintf("ns/w%d", i), "ns/lq", 0, time.Duration(i)*time.Second))
	}
	queue.SortLine(line)
	p := Summarize("cq", line, "", 8, 5)
	if p.Total != 10 || len(p.Items) != 2 || p.Items[0].Name != "w8" || p.Items[0].PositionInClusterQueue != 9 {
		t.Errorf("offset 8 limit 5: total %d, items %+v", p.Total, p.Items)
	}
	if p := Summarize("cq", line, "", 20, 5); p.Total != 10 || len(p.Items) != 0 {
		t.Errorf("past the end: total %d, %d items", p.Total, len(p.Items))
	}
	if p := Summarize("cq", nil, "", 0, 5); p.Items == nil {
		t.Error("an empty line gives null items; clients expect a list")
	}
}

// reference is Summarize the plain way: the whole line sorted, counted
// from the front.
func reference(line []queue.Waiting, localQueue string, offset, limit int) []string {
	sorted := slices.Clone(line)
	queue.SortLine(sorted)
	perLQ := map[string]int{}
	var out []string
	n := 0
	for i, w := range sorted {
		perLQ[w.LocalQueue]++
		if localQueue != "" && w.LocalQueue != localQueue {
			continue
		}
		if n >= offset && n < offset+limit {
			out = append(out, fmt.Sprintf("%s %d %d", w.Key, i+1, perLQ[w.LocalQueue]))
		}
		n++
	}
	return out
}

// Summarize orders only what a page needs; its answers are those of
// sorting the whole line, for any line, queue, offset and limit.
func TestSummarizeAgreesWithSortingEverything(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 300 {
		n := rng.IntN(300)
		var line []queue.Waiting
		for i := range n {
			w := waiting(fmt.Sprintf("ns/w%03d", i), fmt.Sprintf("ns/lq%d", rng.IntN(4)), rng.Int32N(3),
				time.Duration(rng.IntN(4))*time.Second)
			w.Aged = rng.Int32N(2)
			w.Nominated = rng.IntN(40) == 0
			line = append(line, w)
		}
		lq := ""
		if rng.IntN(2) == 0 {
			lq = fmt.Sprintf("ns/lq%d", rng.IntN(4))
		}
		offset, limit := rng.IntN(n+5), 1+rng.IntN(n+5)
		want := reference(line, lq, offset, limit)
		got := Summarize("cq", slices.Clone(line), lq, offset, limit)
		var have []string
		for _, it := range got.Items {
			have = append(have, fmt.Sprintf("%s/%s %d %d", it.Namespace, it.Name, it.PositionInClusterQueue, it.PositionInLocalQueue))
		}
		if !slices.Equal(have, want) {
			t.Fatalf("round %d (n=%d lq=%q offset=%d limit=%d):\n got %v\nwant %v", round, n, lq, offset, limit, have, want)
		}
	}
}
