package visibility

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/internal/queue"
)

// Summarize pages a ClusterQueue's line, given in any order (it reorders
// it): every workload in it, or with localQueue (namespace/name) only those
// submitted through that LocalQueue. Positions count from 1 in the whole
// line, so a LocalQueue's view still says how many are ahead in the
// ClusterQueue. Only what the page needs is put in order: the first
// offset+limit of a ClusterQueue, a LocalQueue's own workloads.
func Summarize(cq string, line []queue.Waiting, localQueue string, offset, limit int) visibilityv1.PendingWorkloadsSummary {
	// No page reaches past the line, so neither offset+limit nor a position
	// can overflow, whatever a caller passes.
	offset, limit = min(max(offset, 0), len(line)), min(max(limit, 0), len(line))
	out := visibilityv1.PendingWorkloadsSummary{
		TypeMeta: metav1.TypeMeta{APIVersion: visibilityv1.GroupName + "/" + visibilityv1.Version, Kind: "PendingWorkloadsSummary"},
		Items:    []visibilityv1.PendingWorkload{},
	}
	if localQueue == "" {
		out.Total = int32(len(line))
		first := queue.FirstInLine(line, offset+limit)
		perLQ := map[string]int32{}
		for i := range first {
			perLQ[first[i].LocalQueue]++
			if i >= offset {
				out.Items = append(out.Items, item(cq, &first[i], int32(i+1), perLQ[first[i].LocalQueue]))
			}
		}
		return out
	}

	var mine []queue.Waiting
	for i := range line {
		if line[i].LocalQueue == localQueue {
			mine = append(mine, line[i])
		}
	}
	out.Total = int32(len(mine))
	if offset >= len(mine) {
		return out
	}
	queue.SortLine(mine)
	// ahead[j] counts the others that go before mine[j] but not mine[j-1]:
	// each finds its place among mine by binary search.
	ahead := make([]int32, len(mine)+1)
	for i := range line {
		if x := &line[i]; x.LocalQueue != localQueue {
			ahead[sort.Search(len(mine), func(j int) bool { return queue.InLine(x, &mine[j]) })]++
		}
	}
	var others int32
	for j := range mine[:min(len(mine), offset+limit)] {
		others += ahead[j]
		if j >= offset {
			out.Items = append(out.Items, item(cq, &mine[j], others+int32(j+1), int32(j+1)))
		}
	}
	return out
}

func item(cq string, w *queue.Waiting, inCQ, inLQ int32) visibilityv1.PendingWorkload {
	ns, name, _ := strings.Cut(w.Key, "/")
	_, lq, _ := strings.Cut(w.LocalQueue, "/")
	it := visibilityv1.PendingWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Priority:   w.Priority, Aged: w.Aged, QueuedAt: metav1.NewTime(w.Timestamp),
		LocalQueueName: lq, ClusterQueueName: cq,
		PositionInClusterQueue: inCQ, PositionInLocalQueue: inLQ,
	}
	if w.Pending != nil {
		it.Reason, it.Message = string(w.Pending.Reason), w.Pending.Message
	}
	return it
}
