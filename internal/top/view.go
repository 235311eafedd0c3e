package top

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Node is a cohort or a ClusterQueue in the tree. A cohort's counts and
// resources are its queues' (and sub-cohorts') summed, its own quota added.
type Node struct {
	Kind string `json:"kind"` // Cohort or ClusterQueue
	Name string `json:"name"`
	// Inactive says why a ClusterQueue cannot admit; "" when it can.
	Inactive string `json:"inactive,omitempty"`
	// StopPolicy is a ClusterQueue's spec.stopPolicy when it is stopped
	// (Hold or HoldAndDrain); "" when it is not.
	StopPolicy string `json:"stopPolicy,omitempty"`
	// Budget says what a ClusterQueue's spec.budget has spent, as its
	// status says; "" without one.
	Budget string `json:"budget,omitempty"`
	// LocalQueueBudgets say the same of its LocalQueues' budgets, by
	// namespace/name.
	LocalQueueBudgets map[string]string `json:"localQueueBudgets,omitempty"`
	Pending           int32             `json:"pending"`
	Reserving         int32             `json:"reserving"`
	Admitted          int32             `json:"admitted"`
	Resources         []Resource        `json:"resources,omitempty"`
	Children          []Node            `json:"children,omitempty"`
}

// Resource is the quota and use of one resource in one flavor.
type Resource struct {
	Flavor         string             `json:"flavor"`
	Resource       string             `json:"resource"`
	Nominal        resource.Quantity  `json:"nominal"`
	Used           resource.Quantity  `json:"used"`
	Borrowed       resource.Quantity  `json:"borrowed"`
	BorrowingLimit *resource.Quantity `json:"borrowingLimit,omitempty"`
	LendingLimit   *resource.Quantity `json:"lendingLimit,omitempty"`
}

// Tree arranges ClusterQueues under their cohorts, cohorts under their
// parents (named by Cohort objects or only by a queue's spec.cohort), roots
// and children in name order, each ClusterQueue with the budgets of the
// LocalQueues lqs that point at it. A cohort whose parents form a cycle is
// shown as a root, so that the tree is always finite.
func Tree(cqs []berthv1.ClusterQueue, cohorts []berthv1.Cohort, lqs []berthv1.LocalQueue) []Node {
	lqBudgets := map[string]map[string]string{}
	for i := range lqs {
		lq := &lqs[i]
		if text := budgetText(lq.Spec.Budget, lq.Status.Budget); text != "" {
			if lqBudgets[lq.Spec.ClusterQueue] == nil {
				lqBudgets[lq.Spec.ClusterQueue] = map[string]string{}
			}
			lqBudgets[lq.Spec.ClusterQueue][lq.Namespace+"/"+lq.Name] = text
		}
	}
	withLQs := func(cq *berthv1.ClusterQueue) Node {
		n := queueNode(cq)
		n.LocalQueueBudgets = lqBudgets[cq.Name]
		return n
	}
	parent := map[string]string{}
	own := map[string]*berthv1.Cohort{}
	for i := range cohorts {
		co := &cohorts[i]
		own[co.Name] = co
		if co.Spec.Parent != "" {
			parent[co.Name] = co.Spec.Parent
		}
	}
	children := map[string][]string{} // cohort -> sub-cohorts
	queues := map[string][]*berthv1.ClusterQueue{}
	known := map[string]bool{}
	var roots []Node
	for i := range cqs {
		cq := &cqs[i]
		if cq.Spec.Cohort == "" {
			roots = append(roots, withLQs(cq))
			continue
		}
		queues[cq.Spec.Cohort] = append(queues[cq.Spec.Cohort], cq)
		known[cq.Spec.Cohort] = true
	}
	for name := range own {
		known[name] = true
	}
	for name := range maps.Clone(known) {
		for p := parent[name]; p != "" && !known[p]; p = parent[p] {
			known[p] = true
		}
	}
	var rootCohorts []string
	for name := range known {
		if p := parent[name]; p != "" && !inCycle(name, parent) {
			children[p] = append(children[p], name)
		} else {
			rootCohorts = append(rootCohorts, name)
		}
	}
	var build func(name string) Node
	build = func(name string) Node {
		n := Node{Kind: "Cohort", Name: name}
		if co := own[name]; co != nil {
			for _, rg := range co.Spec.ResourceGroups {
				for _, f := range rg.Flavors {
					for _, r := range f.Resources {
						add(&n, Resource{Flavor: f.Name, Resource: string(r.Name), Nominal: r.NominalQuota})
					}
				}
			}
		}
		for _, cq := range queues[name] {
			n.Children = append(n.Children, withLQs(cq))
		}
		for _, sub := range children[name] {
			n.Children = append(n.Children, build(sub))
		}
		sortNodes(n.Children)
		for _, c := range n.Children {
			n.Pending += c.Pending
			n.Reserving += c.Reserving
			n.Admitted += c.Admitted
			for _, r := range c.Resources {
				add(&n, Resource{Flavor: r.Flavor, Resource: r.Resource, Nominal: r.Nominal, Used: r.Used})
			}
		}
		return n
	}
	for _, name := range rootCohorts {
		roots = append(roots, build(name))
	}
	sortNodes(roots)
	return roots
}

// inCycle reports whether following name's parents comes back to it.
func inCycle(name string, parent map[string]string) bool {
	seen := map[string]bool{}
	for p := name; p != ""; p = parent[p] {
		if seen[p] {
			return true
		}
		seen[p] = true
	}
	return false
}

func sortNodes(ns []Node) {
	slices.SortFunc(ns, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
}

// add sums r into n's resource of the same flavor and name.
func add(n *Node, r Resource) {
	for i := range n.Resources {
		if x := &n.Resources[i]; x.Flavor == r.Flavor && x.Resource == r.Resource {
			x.Nominal.Add(r.Nominal)
			x.Used.Add(r.Used)
			return
		}
	}
	n.Resources = append(n.Resources, Resource{Flavor: r.Flavor, Resource: r.Resource, Nominal: r.Nominal.DeepCopy(), Used: r.Used.DeepCopy()})
}

func queueNode(cq *berthv1.ClusterQueue) Node {
	n := Node{Kind: "ClusterQueue", Name: cq.Name, Pending: cq.Status.PendingWorkloads,
		Reserving: cq.Status.ReservingWorkloads, Admitted: cq.Status.AdmittedWorkloads}
	if c := meta.FindStatusCondition(cq.Status.Conditions, "Active"); c != nil && c.Status != "True" {
		n.Inactive = c.Message
	}
	if p := cq.Spec.StopPolicy; p != "" && p != berthv1.StopPolicyNone {
		n.StopPolicy = string(p)
	}
	n.Budget = budgetText(cq.Spec.Budget, cq.Status.Budget)
	used := map[[2]string]berthv1.ResourceUsage{}
	for _, f := range cq.Status.FlavorsUsage {
		for _, r := range f.Resources {
			used[[2]string{f.Name, string(r.Name)}] = r
		}
	}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			for _, r := range f.Resources {
				u := used[[2]string{f.Name, string(r.Name)}]
				n.Resources = append(n.Resources, Resource{Flavor: f.Name, Resource: string(r.Name),
					Nominal: r.NominalQuota, Used: u.Total, Borrowed: u.Borrowed,
					BorrowingLimit: r.BorrowingLimit, LendingLimit: r.LendingLimit})
			}
		}
	}
	return n
}

// budgetText says what a budget has spent, as its status says; "" without
// either.
func budgetText(b *berthv1.Budget, st *berthv1.BudgetStatus) string {
	if b == nil || st == nil {
		return ""
	}
	hours := func(q resource.Quantity) string { return strconv.FormatFloat(q.AsApproximateFloat64(), 'f', -1, 64) }
	text := fmt.Sprintf("%s of %s %s-hours spent", hours(st.SpentResourceHours), hours(b.ResourceHours), b.Resource)
	if st.FreeAgainAt != nil {
		text += ", free again at " + st.FreeAgainAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	return text
}

// Render draws the tree as a table: one line per flavor and resource of each
// node, children indented under their cohort.
func Render(roots []Node) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE\tPENDING\tRESERVING\tADMITTED\tFLAVOR/RESOURCE\tUSED\tNOMINAL\tBORROWED\tBORROW LIMIT\tLEND LIMIT")
	var draw func(n Node, depth int)
	draw = func(n Node, depth int) {
		name := strings.Repeat("  ", depth) + n.Name
		if n.Kind == "Cohort" {
			name = strings.Repeat("  ", depth) + "cohort " + n.Name
		}
		if n.Inactive != "" {
			name += " (inactive)"
		}
		counts := fmt.Sprintf("%d\t%d\t%d", n.Pending, n.Reserving, n.Admitted)
		if len(n.Resources) == 0 {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t-\t-\n", name, counts)
		}
		for i, r := range n.Resources {
			if i > 0 {
				name, counts = "", "\t\t"
			}
			borrowed := "-"
			if !r.Borrowed.IsZero() {
				borrowed = r.Borrowed.String()
			}
			fmt.Fprintf(w, "%s\t%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\n", name, counts, r.Flavor, r.Resource,
				r.Used.String(), r.Nominal.String(), borrowed, limit(n, r.BorrowingLimit), limit(n, r.LendingLimit))
		}
		for _, c := range n.Children {
			draw(c, depth+1)
		}
	}
	for _, n := range roots {
		draw(n, 0)
	}
	_ = w.Flush()
	var inactive, budgets []string
	var note func(n Node)
	note = func(n Node) {
		if n.Inactive != "" {
			inactive = append(inactive, fmt.Sprintf("%s: %s", n.Name, n.Inactive))
		}
		if n.Budget != "" {
			budgets = append(budgets, fmt.Sprintf("%s: %s", n.Name, n.Budget))
		}
		for _, lq := range slices.Sorted(maps.Keys(n.LocalQueueBudgets)) {
			budgets = append(budgets, fmt.Sprintf("LocalQueue %s (in %s): %s", lq, n.Name, n.LocalQueueBudgets[lq]))
		}
		for _, c := range n.Children {
			note(c)
		}
	}
	for _, n := range roots {
		note(n)
	}
	for _, s := range inactive {
		fmt.Fprintf(&b, "inactive %s\n", s)
	}
	for _, s := range budgets {
		fmt.Fprintf(&b, "budget %s\n", s)
	}
	return b.String()
}

// limit shows a queue's limit, "none" when it has none; cohorts show "-".
func limit(n Node, q *resource.Quantity) string {
	switch {
	case n.Kind == "Cohort":
		return "-"
	case q == nil:
		return "none"
	}
	return q.String()
}
