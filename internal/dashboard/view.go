package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/workload"
)

// States of a workload as the dashboard lists them.
const (
	Pending  = "pending"
	Admitted = "admitted"
)

// Row is one workload in a ClusterQueue's list.
type Row struct {
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	LocalQueue string    `json:"localQueue"`
	Priority   int32     `json:"priority"`
	Created    time.Time `json:"created"`
	// Position is its place in the list, from 1.
	Position int `json:"position"`
	// Why says in words why a pending workload waits (its QuotaReserved
	// condition), or since when an admitted one holds quota.
	Why string `json:"why"`
}

// Page is one page of a ClusterQueue's workloads in one state.
type Page struct {
	ClusterQueue string `json:"clusterQueue"`
	// LocalQueue, when set, is the one LocalQueue ("namespace/name") whose
	// workloads the page holds, at their places in the ClusterQueue's list.
	LocalQueue string `json:"localQueue,omitempty"`
	State      string `json:"state"`
	Total      int    `json:"total"`
	Offset     int    `json:"offset"`
	Rows       []Row  `json:"rows"`
	// LocalQueues are those that point at the ClusterQueue, to choose from.
	LocalQueues []string `json:"localQueues"`
}

// MaxLimit is the most rows a page holds.
const MaxLimit = 500

// Workloads is the page of cq's workloads in state (Pending or Admitted)
// from offset, at most limit rows: pending ones in the order the queue
// takes them when nothing else decides (a preemptor waiting for its
// victims first, then the less-used LocalQueue where the ClusterQueue
// orders by usage, then higher priority, aging included, then the older in
// line: queue.InLine, as `berth why` counts positions), admitted ones
// oldest admission first. localQueues maps "namespace/name" of each
// LocalQueue to its ClusterQueue: a pending workload is listed under the
// ClusterQueue its LocalQueue points at. With localQueue ("namespace/name";
// "" for all), the page holds only that LocalQueue's workloads, each with
// its position in the ClusterQueue's whole list. aging is the
// ClusterQueue's, at now; scores, when it orders by LocalQueue usage, each
// LocalQueue's as its status says (queues.ScoreOf), nil otherwise.
func Workloads(wls []*berthv1.Workload, localQueues map[string]string, cq, localQueue, state string, offset, limit int, aging *core.Aging, scores map[string]float64, now time.Time) (Page, error) {
	if state != Pending && state != Admitted {
		return Page{}, fmt.Errorf("state %q: want %s or %s", state, Pending, Admitted)
	}
	if offset < 0 || limit < 1 || limit > MaxLimit {
		return Page{}, fmt.Errorf("offset %d, limit %d: want offset 0 or more and limit 1 to %d", offset, limit, MaxLimit)
	}
	type item struct {
		wl    *berthv1.Workload
		since time.Time
		line  queue.Waiting // of a pending one
	}
	var items []item
	for _, wl := range wls {
		if workload.IsFinished(wl) {
			continue
		}
		switch {
		case state == Admitted && workload.HasQuota(wl) && wl.Status.Admission.ClusterQueue == cq:
			var since time.Time
			if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved); c != nil {
				since = c.LastTransitionTime.Time
			}
			items = append(items, item{wl: wl, since: since})
		case state == Pending && !workload.HasQuota(wl) && localQueues[workload.LocalQueueKey(wl)] == cq:
			line := queue.WaitingOf(workload.ToCore(wl, nil), workload.LocalQueueKey(wl), aging, now)
			line.Score = scores[line.LocalQueue]
			items = append(items, item{wl: wl, line: line})
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		if state == Pending {
			switch {
			case queue.InLine(&a.line, &b.line):
				return -1
			case queue.InLine(&b.line, &a.line):
				return 1
			}
			return 0
		}
		if c := a.since.Compare(b.since); c != 0 {
			return c
		}
		return cmp.Compare(workload.Key(a.wl), workload.Key(b.wl))
	})
	// Positions are counted in the whole list, then one LocalQueue's kept.
	var at []int
	for i := range items {
		if localQueue == "" || workload.LocalQueueKey(items[i].wl) == localQueue {
			at = append(at, i)
		}
	}
	p := Page{ClusterQueue: cq, LocalQueue: localQueue, State: state, Total: len(at), Offset: offset, Rows: []Row{}, LocalQueues: []string{}}
	for key, to := range localQueues {
		if to == cq {
			p.LocalQueues = append(p.LocalQueues, key)
		}
	}
	slices.Sort(p.LocalQueues)
	for j := offset; j < len(at) && j < offset+limit; j++ {
		i := at[j]
		wl := items[i].wl
		r := Row{Namespace: wl.Namespace, Name: wl.Name, LocalQueue: wl.Spec.QueueName, Priority: priority(wl),
			Created: wl.CreationTimestamp.Time, Position: i + 1}
		c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved)
		switch {
		case state == Admitted:
			r.Why = "admitted"
			if c != nil {
				r.Why = "holds quota since " + c.LastTransitionTime.UTC().Format(time.RFC3339)
			}
		case c != nil && c.Message != "":
			r.Why = c.Message
		default:
			r.Why = "waiting for its turn"
		}
		p.Rows = append(p.Rows, r)
	}
	return p, nil
}

func priority(wl *berthv1.Workload) int32 {
	if wl.Spec.Priority == nil {
		return 0
	}
	return *wl.Spec.Priority
}
