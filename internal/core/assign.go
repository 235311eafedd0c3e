package core

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Assign finds flavors for every pod set of w in its ClusterQueue, resource
// group by resource group, trying each group's flavors in the order listed,
// against what is free now. It returns the assignment, or why there is none.
// An assignment with Preempt set fits only if admitted workloads are evicted.
// A workload that allows fewer pods (PodSet.MinCount) and does not fit as
// things are gets the most pods that do fit, if its minimum does: berth
// admits fewer pods rather than preempt others.
func (c *Cluster) Assign(w *Workload) (*Assignment, *Pending) {
	q := c.cqs[w.ClusterQueue]
	if q == nil {
		return nil, &Pending{Reason: QueueInactive, Message: fmt.Sprintf("ClusterQueue %s does not exist", w.ClusterQueue)}
	}
	if q.inactive != "" {
		return nil, &Pending{Reason: QueueInactive, Message: fmt.Sprintf("ClusterQueue %s is inactive: %s", q.name, q.inactive)}
	}
	if n := c.podsPending[q.name]; c.blockPods && n > 0 {
		return nil, &Pending{Reason: WaitingForPodsReady, Message: fmt.Sprintf(
			"ClusterQueue %s admits nothing until the pods of the %d workload(s) it admitted are all Ready", q.name, n),
			Stable: fmt.Sprintf("ClusterQueue %s waits for the pods of what it admitted", q.name)}
	}
	if q.spec.NamespaceSelector == nil || !q.spec.NamespaceSelector.Matches(w.NamespaceLabels) {
		return nil, &Pending{Reason: Inadmissible, Message: fmt.Sprintf(
			"the namespace of the workload does not match the namespaceSelector of ClusterQueue %s", q.name)}
	}
	a, p := c.assignCounts(q, w, nil)
	if p != nil && p.Reason != NoFit || p == nil && len(a.Preempt) == 0 {
		return a, p
	}
	if partial := c.assignPartial(q, w); partial != nil {
		return partial, nil
	}
	return a, p
}

// assignPartial is partial admission: for a workload whose pod sets allow
// fewer pods (MinCount) and that does not fit as things are, the assignment
// with the most pods that does fit, without preempting anyone, or nil.
// Each such pod set gives up the same share of what it may (Count -
// MinCount, rounded up), found by bisection: fewer pods never need more.
func (c *Cluster) assignPartial(q *cqNode, w *Workload) *Assignment {
	var most int32 // the largest reduction any pod set may take
	for _, ps := range w.PodSets {
		if ps.MinCount > 0 && ps.MinCount < ps.Count {
			most = max(most, ps.Count-ps.MinCount)
		}
	}
	if most == 0 {
		return nil
	}
	counts := func(cut int32) []int32 {
		out := make([]int32, len(w.PodSets))
		for i, ps := range w.PodSets {
			out[i] = ps.Count
			if ps.MinCount > 0 && ps.MinCount < ps.Count {
				span := int64(ps.Count - ps.MinCount)
				out[i] -= int32((span*int64(cut) + int64(most) - 1) / int64(most))
			}
		}
		return out
	}
	fits := func(cut int32) *Assignment {
		a, p := c.assignCounts(q, w, counts(cut))
		if p != nil || len(a.Preempt) > 0 {
			return nil
		}
		return a
	}
	best := fits(most)
	if best == nil {
		return nil
	}
	// The least cut that fits: cut lo does not, cut hi does.
	lo, hi := int32(0), most
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if a := fits(mid); a != nil {
			best, hi = a, mid
		} else {
			lo = mid
		}
	}
	return best
}

// assignCounts assigns every pod set, with counts[i] pods for pod set i
// (nil: their own Count).
func (c *Cluster) assignCounts(q *cqNode, w *Workload, counts []int32) (*Assignment, *Pending) {
	a := &Assignment{ClusterQueue: q.name, AdmissionChecks: q.spec.AdmissionChecks, Usage: Usage{}}
	for i, ps := range w.PodSets {
		if counts != nil {
			ps.Count = counts[i]
		}
		psa, preempt, p := c.assignPodSet(q, ps, a.Usage)
		if p != nil {
			if len(w.PodSets) > 1 {
				p.Message = fmt.Sprintf("pod set %s: %s", ps.Name, p.Message)
				if p.Stable != "" {
					p.Stable = fmt.Sprintf("pod set %s: %s", ps.Name, p.Stable)
				}
			}
			return nil, p
		}
		a.PodSets = append(a.PodSets, psa)
		a.Usage.Add(psa.Usage)
		a.Preempt = append(a.Preempt, preempt...)
	}
	for fr, v := range a.Usage {
		if q.usage[fr]+v > q.quotas[fr].Nominal {
			a.Borrows = true
			break
		}
	}
	return a, nil
}

// assignPodSet assigns one pod set; taken is what earlier pod sets of the same
// workload already claimed. It also returns the flavor-resources that need
// preemption.
func (c *Cluster) assignPodSet(q *cqNode, ps PodSet, taken Usage) (PodSetAssignment, []FlavorResource, *Pending) {
	psa := PodSetAssignment{Name: ps.Name, Count: ps.Count}
	requests := totalRequests(q, ps)
	for _, r := range requests {
		if _, ok := q.groupOf[r.resource]; !ok {
			return psa, nil, &Pending{Reason: Inadmissible, Message: fmt.Sprintf(
				"requests %s, which ClusterQueue %s has no quota for", r.resource, q.name)}
		}
	}
	psa.Flavors = make(map[string]string, len(requests))
	psa.Usage = make(Usage, len(requests))
	var preempt []FlavorResource
	// Resource group by resource group, in the order their first resource
	// sorts; requests is sorted, so each group's needs are too.
	for i, first := range requests {
		rg := q.groupOf[first.resource]
		if slices.ContainsFunc(requests[:i], func(r amount) bool { return q.groupOf[r.resource] == rg }) {
			continue // its group is done
		}
		needs := requests[i:] // when all the rest is in rg, as is common
		if slices.ContainsFunc(needs, func(r amount) bool { return q.groupOf[r.resource] != rg }) {
			needs = nil
			for _, r := range requests[i:] {
				if q.groupOf[r.resource] == rg {
					needs = append(needs, r)
				}
			}
		}
		choice := c.chooseFlavor(q, ps, rg, needs, taken)
		if choice.flavor == "" {
			return psa, nil, &Pending{Reason: choice.reason, Message: strings.Join(choice.reasons, "; "),
				Stable: strings.Join(choice.stable, "; ")}
		}
		for _, r := range needs {
			fr := FlavorResource{Flavor: choice.flavor, Resource: r.resource}
			psa.Flavors[r.resource] = choice.flavor
			psa.Usage[fr] = r.milli
			if choice.mode == preemptMode && r.milli > max(0, available(&q.node, fr)-taken[fr]) {
				preempt = append(preempt, fr)
			}
		}
	}
	return psa, preempt, nil
}

// amount is a quantity of one resource, in milli-units.
type amount struct {
	resource string
	milli    int64
}

// mode is how a workload could use a flavor.
type mode int

const (
	noFit       mode = iota // not even by preempting
	preemptMode             // only by evicting admitted workloads
	fit                     // as things are
)

type flavorChoice struct {
	flavor          string
	mode            mode
	reasons, stable []string // when no flavor was chosen
	reason          PendingReason
}

// chooseFlavor returns the flavor of rg to use for the pod set's needs, or the
// reasons none can be used. A flavor that fits wins; with
// TryNextFlavorWhenCanBorrow, one that fits without borrowing wins over an
// earlier one that needs to borrow. A flavor that fits only by preempting is
// taken at once with PreemptWhenCanPreempt, else only when no flavor fits.
// Borrowing is always preferred to preempting.
func (c *Cluster) chooseFlavor(q *cqNode, ps PodSet, rg *ResourceGroup, needs []amount, taken Usage) flavorChoice {
	out := flavorChoice{reason: Inadmissible}
	borrowFallback, preemptFallback := "", ""
	for _, fq := range rg.Flavors {
		f := c.flavors[fq.Name]
		if why := pinnedElsewhere(ps, rg, fq.Name); why != "" {
			out.reasons = append(out.reasons, fmt.Sprintf("flavor %s: %s", fq.Name, why))
			out.stable = append(out.stable, out.reasons[len(out.reasons)-1])
			continue
		}
		if why := incompatible(ps, f); why != "" {
			out.reasons = append(out.reasons, fmt.Sprintf("flavor %s: %s", f.Name, why))
			out.stable = append(out.stable, out.reasons[len(out.reasons)-1])
			continue
		}
		m, borrows := fit, false
		for _, n := range needs {
			r, need := n.resource, n.milli
			fr := FlavorResource{Flavor: fq.Name, Resource: r}
			free := max(0, available(&q.node, fr)-taken[fr])
			if need <= free {
				if q.usage[fr]+taken[fr]+need > q.quotas[fr].Nominal {
					borrows = true
				}
				continue
			}
			out.reason = NoFit
			short := "needs " + FormatQuantity(r, need) + " " + r + " in flavor " + fq.Name
			out.reasons = append(out.reasons, short+", "+FormatQuantity(r, free)+" free")
			out.stable = append(out.stable, short)
			if c.couldPreemptFor(q, fr, taken[fr]+need) {
				m = min(m, preemptMode)
			} else {
				m = noFit
			}
		}
		switch {
		case m == fit && borrows && q.spec.TryNextFlavorWhenCanBorrow:
			if borrowFallback == "" {
				borrowFallback = fq.Name
			}
		case m == fit:
			return flavorChoice{flavor: fq.Name, mode: fit}
		case m == preemptMode && q.spec.PreemptWhenCanPreempt && borrowFallback == "":
			return flavorChoice{flavor: fq.Name, mode: preemptMode}
		case m == preemptMode && preemptFallback == "":
			preemptFallback = fq.Name
		}
	}
	if borrowFallback != "" {
		return flavorChoice{flavor: borrowFallback, mode: fit}
	}
	if preemptFallback != "" {
		return flavorChoice{flavor: preemptFallback, mode: preemptMode}
	}
	return out
}

// couldPreemptFor reports whether the queue's policies could possibly make
// room for total of fr by preemption: within its nominal quota, by
// preempting in the queue or reclaiming from borrowers; beyond it, only with
// borrowWithinCohort or fair sharing, up to the borrowing limit and what the
// cohort has.
func (c *Cluster) couldPreemptFor(q *cqNode, fr FlavorResource, total int64) bool {
	p := q.spec.Preemption
	quota := q.quotas[fr]
	if (p.WithinClusterQueue.allows() || p.ReclaimWithinCohort.allows()) && total <= quota.Nominal {
		return true
	}
	// Beyond nominal quota: by borrowing with preemption, or, under fair
	// sharing, by reclaiming from queues above their share.
	canBorrow := !q.noBorrow && (p.BorrowWithinCohort.allows() || (c.fairSharing && p.ReclaimWithinCohort.allows()))
	if !canBorrow || q.parent == nil {
		return false
	}
	if quota.BorrowingLimit != nil && total > AddAmounts(quota.Nominal, *quota.BorrowingLimit) {
		return false
	}
	root := q.parent
	for root.parent != nil {
		root = root.parent
	}
	return total <= root.subtree[fr]
}

// totalRequests is what the pod set asks for in all, sorted by resource:
// per-pod requests times the count, plus one "pods" per pod when the queue
// has quota for pods.
func totalRequests(q *cqNode, ps PodSet) []amount {
	out := make([]amount, 0, len(ps.Requests)+1)
	for r, v := range ps.Requests {
		if v > 0 {
			out = append(out, amount{r, MulAmount(v, int64(ps.Count))})
		}
	}
	if _, ok := q.groupOf[string(corev1.ResourcePods)]; ok {
		if _, set := ps.Requests[string(corev1.ResourcePods)]; !set {
			out = append(out, amount{string(corev1.ResourcePods), 1000 * int64(ps.Count)})
		}
	}
	slices.SortFunc(out, func(a, b amount) int { return strings.Compare(a.resource, b.resource) })
	return out
}

// incompatible says why a pod set cannot use a flavor's nodes, or "" if it can:
// a taint it does not tolerate, or a node selector or required node affinity
// that the flavor's node labels contradict. Only the keys the flavor defines
// are compared; the rest is for kube-scheduler to decide among the nodes.
// pinnedElsewhere says why a pod set whose flavors are set (PodSet.Flavors)
// may not take flavor of resource group rg; "" when it may.
func pinnedElsewhere(ps PodSet, rg *ResourceGroup, flavor string) string {
	for _, r := range rg.Resources {
		if f, ok := ps.Flavors[r]; ok && f != flavor {
			return fmt.Sprintf("its pods run in flavor %s for %s", f, r)
		}
	}
	return ""
}

func incompatible(ps PodSet, f *Flavor) string {
	if ps.Topology != nil && f.TopologyName == "" {
		return "it has no topology, and the pod set asks for topology-aware placement"
	}
	for i := range f.NodeTaints {
		t := &f.NodeTaints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerates := func(tol corev1.Toleration) bool { return tol.ToleratesTaint(logr.Discard(), t, true) }
		tolerated := slices.ContainsFunc(ps.Tolerations, tolerates) || slices.ContainsFunc(f.Tolerations, tolerates)
		if !tolerated {
			return fmt.Sprintf("untolerated taint %s", t.ToString())
		}
	}
	for _, k := range sortedKeys(ps.NodeSelector) {
		if v, ok := f.NodeLabels[k]; ok && v != ps.NodeSelector[k] {
			return fmt.Sprintf("node selector %s=%s does not match the flavor's label %s=%s", k, ps.NodeSelector[k], k, v)
		}
	}
	if ps.NodeAffinity != nil && len(ps.NodeAffinity.NodeSelectorTerms) > 0 {
		if !slices.ContainsFunc(ps.NodeAffinity.NodeSelectorTerms, func(t corev1.NodeSelectorTerm) bool {
			return termAllows(t, f.NodeLabels)
		}) {
			return "no term of the required node affinity matches the flavor's labels"
		}
	}
	return ""
}

// termAllows evaluates a node selector term on the flavor's labels, ignoring
// expressions on keys the flavor does not define.
func termAllows(t corev1.NodeSelectorTerm, labels map[string]string) bool {
	for _, e := range t.MatchExpressions {
		v, ok := labels[e.Key]
		if !ok {
			continue
		}
		switch e.Operator {
		case corev1.NodeSelectorOpIn:
			if !slices.Contains(e.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if slices.Contains(e.Values, v) {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			return false
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(e.Values) != 1 {
				return false
			}
			have, err1 := strconv.ParseInt(v, 10, 64)
			want, err2 := strconv.ParseInt(e.Values[0], 10, 64)
			if err1 != nil || err2 != nil {
				return false
			}
			if (e.Operator == corev1.NodeSelectorOpGt && have <= want) || (e.Operator == corev1.NodeSelectorOpLt && have >= want) {
				return false
			}
		}
	}
	return true
}

// InBytes reports whether a resource is counted in bytes (memory, storage,
// huge pages), written in binary units.
func InBytes(res string) bool {
	return res == string(corev1.ResourceMemory) || res == string(corev1.ResourceEphemeralStorage) ||
		strings.HasPrefix(res, corev1.ResourceHugePagesPrefix)
}

// FormatQuantity renders milli-units of a resource as a user would write it;
// a saturated amount (MaxAmount) as what it is known to exceed.
func FormatQuantity(res string, milli int64) string {
	format := resource.DecimalSI
	binary := InBytes(res)
	if !binary && milli >= 0 && milli < 1000*1000 && milli%1000 == 0 {
		// What Quantity writes for a whole number below 1000, without
		// its allocations: pending messages format amounts every cycle.
		return strconv.FormatInt(milli/1000, 10)
	}
	if milli >= MaxAmount {
		if binary {
			return "more than 8Pi"
		}
		return "more than 9P"
	}
	if binary {
		format = resource.BinarySI
		if milli%1000 == 0 {
			return resource.NewQuantity(milli/1000, format).String()
		}
	}
	return resource.NewMilliQuantity(milli, format).String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
