package core

import (
	"math"
	"slices"
	"sort"
)

// SetFairSharing turns fair sharing on or off: admission order and reclaiming
// in a cohort then follow weighted shares of borrowed capacity.
func (c *Cluster) SetFairSharing(on bool) { c.fairSharing = on }

// Share of a node (ClusterQueue or cohort): the dominant resource share of
// what it takes from above. For each resource, what the node uses beyond its
// own quota (its nominal quota; for a cohort, its subtree's quota) in all
// flavors, per thousand of that resource's capacity in the whole cohort tree;
// the largest over resources, divided by the node's weight. Zero for a node
// that does not borrow; MaxInt64 for one that borrows with weight zero.
//
//	share(n) = max over resources r of
//	           1000 * sum_f max(0, usage(n,f,r) - quota(n,f,r)) / sum_f capacity(root,f,r)
//	           / weight(n)
func (c *Cluster) share(n *node, weight *int64, delta Usage, sign int64) int64 {
	root := n
	for root.parent != nil {
		root = &root.parent.node
	}
	borrowed := map[string]int64{}
	capacity := map[string]int64{}
	for fr, v := range root.subtree {
		capacity[fr.Resource] = AddAmounts(capacity[fr.Resource], v)
	}
	seen := map[FlavorResource]bool{}
	add := func(fr FlavorResource) {
		if seen[fr] {
			return
		}
		seen[fr] = true
		u := AddAmounts(n.usage[fr], sign*delta[fr])
		if over := u - n.subtree[fr]; over > 0 {
			borrowed[fr.Resource] = AddAmounts(borrowed[fr.Resource], over)
		}
	}
	for fr := range n.usage {
		add(fr)
	}
	for fr := range delta {
		add(fr)
	}
	var dominant int64
	for r, b := range borrowed {
		if capacity[r] > 0 {
			dominant = max(dominant, MulAmount(b, 1000)/capacity[r])
		} else if b > 0 {
			dominant = math.MaxInt64
		}
	}
	if dominant == 0 {
		return 0
	}
	w := int64(1000)
	if weight != nil {
		w = *weight
	}
	if w <= 0 || dominant == math.MaxInt64 {
		return math.MaxInt64
	}
	return MulAmount(dominant, 1000) / w
}

// cqShare is a ClusterQueue's share, optionally as if delta were added (sign
// 1) or removed (sign -1).
func (c *Cluster) cqShare(q *cqNode, delta Usage, sign int64) int64 {
	return c.share(&q.node, q.spec.FairWeight, delta, sign)
}

// sharePath lists, from the root of q's cohort tree down to q, the share of
// each node with the assignment's usage added: what fair ordering compares.
func (c *Cluster) sharePath(q *cqNode, usage Usage) []pathShare {
	var path []pathShare
	path = append(path, pathShare{name: "cq/" + q.name, share: c.cqShare(q, usage, 1)})
	for co := q.parent; co != nil; co = co.parent {
		// What the cohort takes from above grows by what the queue's
		// admission adds beyond what the queue keeps; an approximation
		// that ignores lending limits below it.
		path = append(path, pathShare{name: "cohort/" + co.name, share: c.share(&co.node, co.spec.FairWeight, usage, 1)})
	}
	slices.Reverse(path)
	return path
}

type pathShare struct {
	name  string
	share int64
}

// fairBefore orders two candidates of a cycle under fair sharing: at the
// first level of the cohort tree where their paths part, the subtree with the
// lower share (after admission) goes first; within one queue, priority and age.
func fairBefore(a, b []pathShare) (before, decided bool) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].name == b[i].name {
			continue
		}
		if a[i].share != b[i].share {
			return a[i].share < b[i].share, true
		}
		return false, false
	}
	return false, false
}

// fairTargets chooses victims under fair sharing: from the preemptor's own
// queue by its policy, and from the other borrowing queues of the tree,
// highest share first, as long as taking the victim strictly lowers its
// queue's share and leaves it no lower than the preemptor's after admission.
// Priorities do not enter across queues (borrowWithinCohort does not apply).
// Each fair preemption thus strictly lowers the largest share involved, so
// preemptions cannot go back and forth.
func (c *Cluster) fairTargets(w *Workload, a *Assignment, q *cqNode, cands []*Admitted,
	needed []FlavorResource) []Victim {
	c.order(q, cands)
	byQueue := map[string][]*Admitted{}
	var queues []string
	for _, cd := range cands {
		if byQueue[cd.ClusterQueue] == nil {
			queues = append(queues, cd.ClusterQueue)
		}
		byQueue[cd.ClusterQueue] = append(byQueue[cd.ClusterQueue], cd)
	}
	var removed []*Admitted
	var victims []Victim
	defer func() {
		for _, r := range removed {
			c.insert(r)
		}
	}()
	take := func(cd *Admitted, reason string) bool {
		c.remove(cd)
		removed = append(removed, cd)
		victims = append(victims, Victim{Key: cd.Key, ClusterQueue: cd.ClusterQueue, Reason: reason})
		return c.fitsWithout(w, a, q, true)
	}
	fits := false
	for !fits {
		preemptorShare := c.cqShare(q, a.Usage, 1)
		// The queue furthest above its share first; the preemptor's own last.
		sort.SliceStable(queues, func(i, j int) bool {
			qi, qj := queues[i], queues[j]
			if (qi == q.name) != (qj == q.name) {
				return qj == q.name
			}
			return c.cqShare(c.cqs[qi], nil, 1) > c.cqShare(c.cqs[qj], nil, 1)
		})
		progress := false
		for _, name := range queues {
			list := byQueue[name]
			if len(list) == 0 {
				continue
			}
			if name == q.name {
				progress = true
				fits = take(list[0], InClusterQueue)
				byQueue[name] = list[1:]
				break
			}
			oq := c.cqs[name]
			if !borrowing(oq, needed) {
				continue
			}
			before := c.cqShare(oq, nil, 1)
			for i, cd := range list {
				after := c.cqShare(oq, cd.Usage, -1)
				if !(after < before && preemptorShare <= after) {
					continue
				}
				progress = true
				fits = take(cd, InCohortFairSharing)
				byQueue[name] = slices.Delete(slices.Clone(list), i, i+1)
				break
			}
			if progress {
				break
			}
		}
		if !progress {
			return nil
		}
	}
	removed, victims = c.fillBack(w, a, q, true, removed, victims)
	return victims
}

// sharesFall compares the shares of the queues involved before and after a
// preemption (victims evicted, w admitted) in the multiset order: -1 when
// they fall (the highest share that changes is one given up), 0 when they
// are the same, 1 when they rise.
func (c *Cluster) sharesFall(w *Workload, a *Assignment, victims []Victim) int {
	involved := map[string]bool{a.ClusterQueue: true}
	var removed []*Admitted
	for _, v := range victims {
		involved[v.ClusterQueue] = true
		if ad := c.admitted[v.Key]; ad != nil {
			removed = append(removed, ad)
		}
	}
	count := map[int64]int{}
	for name := range involved {
		count[c.cqShare(c.cqs[name], nil, 1)]--
	}
	for _, r := range removed {
		c.remove(r)
	}
	pre := &Admitted{Key: w.Key, ClusterQueue: a.ClusterQueue, Usage: a.Usage}
	c.insert(pre)
	for name := range involved {
		count[c.cqShare(c.cqs[name], nil, 1)]++
	}
	c.remove(pre)
	for _, r := range removed {
		c.insert(r)
	}
	var top int64
	found, risen := false, false
	for s, n := range count {
		if n != 0 && (!found || s > top) {
			top, found, risen = s, true, n > 0
		}
	}
	switch {
	case !found:
		return 0
	case risen:
		return 1
	default:
		return -1
	}
}
