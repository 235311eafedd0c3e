package whatif

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Recording is a trace learnt from a cluster's Workloads, and what was
// left out of it and why.
type Recording struct {
	Start     time.Time
	Workloads []Workload
	// Nodes, when the cluster places by topology (NodesOf).
	Nodes []Node
	// Skipped counts the Workloads left out, by why.
	Skipped map[string]int
}

// Reasons a Workload is left out of a recording.
const (
	SkipNotFinished = "not finished yet (pending or running)"
	SkipNeverRan    = "finished without being admitted (failed or deactivated while waiting)"
	SkipNoQueue     = "no LocalQueue (spec.queueName empty)"
	SkipBefore      = "created before --since"
	SkipNoPods      = "asks for no pods"
)

// ran is what a recording reads of one workload, whichever API it came
// from: nil times for conditions it does not have (True).
type ran struct {
	name, namespace, queue string
	priority               int32
	created                time.Time
	admitted, finished     *time.Time
	evicted                int32 // times, as its status counts them
	podSets                []PodSet
	problem                string // why it cannot be read, "" when it can
}

// FromWorkloads records berth's Workloads created at or after since (all
// when since is zero) that ran to their end: each arrives when it was
// created, runs from its last admission to its end, in its LocalQueue, at
// its priority, asking for its pod sets. Names are replaced by w0, w1, ...
// in order of arrival unless keepNames: a trace needs no more than a
// workload's namespace, which its LocalQueue lives in.
func FromWorkloads(wls []berthv1.Workload, since time.Time, keepNames bool) Recording {
	runs := make([]ran, 0, len(wls))
	for i := range wls {
		w := &wls[i]
		r := ran{name: w.Name, namespace: w.Namespace, queue: w.Spec.QueueName, created: w.CreationTimestamp.Time,
			admitted: trueSince(w.Status.Conditions, berthv1.WorkloadAdmitted), finished: trueSince(w.Status.Conditions, berthv1.WorkloadFinished)}
		if w.Spec.Priority != nil {
			r.priority = *w.Spec.Priority
		}
		if rs := w.Status.RequeueState; rs != nil && rs.Count != nil {
			r.evicted = *rs.Count
		}
		for _, ps := range w.Spec.PodSets {
			req := map[string]string{}
			for _, name := range slices.Sorted(maps.Keys(ps.Requests)) {
				q := ps.Requests[name]
				req[string(name)] = q.String()
			}
			for name, q := range devicesOf(w, ps) {
				req[string(name)] = q.String()
			}
			r.podSets = append(r.podSets, PodSet{Name: ps.Name, Count: ps.Count, Requests: req, Topology: ps.TopologyRequest.DeepCopy()})
		}
		runs = append(runs, r)
	}
	return record(runs, since, keepNames)
}

// NodesOf records a cluster's nodes for topology-aware placement: their
// names, labels, allocatable, taints and whether they are cordoned.
func NodesOf(nodes []corev1.Node) []Node {
	out := make([]Node, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		alloc := make(map[string]string, len(n.Status.Allocatable))
		for r, q := range n.Status.Allocatable {
			alloc[string(r)] = q.String()
		}
		out = append(out, Node{Name: n.Name, Labels: maps.Clone(n.Labels), Allocatable: alloc,
			Taints: slices.Clone(n.Spec.Taints), Unschedulable: n.Spec.Unschedulable})
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// devicesOf is what one pod of ps was counted for beyond its spec's
// requests (devices claimed through DRA): read from the admission, per pod.
func devicesOf(w *berthv1.Workload, ps berthv1.PodSet) corev1.ResourceList {
	out := corev1.ResourceList{}
	if a := w.Status.Admission; a != nil {
		for _, psa := range a.PodSetAssignments {
			if psa.Name != ps.Name || psa.Count <= 0 {
				continue
			}
			for name, used := range psa.ResourceUsage {
				if _, inSpec := ps.Requests[name]; !inSpec {
					out[name] = *resource.NewMilliQuantity(used.MilliValue()/int64(psa.Count), used.Format)
				}
			}
		}
	}
	return out
}

// trueSince is when a condition last became True, nil when it is not.
func trueSince(conds []metav1.Condition, typ string) *time.Time {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	t := c.LastTransitionTime.Time
	return &t
}

func record(runs []ran, since time.Time, keepNames bool) Recording {
	rec := Recording{Skipped: map[string]int{}}
	var kept []ran
	for _, r := range runs {
		switch {
		case r.problem != "":
			rec.Skipped[r.problem]++
		case !since.IsZero() && r.created.Before(since):
			rec.Skipped[SkipBefore]++
		case r.queue == "":
			rec.Skipped[SkipNoQueue]++
		case !slices.ContainsFunc(r.podSets, func(ps PodSet) bool { return ps.Count > 0 }):
			rec.Skipped[SkipNoPods]++
		case r.finished == nil:
			rec.Skipped[SkipNotFinished]++
		case r.admitted == nil || r.admitted.After(*r.finished):
			rec.Skipped[SkipNeverRan]++
		default:
			kept = append(kept, r)
		}
	}
	slices.SortStableFunc(kept, func(a, b ran) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.namespace+"/"+a.name, b.namespace+"/"+b.name)
	})
	rec.Start = since
	if since.IsZero() && len(kept) > 0 {
		rec.Start = kept[0].created
	}
	for i, r := range kept {
		// A clock behind the API server's, or conditions copied from another
		// object, can date an admission before the creation: it is taken as
		// admitted on arrival.
		arrival, admitted := seconds(r.created.Sub(rec.Start)), seconds(r.admitted.Sub(rec.Start))
		admitted = max(admitted, arrival)
		out := Workload{Name: r.name, Namespace: r.namespace, LocalQueue: r.queue, Priority: r.priority,
			Arrival: arrival, Run: seconds(r.finished.Sub(*r.admitted)), Admitted: &admitted, Evicted: r.evicted}
		if !keepNames {
			out.Name = fmt.Sprintf("w%d", i)
		}
		for _, ps := range r.podSets {
			if ps.Count > 0 {
				out.PodSets = append(out.PodSets, ps)
			}
		}
		rec.Workloads = append(rec.Workloads, out)
	}
	return rec
}

// seconds to the millisecond.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
