package whatif

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Recording is a trace learnt from a cluster's Workloads, and what was
// left out of it and why.
type Recording struct {
	Start     time.Time
	Workloads []Workload
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

// FromWorkloads records the Workloads created at or after since (all when
// since is zero) that ran to their end: each arrives when it was created,
// runs from its last admission to its end, in its LocalQueue, at its
// priority, asking for its pod sets. Names are replaced by w0, w1, ...
// in order of arrival unless keepNames: a trace needs no more than a
// workload's namespace, which its LocalQueue lives in.
func FromWorkloads(wls []berthv1.Workload, since time.Time, keepNames bool) Recording {
	rec := Recording{Skipped: map[string]int{}}
	var kept []*berthv1.Workload
	for i := range wls {
		w := &wls[i]
		finished := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadFinished)
		admitted := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadAdmitted)
		switch {
		case !since.IsZero() && w.CreationTimestamp.Time.Before(since):
			rec.Skipped[SkipBefore]++
		case w.Spec.QueueName == "":
			rec.Skipped[SkipNoQueue]++
		case !slices.ContainsFunc(w.Spec.PodSets, func(ps berthv1.PodSet) bool { return ps.Count > 0 }):
			rec.Skipped[SkipNoPods]++
		case finished == nil || finished.Status != metav1.ConditionTrue:
			rec.Skipped[SkipNotFinished]++
		case admitted == nil || admitted.Status != metav1.ConditionTrue || admitted.LastTransitionTime.After(finished.LastTransitionTime.Time):
			rec.Skipped[SkipNeverRan]++
		default:
			kept = append(kept, w)
		}
	}
	slices.SortStableFunc(kept, func(a, b *berthv1.Workload) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return compareKeys(a, b)
	})
	if len(kept) == 0 {
		rec.Start = since
		return rec
	}
	rec.Start = kept[0].CreationTimestamp.Time
	if !since.IsZero() {
		rec.Start = since
	}
	for i, w := range kept {
		finished := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadFinished)
		admitted := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadAdmitted)
		out := Workload{Name: w.Name, Namespace: w.Namespace, LocalQueue: w.Spec.QueueName,
			Arrival: seconds(w.CreationTimestamp.Sub(rec.Start)),
			Run:     seconds(finished.LastTransitionTime.Sub(admitted.LastTransitionTime.Time))}
		if !keepNames {
			out.Name = fmt.Sprintf("w%d", i)
		}
		if w.Spec.Priority != nil {
			out.Priority = *w.Spec.Priority
		}
		for _, ps := range w.Spec.PodSets {
			if ps.Count < 1 {
				continue
			}
			req := map[string]string{}
			for _, r := range slices.Sorted(maps.Keys(ps.Requests)) {
				q := ps.Requests[r]
				req[string(r)] = q.String()
			}
			out.PodSets = append(out.PodSets, PodSet{Name: ps.Name, Count: ps.Count, Requests: req})
		}
		rec.Workloads = append(rec.Workloads, out)
	}
	return rec
}

func compareKeys(a, b *berthv1.Workload) int {
	switch ka, kb := a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name; {
	case ka < kb:
		return -1
	case ka > kb:
		return 1
	}
	return 0
}

// seconds to the millisecond.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
