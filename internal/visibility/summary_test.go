package visibility

import (
	"fmt"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
)

// waiting is a line entry: key namespace/name, from LocalQueue lq.
func waiting(key, lq string, priority int32, created time.Duration) queue.Waiting {
	w := MakeWorkload("", "cq").Priority(priority).Created(created).Obj()
	w.Key = key
	return queue.Waiting{Workload: *w, LocalQueue: lq}
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
