package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// node is a ClusterQueue or a cohort in the quota tree.
type node struct {
	name   string
	parent *cohortNode
	quotas map[FlavorResource]Quota // its own
	// subtree is its own nominal quota plus what its children lend it.
	subtree map[FlavorResource]int64
	// usage is what its workloads use (ClusterQueue) or what its children
	// use beyond what they keep for themselves (cohort).
	usage Usage
}

// guaranteed is the part of the node's quota it keeps for itself.
func (n *node) guaranteed(fr FlavorResource) int64 {
	q, ok := n.quotas[fr]
	if !ok || q.LendingLimit == nil || n.parent == nil {
		return 0
	}
	return max(0, n.subtree[fr]-*q.LendingLimit)
}

type cqNode struct {
	node
	spec ClusterQueue
	// groupOf maps a covered resource to its group.
	groupOf map[string]*ResourceGroup
	// inactive says why the queue cannot admit; "" when it can.
	inactive string
}

type cohortNode struct {
	node
	spec     Cohort
	explicit bool // a Cohort object exists
	children []*node
	cqs      []*cqNode // direct ClusterQueue children
	subs     []*cohortNode
	// inCycle is set when its parents form a cycle.
	inCycle bool
}

// Cluster is the quota state the core decides on: flavors, ClusterQueues,
// cohorts and the usage of admitted workloads. It is not safe for concurrent
// use; the controller serialises access.
type Cluster struct {
	flavors  map[string]*Flavor
	cqs      map[string]*cqNode
	cohortSp map[string]Cohort // Cohort objects, by name
	cohorts  map[string]*cohortNode
	admitted map[string]admittedWorkload
	count    map[string]int // admitted workloads per ClusterQueue
	// trees maps each ClusterQueue to the sorted queues sharing its root
	// cohort, recomputed in rebuild: quota releases ask for it constantly.
	trees map[string][]string
}

type admittedWorkload struct {
	cq    string
	usage Usage
}

// NewCluster returns an empty cluster.
func NewCluster() *Cluster {
	return &Cluster{
		flavors:  map[string]*Flavor{},
		cqs:      map[string]*cqNode{},
		cohortSp: map[string]Cohort{},
		cohorts:  map[string]*cohortNode{},
		admitted: map[string]admittedWorkload{},
		count:    map[string]int{},
	}
}

// SetFlavor adds or replaces a flavor.
func (c *Cluster) SetFlavor(f Flavor) {
	c.flavors[f.Name] = &f
	c.refreshActive()
}

// DeleteFlavor removes a flavor; queues that use it become inactive.
func (c *Cluster) DeleteFlavor(name string) {
	delete(c.flavors, name)
	c.refreshActive()
}

// SetClusterQueue adds or replaces a ClusterQueue.
func (c *Cluster) SetClusterQueue(cq ClusterQueue) {
	n := &cqNode{spec: cq, groupOf: map[string]*ResourceGroup{}}
	n.name = cq.Name
	n.quotas = quotasOf(cq.ResourceGroups)
	for i := range n.spec.ResourceGroups {
		rg := &n.spec.ResourceGroups[i]
		for _, r := range rg.Resources {
			n.groupOf[r] = rg
		}
	}
	c.cqs[cq.Name] = n
	c.rebuild()
}

// DeleteClusterQueue removes a ClusterQueue. Workloads admitted in it keep
// their record, so that they count again if it comes back; AdmittedIn lists them.
func (c *Cluster) DeleteClusterQueue(name string) {
	delete(c.cqs, name)
	c.rebuild()
}

// SetCohort adds or replaces a Cohort object.
func (c *Cluster) SetCohort(co Cohort) {
	c.cohortSp[co.Name] = co
	c.rebuild()
}

// DeleteCohort removes a Cohort object; the cohort lives on, without quota or
// parent, while ClusterQueues name it.
func (c *Cluster) DeleteCohort(name string) {
	delete(c.cohortSp, name)
	c.rebuild()
}

// AddAdmitted records that the workload key holds usage in ClusterQueue cq.
// Recording the same key again replaces the earlier record: quota is never
// counted twice for one workload.
func (c *Cluster) AddAdmitted(key, cq string, usage Usage) {
	c.RemoveAdmitted(key)
	c.admitted[key] = admittedWorkload{cq: cq, usage: usage}
	c.count[cq]++
	if n := c.cqs[cq]; n != nil {
		for fr, v := range usage {
			c.addUsage(&n.node, fr, v)
		}
	}
}

// RemoveAdmitted releases the workload's usage, if it holds any.
func (c *Cluster) RemoveAdmitted(key string) {
	a, ok := c.admitted[key]
	if !ok {
		return
	}
	delete(c.admitted, key)
	if c.count[a.cq]--; c.count[a.cq] == 0 {
		delete(c.count, a.cq)
	}
	if n := c.cqs[a.cq]; n != nil {
		for fr, v := range a.usage {
			c.addUsage(&n.node, fr, -v)
		}
	}
}

// IsAdmitted reports whether the workload holds quota, and where.
func (c *Cluster) IsAdmitted(key string) (cq string, ok bool) {
	a, ok := c.admitted[key]
	return a.cq, ok
}

// AdmittedCount is the number of workloads holding quota in a ClusterQueue.
func (c *Cluster) AdmittedCount(cq string) int { return c.count[cq] }

// AdmittedIn lists the workloads holding quota in a ClusterQueue, sorted.
func (c *Cluster) AdmittedIn(cq string) []string {
	var keys []string
	for k, a := range c.admitted {
		if a.cq == cq {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// addUsage changes a node's usage and carries the change up the tree: a
// parent sees only what its child uses beyond what the child keeps.
func (c *Cluster) addUsage(n *node, fr FlavorResource, delta int64) {
	for delta != 0 {
		old := n.usage[fr]
		n.usage[fr] = old + delta
		if n.usage[fr] == 0 {
			delete(n.usage, fr)
		}
		p := n.parent
		if p == nil {
			return
		}
		g := n.guaranteed(fr)
		delta = max(0, old+delta-g) - max(0, old-g)
		n = &p.node
	}
}

// Available is how much of a resource in a flavor ClusterQueue cq could take
// now: what it keeps for itself and has free, plus what is free above it, up
// to its borrowing limit.
func (c *Cluster) Available(cq string, fr FlavorResource) int64 {
	n := c.cqs[cq]
	if n == nil {
		return 0
	}
	return max(0, available(&n.node, fr))
}

func available(n *node, fr FlavorResource) int64 {
	if n.parent == nil {
		return n.subtree[fr] - n.usage[fr]
	}
	g := n.guaranteed(fr)
	local := max(0, g-n.usage[fr])
	fromParent := available(&n.parent.node, fr)
	if q, ok := n.quotas[fr]; ok && q.BorrowingLimit != nil {
		// What it lends plus its borrowing limit is all it may take from above.
		lent := n.subtree[fr] - g
		usedAbove := max(0, n.usage[fr]-g)
		fromParent = min(fromParent, lent-usedAbove+*q.BorrowingLimit)
	}
	return local + max(0, fromParent)
}

// Usage returns ClusterQueue cq's usage (a copy).
func (c *Cluster) Usage(cq string) Usage {
	n := c.cqs[cq]
	if n == nil {
		return nil
	}
	out := make(Usage, len(n.usage))
	for fr, v := range n.usage {
		out[fr] = v
	}
	return out
}

// Nominal returns ClusterQueue cq's nominal quota for fr.
func (c *Cluster) Nominal(cq string, fr FlavorResource) int64 {
	if n := c.cqs[cq]; n != nil {
		return n.quotas[fr].Nominal
	}
	return 0
}

// ClusterQueue returns the queue's spec and whether it exists.
func (c *Cluster) ClusterQueue(name string) (ClusterQueue, bool) {
	n, ok := c.cqs[name]
	if !ok {
		return ClusterQueue{}, false
	}
	return n.spec, true
}

// Inactive says why a ClusterQueue cannot admit, or "" when it can. A queue
// that does not exist is inactive too.
func (c *Cluster) Inactive(cq string) string {
	n, ok := c.cqs[cq]
	if !ok {
		return fmt.Sprintf("ClusterQueue %s does not exist", cq)
	}
	return n.inactive
}

// CohortTree returns every ClusterQueue sharing a root cohort with cq
// (including cq), sorted: the queues whose admissions can change cq's answer.
// The slice is shared; callers must not modify it.
func (c *Cluster) CohortTree(cq string) []string { return c.trees[cq] }

// computeTrees groups the ClusterQueues by root cohort.
func (c *Cluster) computeTrees() {
	c.trees = make(map[string][]string, len(c.cqs))
	byRoot := map[*cohortNode][]string{}
	for name, q := range c.cqs {
		if q.parent == nil {
			c.trees[name] = []string{name}
			continue
		}
		root := q.parent
		for root.parent != nil { // cycles were cut in markCycles
			root = root.parent
		}
		byRoot[root] = append(byRoot[root], name)
	}
	for _, names := range byRoot {
		sort.Strings(names)
		for _, n := range names {
			c.trees[n] = names
		}
	}
}

// ClusterQueues returns the names of all ClusterQueues, sorted.
func (c *Cluster) ClusterQueues() []string {
	out := make([]string, 0, len(c.cqs))
	for n := range c.cqs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func quotasOf(groups []ResourceGroup) map[FlavorResource]Quota {
	q := map[FlavorResource]Quota{}
	for _, rg := range groups {
		for _, f := range rg.Flavors {
			for r, quota := range f.Quotas {
				q[FlavorResource{Flavor: f.Name, Resource: r}] = quota
			}
		}
	}
	return q
}

// rebuild recomputes the tree after a queue or cohort changed: parents,
// subtree quotas, cohort usage and which queues are active. Such changes are
// rare next to admissions, so simplicity wins over incremental updates.
func (c *Cluster) rebuild() {
	c.cohorts = map[string]*cohortNode{}
	cohort := func(name string) *cohortNode {
		if co, ok := c.cohorts[name]; ok {
			return co
		}
		co := &cohortNode{}
		co.name = name
		co.usage = Usage{}
		if sp, ok := c.cohortSp[name]; ok {
			co.spec, co.explicit = sp, true
			co.quotas = quotasOf(sp.ResourceGroups)
		} else {
			co.spec = Cohort{Name: name}
			co.quotas = map[FlavorResource]Quota{}
		}
		c.cohorts[name] = co
		return co
	}
	for name := range c.cohortSp {
		cohort(name)
	}
	for _, q := range c.cqs {
		q.parent = nil
		q.subtree = map[FlavorResource]int64{}
		for fr, quota := range q.quotas {
			q.subtree[fr] = quota.Nominal
		}
		q.usage = Usage{}
		if q.spec.Cohort != "" {
			co := cohort(q.spec.Cohort)
			q.parent = co
			co.cqs = append(co.cqs, q)
			co.children = append(co.children, &q.node)
		}
	}
	// Cohort parents; a parent named only by another cohort exists implicitly.
	names := make([]string, 0, len(c.cohorts))
	for n := range c.cohorts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		co := c.cohorts[n]
		if co.spec.Parent != "" {
			p := cohort(co.spec.Parent)
			co.parent = p
			p.subs = append(p.subs, co)
			p.children = append(p.children, &co.node)
		}
	}
	c.markCycles()
	c.computeTrees()
	// Subtree quotas bottom-up, then re-apply admitted usage.
	for _, co := range c.cohortsByDepth() {
		co.subtree = map[FlavorResource]int64{}
		for fr, q := range co.quotas {
			co.subtree[fr] = q.Nominal
		}
		for _, ch := range co.children {
			for fr, v := range ch.subtree {
				co.subtree[fr] += v - ch.guaranteed(fr)
			}
		}
	}
	for _, a := range c.admitted {
		if n := c.cqs[a.cq]; n != nil {
			for fr, v := range a.usage {
				c.addUsage(&n.node, fr, v)
			}
		}
	}
	c.refreshActive()
}

// cohortsByDepth returns acyclic cohorts, deepest first.
func (c *Cluster) cohortsByDepth() []*cohortNode {
	depth := map[*cohortNode]int{}
	var d func(*cohortNode) int
	d = func(co *cohortNode) int {
		if v, ok := depth[co]; ok {
			return v
		}
		v := 0
		if co.parent != nil {
			v = d(co.parent) + 1
		}
		depth[co] = v
		return v
	}
	var out []*cohortNode
	for _, co := range c.cohorts {
		if co.inCycle {
			continue
		}
		d(co)
		out = append(out, co)
	}
	sort.Slice(out, func(i, j int) bool {
		if depth[out[i]] != depth[out[j]] {
			return depth[out[i]] > depth[out[j]]
		}
		return out[i].name < out[j].name
	})
	return out
}

// markCycles flags cohorts whose parent chain loops, and cuts the loop so the
// tree stays a tree: queues below a cycle are inactive until it is fixed.
func (c *Cluster) markCycles() {
	for _, co := range c.cohorts {
		seen := map[*cohortNode]bool{}
		for n := co; n != nil; n = n.parent {
			if seen[n] {
				// Everything on the loop is in the cycle.
				for m := n; ; m = m.parent {
					m.inCycle = true
					if m.parent == n {
						break
					}
				}
				break
			}
			seen[n] = true
		}
	}
	for _, co := range c.cohorts {
		if co.inCycle && co.parent != nil && co.parent.inCycle {
			p := co.parent
			p.subs = slices.DeleteFunc(p.subs, func(s *cohortNode) bool { return s == co })
			p.children = slices.DeleteFunc(p.children, func(s *node) bool { return s == &co.node })
			co.parent = nil
		}
	}
}

// CohortsInCycle returns the cohorts whose parents form a cycle, sorted.
func (c *Cluster) CohortsInCycle() []string {
	var out []string
	for n, co := range c.cohorts {
		if co.inCycle {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (c *Cluster) refreshActive() {
	for _, q := range c.cqs {
		q.inactive = c.inactiveReason(q)
	}
}

func (c *Cluster) inactiveReason(q *cqNode) string {
	if q.spec.Problem != "" {
		return q.spec.Problem
	}
	if q.spec.Stopped {
		return "stopped by its stopPolicy"
	}
	var missing []string
	for _, rg := range q.spec.ResourceGroups {
		for _, f := range rg.Flavors {
			if _, ok := c.flavors[f.Name]; !ok {
				missing = append(missing, f.Name)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("ResourceFlavor %s not found", strings.Join(missing, ", "))
	}
	// Cycles were cut in markCycles, so this walk ends.
	for co := q.parent; co != nil; co = co.parent {
		if co.inCycle {
			return fmt.Sprintf("cohort %s is in a cycle of parents", co.name)
		}
	}
	return ""
}
