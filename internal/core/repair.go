package core

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/topology"
)

// Repair is what becomes of an admitted workload whose placed pods lost
// their nodes: new domains for the pods in its lost ones, or an eviction.
type Repair struct {
	Key string
	// PodSets are the repaired pod sets' domains after the move, by name;
	// Before what they were (a writer checks the API still has those).
	PodSets, Before map[string][]topology.Domain
	// Lost names the lowest-level domains that failed ("kubernetes.io/hostname
	// h3"), Gained those that took their pods.
	Lost, Gained []string
	// Evict, when set, says why the workload cannot be kept together: its
	// lost pods have no room where its request allows.
	Evict string
}

// failed reports whether a known node has failed at now: it has not been
// Ready for delay or longer (a node gone has failed too, by its absence).
// A node not Ready for less is given time to come back.
func failed(n topology.Node, now time.Time, delay time.Duration) bool {
	return !n.Ready && !now.Before(n.NotReadySince.Add(delay))
}

// Repairs finds the admitted workloads some of whose placed pods' domains
// failed (every node of a lowest-level domain gone or failed), and gives each of
// those pods room where its pod set's request allows (topology.Tree.Replace);
// when that is not possible the workload is to be evicted whole. Repaired
// placements take effect here at once (the caller writes them; the API's
// version replaces them when it is seen); workloads to evict are marked
// evicting, so they are not reported again. next is when a node not Ready
// now may be found failed: the zero time when none is waiting.
func (c *Cluster) Repairs(now time.Time, delay time.Duration) (out []Repair, next time.Time) {
	for _, n := range c.nodes {
		if !n.Ready && !failed(n, now, delay) {
			if at := n.NotReadySince.Add(delay); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	pl := c.privatePlaces()
	alive := map[string]map[string]bool{} // flavor -> lowest-level domains with a live node
	for _, fname := range slices.Sorted(maps.Keys(c.placedIn)) {
		f := c.flavors[fname]
		if f == nil || len(c.placedIn[fname]) == 0 {
			continue
		}
		levels := c.topologies[f.TopologyName]
		if len(levels) == 0 {
			continue // its queues are inactive, saying why
		}
		alive[fname] = c.liveDomains(f, levels, now, delay)
	}
	seen := map[string]bool{}
	for _, fname := range slices.Sorted(maps.Keys(alive)) {
		for _, key := range slices.Sorted(maps.Keys(c.placedIn[fname])) {
			a := c.placedIn[fname][key]
			if seen[key] || c.evicting[key] {
				continue
			}
			seen[key] = true
			if r, ok := c.repair(pl, a, alive); ok {
				out = append(out, r)
			}
		}
	}
	return out, next
}

// liveDomains lists, joined by NUL, the lowest-level domains of flavor f
// that have a node neither gone nor failed.
func (c *Cluster) liveDomains(f *Flavor, levels []string, now time.Time, delay time.Duration) map[string]bool {
	out := map[string]bool{}
	values := make([]string, len(levels))
	for _, n := range c.nodes {
		if !hasLabels(n.Labels, f.NodeLabels) || failed(n, now, delay) {
			continue
		}
		complete := true
		for i, l := range levels {
			v, ok := n.Labels[l]
			values[i], complete = v, complete && ok
		}
		if complete {
			out[strings.Join(values, "\x00")] = true
		}
	}
	return out
}

// repair moves a's pods out of its lost domains, or says to evict it.
func (c *Cluster) repair(pl *places, a *Admitted, alive map[string]map[string]bool) (Repair, bool) {
	r := Repair{Key: a.Key, PodSets: map[string][]topology.Domain{}, Before: map[string][]topology.Domain{}}
	moved := make([][]topology.Domain, len(a.Placements))
	for i, p := range a.Placements {
		live, ok := alive[p.Flavor]
		if !ok {
			continue
		}
		lost := make([]bool, len(p.Domains))
		f := c.flavors[p.Flavor]
		hit := false
		for j, d := range p.Domains {
			if !live[strings.Join(d.Values, "\x00")] {
				lost[j], hit = true, true
				r.Lost = append(r.Lost, describeDomain(c.topologies[f.TopologyName], d))
			}
		}
		if !hit {
			continue
		}
		t, err := pl.tree(f)
		if err != nil {
			r.Evict = fmt.Sprintf("ResourceFlavor %s: %v", f.Name, err)
			break
		}
		ps := p.PodSet
		ps.Tolerations = append(slices.Clone(ps.Tolerations), f.Tolerations...)
		na, err := t.Replace(p.Domains, lost, ps, p.Request)
		var nf *topology.NoFit
		switch {
		case errors.As(err, &nf):
			r.Evict = nf.Message
		case err != nil:
			r.Evict = fmt.Sprintf("topology request in flavor %s: %v", f.Name, err)
		}
		if r.Evict != "" {
			break
		}
		moved[i] = na.Domains
		r.PodSets[p.Name], r.Before[p.Name] = na.Domains, p.Domains
		for _, d := range na.Domains {
			if !slices.ContainsFunc(p.Domains, func(x topology.Domain) bool { return slices.Equal(x.Values, d.Values) }) {
				r.Gained = append(r.Gained, describeDomain(c.topologies[f.TopologyName], d))
			}
		}
	}
	if len(r.Lost) == 0 {
		return Repair{}, false
	}
	if r.Evict != "" {
		r.PodSets, r.Before = nil, nil
		c.evicting[a.Key] = true
		// Room taken for the pod sets repaired before the one that failed
		// is given back with the trees.
		clear(pl.trees)
		return r, true
	}
	for i, ds := range moved {
		if ds != nil {
			a.Placements[i].Domains = ds
			clear(c.rooms) // they hold the domains it left
		}
	}
	return r, true
}

// describeDomain names a lowest-level domain by its level and value.
func describeDomain(levels []string, d topology.Domain) string {
	if len(levels) == 0 || len(d.Values) == 0 {
		return strings.Join(d.Values, "/")
	}
	return levels[len(levels)-1] + " " + d.Values[len(d.Values)-1]
}
