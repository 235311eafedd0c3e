package core

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/berth-dev/berth/internal/topology"
)

// Placement is the room a topology-aware pod set takes on the nodes of its
// flavor: its pods (requests and tolerations of one) in domains.
type Placement struct {
	Flavor string
	// Name is the pod set's name, Request what it asked for (a pod set
	// placed without asking is Unconstrained): a placement that loses
	// nodes is repaired within what it asked for (Repairs).
	Name    string
	Request topology.Request
	PodSet  topology.PodSet
	Domains []topology.Domain
}

// SetTopology adds or replaces a Topology. One stored without levels is
// kept as such: the queues of the flavors that use it go inactive, saying
// so, rather than anything indexing an empty list.
func (c *Cluster) SetTopology(name string, levels []string) {
	c.topologies[name] = slices.Clone(levels)
	clear(c.rooms)
	c.refreshActive()
}

// DeleteTopology removes a Topology; queues of the flavors that use it go
// inactive until it is back.
func (c *Cluster) DeleteTopology(name string) {
	delete(c.topologies, name)
	clear(c.rooms)
	c.refreshActive()
}

// SetNode adds or replaces a node, its Free being what the pods bound to it
// leave, pods of topology-placed workloads excepted: their placements count
// for them.
func (c *Cluster) SetNode(n topology.Node) {
	old, ok := c.nodes[n.Name]
	c.nodes[n.Name] = n
	if !ok || !onlyFreeChanged(old, n) {
		clear(c.rooms)
		return
	}
	// Pods bound to it came or went, or a heartbeat changed nothing: the
	// rooms that hold it change by as much.
	delta := map[string]int64{}
	for r, v := range n.Free {
		if v != old.Free[r] {
			delta[r] = v - old.Free[r]
		}
	}
	if len(delta) > 0 {
		for _, r := range c.rooms {
			r.t.AddFree(n.Name, delta)
		}
	}
}

// onlyFreeChanged reports whether a and b differ at most in how much of
// each resource is free (the same resources listed).
func onlyFreeChanged(a, b topology.Node) bool {
	if len(a.Free) != len(b.Free) {
		return false
	}
	for r := range a.Free {
		if _, ok := b.Free[r]; !ok {
			return false
		}
	}
	a.Free, b.Free = nil, nil
	return reflect.DeepEqual(a, b)
}

// Node returns a node as last set.
func (c *Cluster) Node(name string) (topology.Node, bool) {
	n, ok := c.nodes[name]
	return n, ok
}

// DeleteNode removes a node.
func (c *Cluster) DeleteNode(name string) {
	if _, ok := c.nodes[name]; ok {
		clear(c.rooms)
	}
	delete(c.nodes, name)
}

// topologyProblem says why a ClusterQueue's topology flavors cannot place
// anything, or "".
func (c *Cluster) topologyProblem(q *cqNode) string {
	for _, rg := range q.spec.ResourceGroups {
		for _, fq := range rg.Flavors {
			f := c.flavors[fq.Name]
			if f == nil || f.TopologyName == "" {
				continue
			}
			levels, ok := c.topologies[f.TopologyName]
			switch {
			case !ok:
				return fmt.Sprintf("ResourceFlavor %s: Topology %s not found", f.Name, f.TopologyName)
			case len(levels) == 0:
				return fmt.Sprintf("ResourceFlavor %s: Topology %s has no levels", f.Name, f.TopologyName)
			}
		}
	}
	return ""
}

func (c *Cluster) addPlacements(a *Admitted) {
	for i, p := range a.Placements {
		if c.placedIn[p.Flavor] == nil {
			c.placedIn[p.Flavor] = map[string]*Admitted{}
		}
		c.placedIn[p.Flavor][a.Key] = a
		if r := c.rooms[p.Flavor]; r != nil && !slices.ContainsFunc(a.Placements[:i], func(q Placement) bool { return q.Flavor == p.Flavor }) {
			r.hold(a)
		}
	}
}

func (c *Cluster) removePlacements(a *Admitted) {
	for _, p := range a.Placements {
		delete(c.placedIn[p.Flavor], a.Key)
		if r := c.rooms[p.Flavor]; r != nil {
			r.release(a.Key)
		}
	}
}

// room is a topology flavor's nodes in its topology less what admitted
// workloads' placements hold, kept as workloads are admitted and released:
// building it reads every node and placement, which a cycle at cluster
// scale cannot afford each time. Changes to nodes, topologies or flavors
// drop it, to be built again when next needed.
type room struct {
	f    *Flavor
	t    *topology.Tree
	held map[string][]heldPods // by workload key
}

// heldPods are the pods one placement holds, node by node.
type heldPods struct {
	nodes map[string]int32
	ps    topology.PodSet
}

// hold takes the room of a's placements in r's flavor.
func (r *room) hold(a *Admitted) {
	for _, p := range a.Placements {
		if p.Flavor == r.f.Name {
			ps := p.PodSet // read back from the API without the flavor's tolerations
			ps.Tolerations = append(slices.Clone(ps.Tolerations), r.f.Tolerations...)
			r.held[a.Key] = append(r.held[a.Key], heldPods{r.t.TakeDomains(p.Domains, ps), ps})
		}
	}
}

// release gives back what the workload's placements held.
func (r *room) release(key string) {
	for _, h := range r.held[key] {
		r.t.Give(h.nodes, h.ps)
	}
	delete(r.held, key)
}

// roomOf is the flavor's kept room, built when missing.
func (c *Cluster) roomOf(f *Flavor) (*room, error) {
	if r, ok := c.rooms[f.Name]; ok && r.f == f {
		return r, nil
	}
	r, err := c.buildRoom(f)
	if err != nil {
		return nil, err
	}
	c.rooms[f.Name] = r
	return r, nil
}

// buildRoom is the flavor's nodes in its topology less what every admitted
// placement in it holds.
func (c *Cluster) buildRoom(f *Flavor) (*room, error) {
	var nodes []topology.Node
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		n := c.nodes[name]
		if !hasLabels(n.Labels, f.NodeLabels) {
			continue
		}
		n.Free = maps.Clone(n.Free)
		nodes = append(nodes, n)
	}
	t, err := topology.Build(c.topologies[f.TopologyName], nodes)
	if err != nil {
		return nil, fmt.Errorf("Topology %s: %w", f.TopologyName, err)
	}
	r := &room{f: f, t: t, held: map[string][]heldPods{}}
	for _, key := range slices.Sorted(maps.Keys(c.placedIn[f.Name])) {
		r.hold(c.placedIn[f.Name][key])
	}
	return r, nil
}

// places is a view of the topology flavors' nodes for placing: the
// cluster's kept rooms, which place leaves as it found them (an admission
// then holds its room), or with private set, trees of its own that keep
// what is taken from them (repairs moving several workloads' pods).
type places struct {
	c       *Cluster
	private bool
	trees   map[string]*topology.Tree
}

func (c *Cluster) newPlaces() *places { return &places{c: c} }

func (c *Cluster) privatePlaces() *places {
	return &places{c: c, private: true, trees: map[string]*topology.Tree{}}
}

// tree is the flavor's nodes in its topology, less what admitted workloads'
// placements take.
func (pl *places) tree(f *Flavor) (*topology.Tree, error) {
	if !pl.private {
		r, err := pl.c.roomOf(f)
		if err != nil {
			return nil, err
		}
		return r.t, nil
	}
	if t, ok := pl.trees[f.Name]; ok {
		return t, nil
	}
	r, err := pl.c.buildRoom(f)
	if err != nil {
		return nil, err
	}
	pl.trees[f.Name] = r.t
	return r.t, nil
}

// Topology is a topology flavor's nodes in its domains as the next
// admission cycle would see them, the room admitted workloads' placements
// hold taken: for showing it (the dashboard), not for admitting.
func (c *Cluster) Topology(flavor string) (*topology.Tree, error) {
	f, ok := c.flavors[flavor]
	if !ok {
		return nil, fmt.Errorf("ResourceFlavor %s not found", flavor)
	}
	_, known := c.topologies[f.TopologyName]
	switch {
	case f.TopologyName == "":
		return nil, fmt.Errorf("ResourceFlavor %s has no topologyName", flavor)
	case !known:
		return nil, fmt.Errorf("ResourceFlavor %s: Topology %s not found", flavor, f.TopologyName)
	}
	return c.privatePlaces().tree(f)
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// place finds where each topology-aware pod set of w goes, in the flavor
// its assignment a gave it, records it in a, and takes that room from this
// cycle's trees. When one does not fit, nothing is taken and Pending says why.
func (pl *places) place(w *Workload, a *Assignment) ([]Placement, *Pending) {
	var out []Placement
	type took struct {
		t  *topology.Tree
		a  *topology.Assignment
		ps topology.PodSet
	}
	var taken []took
	// What a pod set takes keeps later ones of w off its room; all is
	// given back at the end, for the admission to hold it.
	defer func() {
		for _, tk := range taken {
			tk.t.Give(tk.a.Nodes, tk.ps)
		}
	}()
	undo := func() {
		for i := range a.PodSets {
			a.PodSets[i].Topology = nil
		}
	}
	for i, ps := range w.PodSets {
		psa := &a.PodSets[i]
		req := ps.Topology
		if req == nil {
			// Placed anyway when its pods can be steered and its one flavor
			// has a topology: its room is counted like a gang's.
			if !ps.Steerable {
				continue
			}
			if _, why := pl.flavorOf(psa); why != "" {
				continue
			}
			req = &topology.Request{Mode: topology.Unconstrained}
		}
		prefix := ""
		if len(w.PodSets) > 1 {
			prefix = "pod set " + ps.Name + ": "
		}
		f, why := pl.flavorOf(psa)
		if why != "" {
			undo()
			return nil, &Pending{Reason: Inadmissible, Message: prefix + why}
		}
		t, err := pl.tree(f)
		if err != nil {
			undo()
			return nil, &Pending{Reason: QueueInactive, Message: fmt.Sprintf("%sResourceFlavor %s: %v", prefix, f.Name, err)}
		}
		tps := topology.PodSet{Count: psa.Count, Requests: ps.Requests,
			Tolerations: append(slices.Clone(ps.Tolerations), f.Tolerations...), Allows: Allows(ps), Shape: ShapeOf(ps.Requests)}
		ta, err := t.Place(tps, *req)
		var nf *topology.NoFit
		switch {
		case errors.As(err, &nf):
			undo()
			stable, _, _ := strings.Cut(nf.Message, ";")
			return nil, &Pending{Reason: NoFit, Message: prefix + nf.Message, Stable: prefix + stable}
		case err != nil:
			undo()
			return nil, &Pending{Reason: Inadmissible, Message: fmt.Sprintf("%stopology request in flavor %s: %v", prefix, f.Name, err)}
		}
		t.Take(ta, tps)
		taken = append(taken, took{t, ta, tps})
		psa.Topology = ta
		tps.Count = 0
		tps.Tolerations = ps.Tolerations // the flavor's are added where the placement is used, as when read back
		out = append(out, Placement{Flavor: f.Name, Name: ps.Name, Request: *req, PodSet: tps, Domains: ta.Domains})
	}
	return out, nil
}

// placedSet reports whether pod set i of w is placed under assignment a:
// it asks for a topology, or it can be steered and its one flavor has a
// topology. It allocates nothing: the choice of victims asks it at every
// step, for every Job.
func (c *Cluster) placedSet(w *Workload, a *Assignment, i int) bool {
	ps := w.PodSets[i]
	if ps.Topology != nil {
		return true
	}
	if !ps.Steerable {
		return false
	}
	name := ""
	for _, f := range a.PodSets[i].Flavors {
		if name != "" && f != name {
			return false
		}
		name = f
	}
	f := c.flavors[name]
	return f != nil && f.TopologyName != ""
}

// placeable reports whether w's placed pod sets, in the flavors a gives
// them, can be placed on what admitted workloads leave now (so, during the
// choice of victims, without those removed so far).
func (c *Cluster) placeable(w *Workload, a *Assignment) bool {
	placed := false
	for i := range w.PodSets {
		placed = placed || c.placedSet(w, a, i)
	}
	if !placed {
		return true
	}
	try := *a
	try.PodSets = slices.Clone(a.PodSets)
	_, p := c.newPlaces().place(w, &try)
	return p == nil
}

// topologyNeeds are the flavor-resources of w's placed pod sets: where
// preemption must make room when its quota fits but no domain does.
func (c *Cluster) topologyNeeds(w *Workload, a *Assignment) []FlavorResource {
	var out []FlavorResource
	for i := range w.PodSets {
		if !c.placedSet(w, a, i) {
			continue
		}
		for _, r := range sortedKeys(a.PodSets[i].Flavors) {
			fr := FlavorResource{Flavor: a.PodSets[i].Flavors[r], Resource: r}
			if !slices.Contains(out, fr) {
				out = append(out, fr)
			}
		}
	}
	return out
}

// flavorOf is the one flavor a topology-aware pod set got for all its
// resources, with a topology.
func (pl *places) flavorOf(psa *PodSetAssignment) (*Flavor, string) {
	var name string
	for _, r := range sortedKeys(psa.Flavors) {
		switch f := psa.Flavors[r]; {
		case name == "":
			name = f
		case f != name:
			return nil, fmt.Sprintf("a pod set with a topology request must get one flavor for all its resources, got %s and %s", name, f)
		}
	}
	f := pl.c.flavors[name]
	if f == nil || f.TopologyName == "" {
		return nil, fmt.Sprintf("flavor %q has no topology", name)
	}
	return f, ""
}

// Allows is whether the pod set's node selector and required node affinity
// let its pods run on a node with these labels.
func Allows(ps PodSet) func(map[string]string) bool {
	if len(ps.NodeSelector) == 0 && ps.NodeAffinity == nil {
		return nil
	}
	var aff *nodeaffinity.LazyErrorNodeSelector
	if ps.NodeAffinity != nil {
		aff = nodeaffinity.NewLazyErrorNodeSelector(ps.NodeAffinity)
	}
	return func(labels map[string]string) bool {
		if !hasLabels(labels, ps.NodeSelector) {
			return false
		}
		if aff != nil {
			ok, err := aff.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}})
			return err == nil && ok
		}
		return true
	}
}

// ShapeOf describes one pod's requests for messages: "4 cpu, 8Gi memory".
func ShapeOf(requests map[string]int64) string {
	var parts []string
	for _, r := range sortedKeys(requests) {
		if requests[r] > 0 {
			parts = append(parts, FormatQuantity(r, requests[r])+" "+r)
		}
	}
	return strings.Join(parts, ", ")
}
