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
func (c *Cluster) Assign(w *Workload) (*Assignment, *Pending) {
	q := c.cqs[w.ClusterQueue]
	if q == nil {
		return nil, &Pending{Reason: QueueInactive, Message: fmt.Sprintf("ClusterQueue %s does not exist", w.ClusterQueue)}
	}
	if q.inactive != "" {
		return nil, &Pending{Reason: QueueInactive, Message: fmt.Sprintf("ClusterQueue %s is inactive: %s", q.name, q.inactive)}
	}
	if q.spec.NamespaceSelector == nil || !q.spec.NamespaceSelector.Matches(w.NamespaceLabels) {
		return nil, &Pending{Reason: Inadmissible, Message: fmt.Sprintf(
			"the namespace of the workload does not match the namespaceSelector of ClusterQueue %s", q.name)}
	}
	a := &Assignment{ClusterQueue: q.name, Usage: Usage{}}
	for _, ps := range w.PodSets {
		psa, p := c.assignPodSet(q, ps, a.Usage)
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
// workload already claimed.
func (c *Cluster) assignPodSet(q *cqNode, ps PodSet, taken Usage) (PodSetAssignment, *Pending) {
	psa := PodSetAssignment{Name: ps.Name, Count: ps.Count, Flavors: map[string]string{}, Usage: Usage{}}
	requests := totalRequests(q, ps)

	// Group the requested resources by the resource group covering them.
	var groups []*ResourceGroup
	needs := map[*ResourceGroup]map[string]int64{}
	for _, r := range sortedKeys(requests) {
		rg, ok := q.groupOf[r]
		if !ok {
			return psa, &Pending{Reason: Inadmissible, Message: fmt.Sprintf(
				"requests %s, which ClusterQueue %s has no quota for", r, q.name)}
		}
		if needs[rg] == nil {
			needs[rg] = map[string]int64{}
			groups = append(groups, rg)
		}
		needs[rg][r] = requests[r]
	}
	for _, rg := range groups {
		flavor, reasons, stable, reason := c.chooseFlavor(q, ps, rg, needs[rg], taken)
		if flavor == "" {
			return psa, &Pending{Reason: reason, Message: strings.Join(reasons, "; "), Stable: strings.Join(stable, "; ")}
		}
		for r, v := range needs[rg] {
			psa.Flavors[r] = flavor
			psa.Usage[FlavorResource{Flavor: flavor, Resource: r}] = v
		}
	}
	return psa, nil
}

// chooseFlavor returns the first flavor of rg that is compatible with the pod
// set and has room for needs, or the reasons none has. With
// TryNextFlavorWhenCanBorrow, a flavor that fits only by borrowing is kept as a
// fallback while later flavors are tried for one that fits without.
func (c *Cluster) chooseFlavor(q *cqNode, ps PodSet, rg *ResourceGroup, needs map[string]int64, taken Usage) (string, []string, []string, PendingReason) {
	var reasons, stable []string
	reason := Inadmissible
	fallback := ""
	for _, fq := range rg.Flavors {
		f := c.flavors[fq.Name]
		if why := incompatible(ps, f); why != "" {
			reasons = append(reasons, fmt.Sprintf("flavor %s: %s", f.Name, why))
			stable = append(stable, reasons[len(reasons)-1])
			continue
		}
		fits, borrows := true, false
		for _, r := range sortedKeys(needs) {
			fr := FlavorResource{Flavor: fq.Name, Resource: r}
			need := needs[r]
			free := max(0, available(&q.node, fr)-taken[fr])
			if need > free {
				fits = false
				reason = NoFit
				short := fmt.Sprintf("needs %s %s in flavor %s", FormatQuantity(r, need), r, fq.Name)
				reasons = append(reasons, short+", "+FormatQuantity(r, free)+" free")
				stable = append(stable, short)
				continue
			}
			if q.usage[fr]+taken[fr]+need > q.quotas[fr].Nominal {
				borrows = true
			}
		}
		if !fits {
			continue
		}
		if borrows && q.spec.TryNextFlavorWhenCanBorrow {
			if fallback == "" {
				fallback = fq.Name
			}
			continue
		}
		return fq.Name, nil, nil, ""
	}
	if fallback != "" {
		return fallback, nil, nil, ""
	}
	return "", reasons, stable, reason
}

// totalRequests is what the pod set asks for in all: per-pod requests times
// the count, plus one "pods" per pod when the queue has quota for pods.
func totalRequests(q *cqNode, ps PodSet) map[string]int64 {
	out := make(map[string]int64, len(ps.Requests)+1)
	for r, v := range ps.Requests {
		if v > 0 {
			out[r] = v * int64(ps.Count)
		}
	}
	if _, ok := q.groupOf[string(corev1.ResourcePods)]; ok {
		if _, set := ps.Requests[string(corev1.ResourcePods)]; !set {
			out[string(corev1.ResourcePods)] = 1000 * int64(ps.Count)
		}
	}
	return out
}

// incompatible says why a pod set cannot use a flavor's nodes, or "" if it can:
// a taint it does not tolerate, or a node selector or required node affinity
// that the flavor's node labels contradict. Only the keys the flavor defines
// are compared; the rest is for kube-scheduler to decide among the nodes.
func incompatible(ps PodSet, f *Flavor) string {
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

// FormatQuantity renders milli-units of a resource as a user would write it.
func FormatQuantity(res string, milli int64) string {
	format := resource.DecimalSI
	if res == string(corev1.ResourceMemory) || res == string(corev1.ResourceEphemeralStorage) ||
		strings.HasPrefix(res, corev1.ResourceHugePagesPrefix) {
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
