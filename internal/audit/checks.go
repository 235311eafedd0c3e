package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Snapshot is what the API server stores at one moment.
type Snapshot struct {
	At            time.Time
	ClusterQueues []*berthv1.ClusterQueue
	Cohorts       []*berthv1.Cohort
	Workloads     []*berthv1.Workload
	Jobs          []*batchv1.Job
	Pods          []*corev1.Pod
}

// Violation is a broken promise, with the objects involved and when it was
// seen.
type Violation struct {
	At      time.Time
	Rule    string
	Objects []string
	Message string
}

// key tells one violation from another: its rule and objects, whatever
// their order.
func (v Violation) key() string {
	objs := slices.Clone(v.Objects)
	slices.Sort(objs)
	return v.Rule + " " + strings.Join(objs, ",")
}

// queuesKey is key with only the queues and cohorts among its objects.
func (v Violation) queuesKey() string {
	var objs []string
	for _, o := range v.Objects {
		if strings.HasPrefix(o, "ClusterQueue ") || strings.HasPrefix(o, "cohort ") {
			objs = append(objs, o)
		}
	}
	slices.Sort(objs)
	return v.Rule + " " + strings.Join(objs, ",")
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s [%s]: %s", v.At.Format(time.RFC3339Nano), v.Rule, strings.Join(v.Objects, ", "), v.Message)
}

// Rules, as Violation.Rule.
const (
	OverQuota         = "OverQuota"         // a ClusterQueue above nominal plus borrowing limit
	OverCohort        = "OverCohort"        // a cohort tree above what it has
	AdmittedTwice     = "AdmittedTwice"     // a new admission before the last was released
	RunsWithoutQuota  = "RunsWithoutQuota"  // a queued Job or Pod running without an admission (quota and every check)
	NotSettled        = "NotSettled"        // a workload neither ended nor waiting with a reason
	FinalizerLeft     = "FinalizerLeft"     // a deleted object still held by berth
	StatusUsageDiffer = "StatusUsageDiffer" // ClusterQueue status usage is not its workloads' sum
)

// inUseFinalizer is berth's finalizer on queues and flavors in use
// (package queues); written out here so the auditor shares no code with
// what it checks.
const inUseFinalizer = "berth.dev/resource-in-use"

// podsGoneFinalizer holds a Workload's quota until its pods are gone
// (package podsgone); written out here for the same reason.
const podsGoneFinalizer = "berth.dev/pods-gone"

// fr is a flavor and resource.
type fr struct{ flavor, resource string }

// holdsQuota: admitted (or reserving) and not finished.
func holdsQuota(w *berthv1.Workload) bool {
	return w.Status.Admission != nil && !meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadFinished)
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// usageByQueue sums the admitted workloads' usage per ClusterQueue, in
// milli-units, and lists them.
func usageByQueue(s Snapshot) (map[string]map[fr]int64, map[string][]string) {
	usage, who := map[string]map[fr]int64{}, map[string][]string{}
	for _, w := range s.Workloads {
		if !holdsQuota(w) {
			continue
		}
		cq := w.Status.Admission.ClusterQueue
		if usage[cq] == nil {
			usage[cq] = map[fr]int64{}
		}
		for _, psa := range w.Status.Admission.PodSetAssignments {
			for r, q := range psa.ResourceUsage {
				usage[cq][fr{psa.Flavors[r], string(r)}] += q.MilliValue()
			}
		}
		who[cq] = append(who[cq], key(w.Namespace, w.Name))
	}
	return usage, who
}

// Quota checks every ClusterQueue and cohort tree against its quota:
//   - a queue uses at most its nominal quota, plus its borrowing limit when
//     it has a cohort (with none it borrows nothing);
//   - in a cohort tree, what queues use beyond the part of their quota they
//     may not lend comes out of what the tree can lend: each queue's lending
//     limit (its whole nominal quota without one) plus the cohorts' own quota.
func Quota(s Snapshot) []Violation {
	usage, who := usageByQueue(s)
	var out []Violation
	parent := map[string]string{}
	own := map[string]map[fr]int64{}
	for _, co := range s.Cohorts {
		parent[co.Name] = co.Spec.Parent
		own[co.Name] = quotas(co.Spec.ResourceGroups)
	}
	root := func(c string) string {
		for seen := 0; parent[c] != "" && seen < 64; seen++ {
			c = parent[c]
		}
		return c
	}
	type pool struct {
		lendable, beyond map[fr]int64
		queues           []string
	}
	trees := map[string]*pool{}
	for _, cq := range s.ClusterQueues {
		u := usage[cq.Name]
		for _, rg := range cq.Spec.ResourceGroups {
			for _, f := range rg.Flavors {
				for _, rq := range f.Resources {
					k := fr{f.Name, string(rq.Name)}
					nominal, used := rq.NominalQuota.MilliValue(), u[k]
					limit := nominal
					if cq.Spec.Cohort != "" && rq.BorrowingLimit != nil {
						limit += rq.BorrowingLimit.MilliValue()
					} else if cq.Spec.Cohort != "" {
						limit = -1 // no limit of its own: the tree's check bounds it
					}
					if limit >= 0 && used > limit {
						out = append(out, Violation{At: s.At, Rule: OverQuota, Objects: append([]string{"ClusterQueue " + cq.Name}, who[cq.Name]...),
							Message: fmt.Sprintf("%s %s: %d milli used, at most %d allowed", f.Name, rq.Name, used, limit)})
					}
					if cq.Spec.Cohort == "" {
						continue
					}
					r := root(cq.Spec.Cohort)
					if trees[r] == nil {
						trees[r] = &pool{lendable: map[fr]int64{}, beyond: map[fr]int64{}}
					}
					t := trees[r]
					lend := nominal
					if rq.LendingLimit != nil {
						lend = min(nominal, rq.LendingLimit.MilliValue())
					}
					t.lendable[k] += lend
					t.beyond[k] += max(0, used-(nominal-lend))
					if !slices.Contains(t.queues, cq.Name) {
						t.queues = append(t.queues, cq.Name)
					}
				}
			}
		}
	}
	for c, q := range own {
		if t := trees[root(c)]; t != nil {
			for k, v := range q {
				t.lendable[k] += v
			}
		}
	}
	for r, t := range trees {
		for k, beyond := range t.beyond {
			if beyond > t.lendable[k] {
				var objs []string
				for _, q := range t.queues {
					objs = append(objs, "ClusterQueue "+q)
				}
				out = append(out, Violation{At: s.At, Rule: OverCohort, Objects: append([]string{"cohort " + r}, objs...),
					Message: fmt.Sprintf("%s %s: queues use %d milli beyond what they keep, the tree can lend %d", k.flavor, k.resource, beyond, t.lendable[k])})
			}
		}
	}
	return out
}

func quotas(groups []berthv1.ResourceGroup) map[fr]int64 {
	out := map[fr]int64{}
	for _, rg := range groups {
		for _, f := range rg.Flavors {
			for _, rq := range f.Resources {
				out[fr{f.Name, string(rq.Name)}] += rq.NominalQuota.MilliValue()
			}
		}
	}
	return out
}

// Settled checks the end state: every workload submitted to a queue has
// finished, or waits with a reason (QuotaReserved False with a message), or
// holds quota and is still running if running is allowed; no deleted Pod,
// Workload or ClusterQueue that berth no longer needs keeps its finalizer; each
// ClusterQueue's status usage is its workloads' sum.
func Settled(s Snapshot, pods []*corev1.Pod, allowRunning bool) []Violation {
	var out []Violation
	for _, w := range s.Workloads {
		k := "Workload " + key(w.Namespace, w.Name)
		c := meta.FindStatusCondition(w.Status.Conditions, berthv1.WorkloadQuotaReserved)
		switch {
		case w.Spec.QueueName == "" && w.Status.Admission == nil:
			// Never submitted to a queue: not berth's to settle.
		case meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkloadFinished):
		case holdsQuota(w):
			if !allowRunning {
				out = append(out, Violation{At: s.At, Rule: NotSettled, Objects: []string{k}, Message: "still holds quota"})
			}
		case c == nil || c.Status != "False" || c.Message == "":
			out = append(out, Violation{At: s.At, Rule: NotSettled, Objects: []string{k}, Message: "waits without a reason"})
		}
	}
	for _, w := range s.Workloads {
		if w.DeletionTimestamp != nil && !holdsQuota(w) && slices.Contains(w.Finalizers, podsGoneFinalizer) {
			out = append(out, Violation{At: s.At, Rule: FinalizerLeft, Objects: []string{"Workload " + key(w.Namespace, w.Name)},
				Message: fmt.Sprintf("deleted at %s, holds no quota, still held by %s", w.DeletionTimestamp.Format(time.RFC3339), podsGoneFinalizer)})
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && slices.Contains(p.Finalizers, berthv1.PodFinalizer) &&
			s.At.Sub(p.DeletionTimestamp.Time) > 0 {
			out = append(out, Violation{At: s.At, Rule: FinalizerLeft, Objects: []string{"Pod " + key(p.Namespace, p.Name)},
				Message: fmt.Sprintf("deleted at %s, still held by %s", p.DeletionTimestamp.Format(time.RFC3339), berthv1.PodFinalizer)})
		}
	}
	usage, _ := usageByQueue(s)
	for _, cq := range s.ClusterQueues {
		if cq.DeletionTimestamp != nil && len(usage[cq.Name]) == 0 && slices.Contains(cq.Finalizers, inUseFinalizer) {
			out = append(out, Violation{At: s.At, Rule: FinalizerLeft, Objects: []string{"ClusterQueue " + cq.Name},
				Message: fmt.Sprintf("deleted, nothing holds quota in it, still held by %s", inUseFinalizer)})
		}
		reported := map[fr]int64{}
		for _, fu := range cq.Status.FlavorsUsage {
			for _, ru := range fu.Resources {
				reported[fr{fu.Name, string(ru.Name)}] = ru.Total.MilliValue()
			}
		}
		for k, v := range usage[cq.Name] {
			if reported[k] != v {
				out = append(out, Violation{At: s.At, Rule: StatusUsageDiffer, Objects: []string{"ClusterQueue " + cq.Name},
					Message: fmt.Sprintf("%s %s: status says %d milli, its workloads hold %d", k.flavor, k.resource, reported[k], v)})
			}
		}
		for k, v := range reported {
			if _, ok := usage[cq.Name][k]; !ok && v != 0 {
				out = append(out, Violation{At: s.At, Rule: StatusUsageDiffer, Objects: []string{"ClusterQueue " + cq.Name},
					Message: fmt.Sprintf("%s %s: status says %d milli, its workloads hold none", k.flavor, k.resource, v)})
			}
		}
	}
	return out
}
