package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/topology"
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
	// noBorrow: a ClusterQueue whose spent budget keeps it within its
	// nominal quota (SetBudgetSpent).
	noBorrow bool
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
	admitted map[string]*Admitted
	byCQ     map[string]map[string]*Admitted // admitted workloads per ClusterQueue
	// evicting marks admitted workloads chosen as preemption victims whose
	// eviction the API has not shown yet: they still hold their quota.
	evicting map[string]bool
	// holds are quota a preemptor counted on, free when it chose its
	// victims, kept from others until it is admitted or gives up.
	holds       map[string]*Admitted
	fairSharing bool
	// trees maps each ClusterQueue to the sorted queues sharing its root
	// cohort, recomputed in rebuild: quota releases ask for it constantly.
	trees map[string][]string
	// Topology-aware placement: the topologies' levels, the nodes, and the
	// placements of admitted workloads by flavor (topology.go).
	topologies map[string][]string
	nodes      map[string]topology.Node
	placedIn   map[string]map[string]*Admitted // flavor -> workload key
	// rooms are the topology flavors' trees, nodes less the placements
	// held, kept as workloads come and go (topology.go).
	rooms map[string]*room
	// checks are the AdmissionChecks, by name: whether each is Active.
	checks map[string]bool
	// podsPending counts, per ClusterQueue, the admitted workloads whose
	// pods are not all Ready; with blockPods a queue with any admits nothing.
	podsPending map[string]int
	blockPods   bool
	// spent are the ClusterQueues whose budget is spent (budget.go).
	spent map[string]Spent
}

// Admitted is a workload holding quota.
type Admitted struct {
	Key          string
	ClusterQueue string
	Usage        Usage
	// Priority is its own priority (not aged): it decides who may preempt it.
	Priority int32
	// Timestamp is its queue-order time (creation, or last eviction).
	Timestamp time.Time
	// AdmittedAt is when it got quota; the most recently admitted go first
	// among equal victims.
	AdmittedAt time.Time
	// Placements of its topology-aware pod sets: the room they take on
	// nodes, beside the quota.
	Placements []Placement
	// ChecksPending: it holds quota but waits for admission checks, so it
	// is reserving, not yet admitted.
	ChecksPending bool
	// PodsPending: it is admitted and its pods are not all Ready yet
	// (Workload.AwaitsPods); see SetBlockUntilPodsReady.
	PodsPending bool
}

// NewCluster returns an empty cluster.
func NewCluster() *Cluster {
	return &Cluster{
		flavors:  map[string]*Flavor{},
		cqs:      map[string]*cqNode{},
		cohortSp: map[string]Cohort{},
		cohorts:  map[string]*cohortNode{},
		admitted: map[string]*Admitted{},
		byCQ:     map[string]map[string]*Admitted{},
		evicting: map[string]bool{},
		holds:    map[string]*Admitted{},
		spent:    map[string]Spent{},

		topologies: map[string][]string{},
		nodes:      map[string]topology.Node{},
		placedIn:   map[string]map[string]*Admitted{},
		rooms:      map[string]*room{},
		checks:     map[string]bool{},

		podsPending: map[string]int{},
	}
}

// SetBlockUntilPodsReady makes a ClusterQueue admit nothing while a
// workload it admitted waits for its pods to be all Ready (Admitted
// PodsPending): gangs then start one after another, none of them holding
// part of the nodes another needs.
func (c *Cluster) SetBlockUntilPodsReady(on bool) { c.blockPods = on }

// PodsPending reports whether an admitted workload waits for its pods.
func (c *Cluster) PodsPending(key string) bool {
	a, ok := c.admitted[key]
	return ok && a.PodsPending
}

// SetFlavor adds or replaces a flavor.
func (c *Cluster) SetFlavor(f Flavor) {
	c.flavors[f.Name] = &f
	clear(c.rooms)
	c.refreshActive()
}

// DeleteFlavor removes a flavor; queues that use it become inactive.
func (c *Cluster) DeleteFlavor(name string) {
	delete(c.flavors, name)
	clear(c.rooms)
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
	c.applySpent(n)
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

// AddAdmitted records that a workload holds usage in a ClusterQueue.
// Recording the same key again replaces the earlier record: quota is never
// counted twice for one workload.
func (c *Cluster) AddAdmitted(a Admitted) {
	c.RemoveAdmitted(a.Key)
	c.insert(&a)
}

func (c *Cluster) insert(a *Admitted) {
	c.admitted[a.Key] = a
	c.addPlacements(a)
	if c.byCQ[a.ClusterQueue] == nil {
		c.byCQ[a.ClusterQueue] = map[string]*Admitted{}
	}
	c.byCQ[a.ClusterQueue][a.Key] = a
	if a.PodsPending {
		c.podsPending[a.ClusterQueue]++
	}
	if n := c.cqs[a.ClusterQueue]; n != nil {
		for fr, v := range a.Usage {
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
	c.remove(a)
	delete(c.evicting, key)
}

func (c *Cluster) remove(a *Admitted) {
	delete(c.admitted, a.Key)
	c.removePlacements(a)
	if m := c.byCQ[a.ClusterQueue]; m != nil {
		delete(m, a.Key)
		if len(m) == 0 {
			delete(c.byCQ, a.ClusterQueue)
		}
	}
	if a.PodsPending {
		if c.podsPending[a.ClusterQueue]--; c.podsPending[a.ClusterQueue] <= 0 {
			delete(c.podsPending, a.ClusterQueue)
		}
	}
	if n := c.cqs[a.ClusterQueue]; n != nil {
		for fr, v := range a.Usage {
			c.addUsage(&n.node, fr, -v)
		}
	}
}

// hold keeps quota for a preemptor: the part of its usage free now.
func (c *Cluster) hold(w *Workload, a *Assignment) {
	q := c.cqs[a.ClusterQueue]
	h := &Admitted{Key: w.Key, ClusterQueue: a.ClusterQueue, Usage: Usage{}}
	for fr, v := range a.Usage {
		if free := min(v, max(0, available(&q.node, fr))); free > 0 {
			h.Usage[fr] = free
			c.addUsage(&q.node, fr, free)
		}
	}
	c.holds[w.Key] = h
}

// ReleaseHold gives back what a preemptor held, if anything.
func (c *Cluster) ReleaseHold(key string) {
	h, ok := c.holds[key]
	if !ok {
		return
	}
	delete(c.holds, key)
	if q := c.cqs[h.ClusterQueue]; q != nil {
		for fr, v := range h.Usage {
			c.addUsage(&q.node, fr, -v)
		}
	}
}

// IsHolding reports whether a preemptor holds quota, and where.
func (c *Cluster) IsHolding(key string) (cq string, ok bool) {
	h, ok := c.holds[key]
	if !ok {
		return "", false
	}
	return h.ClusterQueue, true
}

// Held returns what preemptors hold in a ClusterQueue.
func (c *Cluster) Held(cq string) Usage {
	out := Usage{}
	for _, h := range c.holds {
		if h.ClusterQueue == cq {
			out.Add(h.Usage)
		}
	}
	return out
}

// IsAdmitted reports whether the workload holds quota, and where.
func (c *Cluster) IsAdmitted(key string) (cq string, ok bool) {
	a, ok := c.admitted[key]
	if !ok {
		return "", false
	}
	return a.ClusterQueue, true
}

// Placements are where an admitted workload's topology-aware pod sets were
// placed, as the cycle that admitted it placed them; nil for one that is
// not admitted or placed nothing.
func (c *Cluster) Placements(key string) []Placement {
	if a, ok := c.admitted[key]; ok {
		return a.Placements
	}
	return nil
}

// Evicting reports whether an admitted workload was chosen as a victim and
// its eviction is not yet seen.
func (c *Cluster) Evicting(key string) bool { return c.evicting[key] }

// MarkEvicting and UnmarkEvicting set and clear the evicting mark of an
// admitted workload (the Cycle sets it for the victims it chooses).
func (c *Cluster) MarkEvicting(key string) {
	if _, ok := c.admitted[key]; ok {
		c.evicting[key] = true
	}
}

func (c *Cluster) UnmarkEvicting(key string) { delete(c.evicting, key) }

// AdmittedCount is the number of workloads holding quota in a ClusterQueue.
func (c *Cluster) AdmittedCount(cq string) int { return len(c.byCQ[cq]) }

// AdmittedIn lists the workloads holding quota in a ClusterQueue, sorted.
func (c *Cluster) AdmittedIn(cq string) []string {
	keys := make([]string, 0, len(c.byCQ[cq]))
	for k := range c.byCQ[cq] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// addUsage changes a node's usage and carries the change up the tree: a
// parent sees only what its child uses beyond what the child keeps.
func (c *Cluster) addUsage(n *node, fr FlavorResource, delta int64) {
	for delta != 0 {
		old := n.usage[fr]
		n.usage[fr] = AddAmounts(old, delta)
		if n.usage[fr] == 0 {
			delete(n.usage, fr)
		}
		p := n.parent
		if p == nil {
			return
		}
		g := n.guaranteed(fr)
		delta = max(0, AddAmounts(old, delta)-g) - max(0, old-g)
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
	if n.noBorrow {
		return min(n.quotas[fr].Nominal-n.usage[fr], availableAnywhere(n, fr))
	}
	return availableAnywhere(n, fr)
}

func availableAnywhere(n *node, fr FlavorResource) int64 {
	if n.parent == nil {
		return n.subtree[fr] - n.usage[fr]
	}
	// Never more than keeps this node's usage within MaxAmount: then usage
	// never saturates, and releasing what was admitted gives back exactly
	// what admitting it took. (A parent's usage grows by at most as much.)
	return min(MaxAmount-n.usage[fr], availableBelowMax(n, fr))
}

func availableBelowMax(n *node, fr FlavorResource) int64 {
	g := n.guaranteed(fr)
	local := max(0, g-n.usage[fr])
	fromParent := available(&n.parent.node, fr)
	if q, ok := n.quotas[fr]; ok && q.BorrowingLimit != nil {
		// What it lends plus its borrowing limit is all it may take from above.
		lent := n.subtree[fr] - g
		usedAbove := max(0, n.usage[fr]-g)
		fromParent = min(fromParent, AddAmounts(lent-usedAbove, *q.BorrowingLimit))
	}
	return AddAmounts(local, max(0, fromParent))
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
				co.subtree[fr] = AddAmounts(co.subtree[fr], v-ch.guaranteed(fr))
			}
		}
	}
	for _, set := range []map[string]*Admitted{c.admitted, c.holds} {
		for _, a := range set {
			if n := c.cqs[a.ClusterQueue]; n != nil {
				for fr, v := range a.Usage {
					c.addUsage(&n.node, fr, v)
				}
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

// CohortCycle returns the cohorts of the cycle of parents the named cohort is
// in, following parents from it (nil when it is in none).
func (c *Cluster) CohortCycle(name string) []string {
	co, ok := c.cohorts[name]
	if !ok || !co.inCycle {
		return nil
	}
	// Cycles were cut in the tree; follow the Cohort objects' parents.
	out := []string{name}
	for next := c.cohortSp[name].Parent; next != "" && next != name && len(out) <= len(c.cohortSp); next = c.cohortSp[next].Parent {
		out = append(out, next)
	}
	return out
}

// Cohorts returns the names of all cohorts, those with a Cohort object and
// those only named by ClusterQueues, sorted.
func (c *Cluster) Cohorts() []string {
	out := make([]string, 0, len(c.cohorts))
	for n := range c.cohorts {
		out = append(out, n)
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
	if s, ok := c.spent[q.name]; ok && s.Stop {
		return s.Why
	}
	var missing, problems []string
	for _, rg := range q.spec.ResourceGroups {
		for _, f := range rg.Flavors {
			switch fl, ok := c.flavors[f.Name]; {
			case !ok:
				missing = append(missing, f.Name)
			case fl.Problem != "":
				problems = append(problems, fl.Problem)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("ResourceFlavor %s not found", strings.Join(missing, ", "))
	}
	if len(problems) > 0 {
		return strings.Join(problems, "; ")
	}
	if why := c.topologyProblem(q); why != "" {
		return why
	}
	if why := c.checkProblem(q); why != "" {
		return why
	}
	// Cycles were cut in markCycles, so this walk ends.
	for co := q.parent; co != nil; co = co.parent {
		if co.inCycle {
			return fmt.Sprintf("cohort %s is in a cycle of parents", co.name)
		}
	}
	return ""
}
