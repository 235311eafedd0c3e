package topology

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// PodsResource is the resource a node's pod limit is kept in: every pod
// takes one (1000 in milli-units).
const PodsResource = "pods"

// Node is what placement needs of a node.
type Node struct {
	Name   string
	Labels map[string]string
	// Free is allocatable minus the requests of the pods bound to the node,
	// per resource in milli-units (cpu "1" is 1000; pods "110" is 110000).
	Free          map[string]int64
	Taints        []corev1.Taint
	Ready         bool
	Unschedulable bool
	// NotReadySince is when a node not Ready stopped being Ready (its Ready
	// condition's last transition): a node is taken for failed only after a
	// while.
	NotReadySince time.Time
}

// Tree is the nodes of a topology arranged by level.
type Tree struct {
	levels []string
	roots  []*domain // the domains of the top level
	nodes  map[string]*node
	list   []*node // nodes in the order given, for fast walks
	// leaves are the lowest-level domains by their values joined with NUL,
	// made when TakeDomains first needs them.
	leaves map[string]*domain
	// Left lists nodes left out, and why (a level's label missing, not
	// Ready, cordoned).
	Left []string
}

type domain struct {
	values   []string  // its label values, from the top level down to its own
	children []*domain // domains of the next level; nil at the lowest level
	nodes    []*node   // at the lowest level only
	// Filled by Place for the pod set at hand: how many pods, and how many
	// units (slices at and above the slice level), its nodes hold.
	pods, units int64
}

type node struct {
	Node
	fit int64 // whole pods of the pod set at hand it holds
}

// ErrNoLevels is Build's error for a topology without levels.
var ErrNoLevels = errors.New("the topology has no levels")

// Build arranges nodes into the domains of levels (node labels, the top
// level first). Nodes that lack one of the labels, are not Ready, or are
// cordoned are left out (Tree.Left).
func Build(levels []string, nodes []Node) (*Tree, error) {
	if len(levels) == 0 {
		return nil, ErrNoLevels
	}
	t := &Tree{levels: slices.Clone(levels), nodes: map[string]*node{}}
	index := map[string]*domain{} // by values joined
	for _, n := range nodes {
		switch {
		case !n.Ready:
			t.Left = append(t.Left, n.Name+" (not Ready)")
			continue
		case n.Unschedulable:
			t.Left = append(t.Left, n.Name+" (cordoned)")
			continue
		}
		values := make([]string, len(levels))
		missing := ""
		for i, l := range levels {
			v, ok := n.Labels[l]
			if !ok {
				missing = l
				break
			}
			values[i] = v
		}
		if missing != "" {
			t.Left = append(t.Left, n.Name+" (no label "+missing+")")
			continue
		}
		nd := &node{Node: n}
		t.nodes[n.Name] = nd
		t.list = append(t.list, nd)
		var parent *domain
		for i := range levels {
			key := strings.Join(values[:i+1], "\x00")
			d, ok := index[key]
			if !ok {
				d = &domain{values: values[:i+1]}
				index[key] = d
				if parent == nil {
					t.roots = append(t.roots, d)
				} else {
					parent.children = append(parent.children, d)
				}
			}
			parent = d
		}
		parent.nodes = append(parent.nodes, nd)
	}
	return t, nil
}

// Levels are the tree's node labels, the top level first.
func (t *Tree) Levels() []string { return slices.Clone(t.levels) }

// Mode is how a pod set asks to be kept together.
type Mode string

const (
	// Required: all pods in one domain of the level.
	Required Mode = "Required"
	// Preferred: in one domain of the level if one holds them all, else of
	// the lowest level above it where one does, else over the fewest domains.
	Preferred Mode = "Preferred"
	// Unconstrained: anywhere, packed as Preferred at the lowest level.
	Unconstrained Mode = "Unconstrained"
)

// Request is a pod set's topology request.
type Request struct {
	Mode  Mode
	Level string // for Required and Preferred
	// SliceLevel and SliceSize, when set, ask for each group of SliceSize
	// pods to be inside one domain of SliceLevel.
	SliceLevel string
	SliceSize  int32
}

// PodSet is what placement needs of a pod set.
type PodSet struct {
	Count int32
	// Requests of one pod, in milli-units.
	Requests    map[string]int64
	Tolerations []corev1.Toleration
	// Allows, when set, says whether the pods may run on a node with these
	// labels (their node selector and affinity).
	Allows func(labels map[string]string) bool
	// Shape describes one pod for messages ("4 cpu"); "" says nothing.
	Shape string
}

// Domain is one domain of the lowest level, by its label values from the
// top level down, and how many pods go there.
type Domain struct {
	Values []string
	Count  int32
}

// Assignment is where a pod set goes.
type Assignment struct {
	// Levels of the topology, the top level first.
	Levels []string
	// Domains of the lowest level that receive pods, sorted by Values.
	Domains []Domain
	// Nodes: how many pods each node was counted for. Not part of the API:
	// kube-scheduler chooses the node within a domain; Take needs it.
	Nodes map[string]int32
}

// NoFit is Place's error when the pod set does not fit as the nodes are: it
// says why in words.
type NoFit struct{ Message string }

func (e *NoFit) Error() string { return e.Message }

// Place finds where ps goes under req, or says why it cannot: *NoFit when the
// nodes have no room for it now, another error when the request itself
// cannot be met by this tree (a level it does not have, a slice size that
// does not divide the count).
func (t *Tree) Place(ps PodSet, req Request) (*Assignment, error) {
	if len(t.levels) == 0 {
		return nil, ErrNoLevels // a zero Tree: never index its levels
	}
	lowest := len(t.levels) - 1
	level := lowest
	switch req.Mode {
	case Required, Preferred:
		i := slices.Index(t.levels, req.Level)
		if i < 0 {
			return nil, fmt.Errorf("level %q is not one of the topology's levels %v", req.Level, t.levels)
		}
		level = i
	case Unconstrained:
	default:
		return nil, fmt.Errorf("unknown topology mode %q", req.Mode)
	}
	if ps.Count <= 0 {
		return &Assignment{Levels: t.Levels(), Nodes: map[string]int32{}}, nil
	}
	sliceLevel, size := lowest, int64(1)
	if req.SliceSize > 0 || req.SliceLevel != "" {
		i := slices.Index(t.levels, req.SliceLevel)
		switch {
		case i < 0:
			return nil, fmt.Errorf("slice level %q is not one of the topology's levels %v", req.SliceLevel, t.levels)
		case i < level && req.Mode != Unconstrained:
			return nil, fmt.Errorf("slice level %s is above the %s level %s", req.SliceLevel, strings.ToLower(string(req.Mode)), req.Level)
		case req.SliceSize < 1 || ps.Count%req.SliceSize != 0:
			return nil, fmt.Errorf("slice size %d does not divide the pod count %d", req.SliceSize, ps.Count)
		}
		sliceLevel, size = i, int64(req.SliceSize)
		level = min(level, sliceLevel) // unconstrained: slices are the finest grain
	}
	reqs := requestsOf(ps)
	for _, n := range t.list {
		n.fit = fitOf(&n.Node, ps, reqs)
	}
	for _, r := range t.roots {
		measure(r, sliceLevel, size)
	}
	want := int64(ps.Count) / size
	p := &placer{sliceLevel: sliceLevel, size: size, out: map[string]int32{}}

	if req.Mode == Required {
		candidates := t.at(level)
		best := tightest(candidates, want)
		if best == nil {
			return nil, t.noFit(ps, req, candidates, want, size)
		}
		p.into(best, want, level)
		return t.assignment(p.out), nil
	}
	// One domain of the level, else of the lowest level above it where one
	// holds them all, else the fewest domains of the top level.
	for l := level; l >= 0; l-- {
		if best := tightest(t.at(l), want); best != nil {
			p.into(best, want, l)
			return t.assignment(p.out), nil
		}
	}
	var total int64
	for _, r := range t.roots {
		total += r.units
	}
	if total < want {
		return nil, t.noFit(ps, req, t.roots, want, size)
	}
	p.spread(t.roots, want, 0)
	return t.assignment(p.out), nil
}

// at lists the domains of level l, the top level being 0.
func (t *Tree) at(l int) []*domain {
	out := t.roots
	for range l {
		out = childrenOf(out)
	}
	return out
}

type request struct {
	resource string
	amount   int64
}

// requestsOf lists the positive requests of one pod of ps, and the pod
// itself.
func requestsOf(ps PodSet) []request {
	out := []request{{PodsResource, 1000}}
	for r, v := range ps.Requests {
		if v > 0 && r != PodsResource {
			out = append(out, request{r, v})
		}
	}
	return out
}

// fit is how many whole pods of ps n holds: 0 when ps may not run there.
func fit(n *Node, ps PodSet) int64 { return fitOf(n, ps, requestsOf(ps)) }

func fitOf(n *Node, ps PodSet, reqs []request) int64 {
	if len(n.Taints) > 0 && !tolerates(ps.Tolerations, n.Taints) || (ps.Allows != nil && !ps.Allows(n.Labels)) {
		return 0
	}
	best := int64(math.MaxInt32)
	for i, r := range reqs {
		free, ok := n.Free[r.resource]
		if !ok && i == 0 {
			continue // no pod limit known
		}
		best = min(best, free/r.amount)
	}
	return max(best, 0)
}

// tolerates: the pods tolerate every taint that keeps pods off the node.
func tolerates(tols []corev1.Toleration, taints []corev1.Taint) bool {
	for i := range taints {
		if taints[i].Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tols, func(t corev1.Toleration) bool { return t.ToleratesTaint(logr.Discard(), &taints[i], true) }) {
			return false
		}
	}
	return true
}

// measure fills d's pods and units, bottom up: below the slice level a unit
// is a pod, at it a slice of size pods, above it the slices of its children.
func measure(d *domain, sliceLevel int, size int64) {
	d.pods, d.units = 0, 0
	if d.children == nil {
		for _, n := range d.nodes {
			d.pods += n.fit
		}
	}
	for _, c := range d.children {
		measure(c, sliceLevel, size)
		d.pods += c.pods
		d.units += c.units
	}
	switch lvl := len(d.values) - 1; {
	case lvl > sliceLevel:
		d.units = d.pods
	case lvl == sliceLevel:
		d.units = d.pods / size
	}
}

// tightest is the domain with the fewest units that still holds want, nil
// when none does; ties go to the first by label values.
func tightest(ds []*domain, want int64) *domain {
	var best *domain
	for _, d := range ds {
		if d.units >= want && (best == nil || d.units < best.units ||
			(d.units == best.units && slices.Compare(d.values, best.values) < 0)) {
			best = d
		}
	}
	return best
}

func childrenOf(ds []*domain) []*domain {
	var out []*domain
	for _, d := range ds {
		out = append(out, d.children...)
	}
	return out
}

// placer spreads units over domains and records pods per node.
type placer struct {
	sliceLevel int
	size       int64
	out        map[string]int32
}

// spread puts want units into ds, domains of level lvl: whole into the
// tightest one that holds them, else the largest first and the rest into
// the tightest that holds it, so the fewest domains are used.
func (p *placer) spread(ds []*domain, want int64, lvl int) {
	left := slices.Clone(ds)
	slices.SortStableFunc(left, func(a, b *domain) int {
		if c := b.units - a.units; c != 0 {
			return sign(c)
		}
		return slices.Compare(a.values, b.values)
	})
	for want > 0 && len(left) > 0 {
		take := tightest(left, want)
		if take == nil {
			take = left[0]
		}
		n := min(take.units, want)
		if n > 0 {
			p.into(take, n, lvl)
		}
		want -= n
		left = slices.DeleteFunc(left, func(d *domain) bool { return d == take })
	}
}

// into puts n units into domain d of level lvl: into its children, or at
// the lowest level into its nodes. At the slice level units become pods.
func (p *placer) into(d *domain, n int64, lvl int) {
	if lvl == p.sliceLevel {
		n *= p.size
	}
	if d.children != nil {
		p.spread(d.children, n, lvl+1)
		return
	}
	nodes := slices.Clone(d.nodes)
	slices.SortStableFunc(nodes, func(a, b *node) int {
		if c := b.fit - a.fit; c != 0 {
			return sign(c)
		}
		return strings.Compare(a.Name, b.Name)
	})
	for n > 0 && len(nodes) > 0 {
		var best *node
		for _, nd := range nodes {
			if nd.fit >= n && (best == nil || nd.fit < best.fit) {
				best = nd
			}
		}
		if best == nil {
			best = nodes[0]
		}
		k := min(best.fit, n)
		if k > 0 {
			p.out[best.Name] += int32(k)
		}
		n -= k
		nodes = slices.DeleteFunc(nodes, func(x *node) bool { return x == best })
	}
}

func sign(v int64) int {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// assignment turns pods per node into pods per lowest-level domain.
func (t *Tree) assignment(perNode map[string]int32) *Assignment {
	a := &Assignment{Levels: t.Levels(), Nodes: perNode}
	byDomain := map[string]*Domain{}
	for name, k := range perNode {
		n := t.nodes[name]
		values := make([]string, len(t.levels))
		for i, l := range t.levels {
			values[i] = n.Labels[l]
		}
		key := strings.Join(values, "\x00")
		d, ok := byDomain[key]
		if !ok {
			d = &Domain{Values: values}
			byDomain[key] = d
		}
		d.Count += k
	}
	for _, d := range byDomain {
		a.Domains = append(a.Domains, *d)
	}
	slices.SortFunc(a.Domains, func(x, y Domain) int { return slices.Compare(x.Values, y.Values) })
	return a
}

// noFit says why want units fit none of ds.
func (t *Tree) noFit(ps PodSet, req Request, ds []*domain, want, size int64) *NoFit {
	what := fmt.Sprintf("%d pods", ps.Count)
	if ps.Shape != "" {
		what += " of " + ps.Shape
	}
	if size > 1 {
		what += fmt.Sprintf(" in slices of %d, each in one %s", size, req.SliceLevel)
	}
	unit := "pods"
	if size > 1 {
		unit = "slices"
	}
	if req.Mode != Required {
		var total int64
		for _, d := range ds {
			total += d.units
		}
		return &NoFit{Message: fmt.Sprintf("needs %s; the topology's nodes have room for %d %s", what, total, unit)}
	}
	if len(ds) == 0 {
		return &NoFit{Message: fmt.Sprintf("needs %s in one %s; no node has that label", what, req.Level)}
	}
	best := ds[0]
	for _, d := range ds[1:] {
		if d.units > best.units || (d.units == best.units && slices.Compare(d.values, best.values) < 0) {
			best = d
		}
	}
	return &NoFit{Message: fmt.Sprintf("needs %s in one %s; the best %s, %s, has room for %d %s",
		what, req.Level, req.Level, best.values[len(best.values)-1], best.units, unit)}
}

// Take counts a's pods of ps as bound to their nodes, so that a later
// placement does not count on the same room.
func (t *Tree) Take(a *Assignment, ps PodSet) { t.add(a.Nodes, ps, -1) }

// Give counts pods of ps, per node, as no longer bound there: the inverse
// of a Take or TakeDomains of the same pods.
func (t *Tree) Give(perNode map[string]int32, ps PodSet) { t.add(perNode, ps, 1) }

// AddFree changes a node's free room by delta (per resource, milli-units),
// when the tree has the node: the pods bound to it changed.
func (t *Tree) AddFree(name string, delta map[string]int64) {
	n, ok := t.nodes[name]
	if !ok {
		return
	}
	for r, v := range delta {
		n.Free[r] += v
	}
}

func (t *Tree) add(perNode map[string]int32, ps PodSet, sign int64) {
	for name, k := range perNode {
		n, ok := t.nodes[name]
		if !ok {
			continue
		}
		if _, ok := n.Free[PodsResource]; ok {
			n.Free[PodsResource] += sign * 1000 * int64(k)
		}
		for r, req := range ps.Requests {
			if r != PodsResource {
				n.Free[r] += sign * req * int64(k)
			}
		}
	}
}

// TakeDomains counts pods of ps as bound in the lowest-level domains listed,
// node by node as a placement would fill them: for an admission read back
// from the API, which records domains, not nodes. Domains the tree does not
// have (their nodes gone) are skipped. It returns the pods it took per
// node, for a later Give.
func (t *Tree) TakeDomains(domains []Domain, ps PodSet) map[string]int32 {
	p := &placer{sliceLevel: len(t.levels) - 1, size: 1, out: map[string]int32{}}
	if len(t.levels) == 0 {
		return p.out
	}
	if t.leaves == nil {
		t.leaves = map[string]*domain{}
		for _, d := range t.at(len(t.levels) - 1) {
			t.leaves[strings.Join(d.values, "\x00")] = d
		}
	}
	reqs := requestsOf(ps)
	for _, dom := range domains {
		d, ok := t.leaves[strings.Join(dom.Values, "\x00")]
		if !ok {
			continue
		}
		for _, n := range d.nodes {
			n.fit = fitOf(&n.Node, ps, reqs)
		}
		p.into(d, int64(dom.Count), len(t.levels)-1)
	}
	t.Take(&Assignment{Nodes: p.out}, ps)
	return p.out
}

// DomainRoom is a domain of the tree as it stands: its nodes with the room
// they have left after what was taken, for showing, not placing.
type DomainRoom struct {
	// Values of the domain's labels, from the top level down to its own.
	Values   []string
	Children []DomainRoom // domains of the next level; nil at the lowest
	Nodes    []Node       // at the lowest level only; Free is a copy
}

// Rooms returns the top level's domains, each with its own below, in the
// order their first nodes were given.
func (t *Tree) Rooms() []DomainRoom {
	var walk func(ds []*domain) []DomainRoom
	walk = func(ds []*domain) []DomainRoom {
		out := make([]DomainRoom, 0, len(ds))
		for _, d := range ds {
			r := DomainRoom{Values: slices.Clone(d.values), Children: walk(d.children)}
			if d.children == nil {
				r.Children = nil
			}
			for _, n := range d.nodes {
				nn := n.Node
				nn.Free = maps.Clone(n.Free)
				r.Nodes = append(r.Nodes, nn)
			}
			out = append(out, r)
		}
		return out
	}
	return walk(t.roots)
}

// Replace finds new room for the pods a placed pod set had in lost domains
// (lowest-level domains whose nodes failed), each lost domain's pods inside
// the domain req binds them to: the one of their slice level, else of the
// required level; for a preferred level, that level's domain if it has room,
// else the lowest level above it whose domain has, else anywhere; for an
// unconstrained pod set, anywhere. The tree must hold the nodes as they are
// now, less what admitted placements take, the pod set's own kept domains
// included. It returns the pod set's domains after the move, Nodes holding
// the new pods only (for Take), or *NoFit naming the first lost domain that
// found no room; on success the new room is taken from the tree.
func (t *Tree) Replace(domains []Domain, lost []bool, ps PodSet, req Request) (*Assignment, error) {
	if len(t.levels) == 0 {
		return nil, ErrNoLevels
	}
	// Levels whose domain may take a lost domain's pods, tried in order; -1
	// is anywhere.
	scopes := []int{-1}
	level := func(name string) (int, error) {
		if i := slices.Index(t.levels, name); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("level %q is not one of the topology's levels %v", name, t.levels)
	}
	var err error
	switch {
	case req.SliceSize > 0 || req.SliceLevel != "":
		scopes[0], err = level(req.SliceLevel)
	case req.Mode == Required:
		scopes[0], err = level(req.Level)
	case req.Mode == Preferred:
		var l int
		l, err = level(req.Level)
		scopes = scopes[:0]
		for ; l >= 0; l-- {
			scopes = append(scopes, l)
		}
		scopes = append(scopes, -1)
	}
	if err != nil {
		return nil, err
	}
	kept := map[string]*Domain{}
	moved := map[string]int32{}
	reqs := requestsOf(ps)
	for i, d := range domains {
		if i >= len(lost) || !lost[i] {
			key := strings.Join(d.Values, "\x00")
			if kept[key] == nil {
				kept[key] = &Domain{Values: slices.Clone(d.Values)}
			}
			kept[key].Count += d.Count
			continue
		}
		perNode := t.within(d.Values, int64(d.Count), scopes, ps, reqs)
		if perNode == nil {
			return nil, t.noRoom(d, scopes, ps)
		}
		t.Take(&Assignment{Nodes: perNode}, ps)
		for n, k := range perNode {
			moved[n] += k
		}
	}
	out := t.assignment(moved)
	for _, d := range out.Domains {
		key := strings.Join(d.Values, "\x00")
		if kept[key] == nil {
			kept[key] = &Domain{Values: d.Values}
		}
		kept[key].Count += d.Count
	}
	out.Domains = out.Domains[:0]
	for _, d := range kept {
		out.Domains = append(out.Domains, *d)
	}
	slices.SortFunc(out.Domains, func(x, y Domain) int { return slices.Compare(x.Values, y.Values) })
	return out, nil
}

// within places n pods of ps in the first scope that holds them: the domain
// of that level sharing values, or (-1) the whole tree. It returns pods per
// node, or nil when no scope has room.
func (t *Tree) within(values []string, n int64, scopes []int, ps PodSet, reqs []request) map[string]int32 {
	lowest := len(t.levels) - 1
	for _, nd := range t.list {
		nd.fit = fitOf(&nd.Node, ps, reqs)
	}
	for _, r := range t.roots {
		measure(r, lowest, 1)
	}
	for _, l := range scopes {
		p := &placer{sliceLevel: lowest, size: 1, out: map[string]int32{}}
		if l < 0 {
			var total int64
			for _, r := range t.roots {
				total += r.units
			}
			if total < n {
				continue
			}
			// One domain as low as can hold them, else the fewest at the top.
			for lvl := lowest; lvl >= 0; lvl-- {
				if best := tightest(t.at(lvl), n); best != nil {
					p.into(best, n, lvl)
					return p.out
				}
			}
			p.spread(t.roots, n, 0)
			return p.out
		}
		if l >= len(values) {
			continue
		}
		i := slices.IndexFunc(t.at(l), func(d *domain) bool { return slices.Equal(d.values, values[:l+1]) })
		if i < 0 || t.at(l)[i].units < n {
			continue
		}
		p.into(t.at(l)[i], n, l)
		return p.out
	}
	return nil
}

// noRoom says which lost domain found no room, and where it looked.
func (t *Tree) noRoom(d Domain, scopes []int, ps PodSet) *NoFit {
	what := fmt.Sprintf("%d pods", d.Count)
	if ps.Shape != "" {
		what += " of " + ps.Shape
	}
	where := "on the topology's nodes"
	if l := scopes[len(scopes)-1]; l >= 0 && l < len(d.Values) {
		where = fmt.Sprintf("in %s %s", t.levels[l], d.Values[l])
	}
	return &NoFit{Message: fmt.Sprintf("%s lost with %s %s have no room %s",
		what, t.levels[len(t.levels)-1], d.Values[len(d.Values)-1], where)}
}
