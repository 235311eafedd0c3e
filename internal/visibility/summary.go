package visibility

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/internal/queue"
)

// Summarize pages a ClusterQueue's line, sorted by queue.SortLine: every
// workload in it, or with localQueue (namespace/name) only those submitted
// through that LocalQueue. Positions count from 1 in the whole line, so a
// LocalQueue's view still says how many are ahead in the ClusterQueue.
func Summarize(cq string, line []queue.Waiting, localQueue string, offset, limit int) visibilityv1.PendingWorkloadsSummary {
	out := visibilityv1.PendingWorkloadsSummary{
		TypeMeta: metav1.TypeMeta{APIVersion: visibilityv1.GroupName + "/" + visibilityv1.Version, Kind: "PendingWorkloadsSummary"},
		Items:    []visibilityv1.PendingWorkload{},
	}
	perLQ := map[string]int32{}
	for i, w := range line {
		perLQ[w.LocalQueue]++
		if localQueue != "" && w.LocalQueue != localQueue {
			continue
		}
		n := int(out.Total)
		out.Total++
		if n < offset || n >= offset+limit {
			continue
		}
		ns, name, _ := strings.Cut(w.Workload.Key, "/")
		_, lq, _ := strings.Cut(w.LocalQueue, "/")
		item := visibilityv1.PendingWorkload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Priority:   w.Workload.Priority, Aged: w.Workload.Aged, QueuedAt: metav1.NewTime(w.Workload.Timestamp),
			LocalQueueName: lq, ClusterQueueName: cq,
			PositionInClusterQueue: int32(i + 1), PositionInLocalQueue: perLQ[w.LocalQueue],
		}
		if w.Pending != nil {
			item.Reason, item.Message = string(w.Pending.Reason), w.Pending.Message
		}
		out.Items = append(out.Items, item)
	}
	return out
}
