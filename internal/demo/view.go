package demo

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Row is one ClusterQueue in the view. Each of the demo's Jobs on it is
// counted once: pending, admitted or finished.
type Row struct {
	Queue                              string
	Pending, Admitted, Finished, Total int
	// Borrowed is the cpu the ClusterQueue borrows from its cohort.
	Borrowed resource.Quantity
}

// Summarize is the view of the demo's Jobs: one row per ClusterQueue that a
// Job's LocalQueue points at, in name order. A Job is finished once it
// completed or failed, admitted while its Workload is admitted, and pending
// otherwise (also before its Workload exists).
func Summarize(cqs []berthv1.ClusterQueue, lqs []berthv1.LocalQueue, jobs []batchv1.Job, wls []berthv1.Workload) []Row {
	cqOf := map[string]string{} // namespace/localqueue -> clusterqueue
	for _, lq := range lqs {
		cqOf[lq.Namespace+"/"+lq.Name] = string(lq.Spec.ClusterQueue)
	}
	admitted := map[types.UID]bool{} // by owning Job
	for _, wl := range wls {
		for _, ref := range wl.OwnerReferences {
			if ref.Kind == "Job" && meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadAdmitted) {
				admitted[ref.UID] = true
			}
		}
	}
	rows := map[string]*Row{}
	for _, j := range jobs {
		cq, ok := cqOf[j.Namespace+"/"+j.Labels[berthv1.QueueNameLabel]]
		if !ok {
			cq = "(no queue)"
		}
		r := rows[cq]
		if r == nil {
			r = &Row{Queue: cq}
			rows[cq] = r
		}
		r.Total++
		switch {
		case finished(&j):
			r.Finished++
		case admitted[j.UID]:
			r.Admitted++
		default:
			r.Pending++
		}
	}
	for _, cq := range cqs {
		if r, ok := rows[cq.Name]; ok {
			for _, f := range cq.Status.FlavorsUsage {
				for _, u := range f.Resources {
					if u.Name == corev1.ResourceCPU {
						r.Borrowed.Add(u.Borrowed)
					}
				}
			}
		}
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(a.Queue, b.Queue) })
	return out
}

// Done reports whether every Job in the view has finished.
func Done(rows []Row) bool {
	for _, r := range rows {
		if r.Finished < r.Total {
			return false
		}
	}
	return len(rows) > 0
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Render draws the view as a table, headed by the time since the Jobs were
// submitted.
func Render(rows []Row, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "after %s\n", elapsed.Round(time.Second))
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  QUEUE\tPENDING\tADMITTED\tFINISHED\tBORROWING")
	for _, r := range rows {
		borrowed := "-"
		if !r.Borrowed.IsZero() {
			borrowed = r.Borrowed.String() + " cpu"
		}
		fmt.Fprintf(w, "  %s\t%d\t%d\t%d of %d\t%s\n", r.Queue, r.Pending, r.Admitted, r.Finished, r.Total, borrowed)
	}
	_ = w.Flush()
	return b.String()
}
