package dashboard

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller/queues"
	nodes "github.com/berth-dev/berth/internal/controller/topology"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/topology"
	"github.com/berth-dev/berth/internal/workload"
)

// TopologyView is a topology flavor's nodes in their domains (blocks of
// racks of hosts, say), each domain with the room it has and the gangs
// placed in it: what berth's placement sees, so that a gang waiting for
// room can be told from one waiting for quota.
type TopologyView struct {
	Flavor   string `json:"flavor"`
	Topology string `json:"topology"`
	// Levels are the topology's node labels, the widest first.
	Levels  []string     `json:"levels"`
	Domains []DomainView `json:"domains"`
	// Left names the flavor's nodes placement leaves out, and why.
	Left []string `json:"left,omitempty"`
}

// DomainView is one domain of a level.
type DomainView struct {
	Level string `json:"level"` // its node label
	Name  string `json:"name"`  // the label's value
	// Room is, per resource, its nodes' allocatable and what placement
	// may still give: allocatable less the pods bound there and the room
	// admitted gangs hold.
	Room  []Room     `json:"room"`
	Gangs []GangView `json:"gangs,omitempty"`
	// Domains of the next level; at the lowest level, Nodes instead.
	Domains []DomainView `json:"domains,omitempty"`
	Nodes   []NodeRoom   `json:"nodes,omitempty"`
}

// Room is one resource of a domain or node.
type Room struct {
	Resource    string `json:"resource"`
	Allocatable string `json:"allocatable"`
	Free        string `json:"free"`
}

// NodeRoom is one node of a lowest-level domain.
type NodeRoom struct {
	Name string `json:"name"`
	Room []Room `json:"room"`
}

// GangView is an admitted workload with pods placed in a domain.
type GangView struct {
	Workload     string `json:"workload"` // namespace/name
	ClusterQueue string `json:"clusterQueue"`
	Pods         int32  `json:"pods"` // in this domain
}

// TopologyInput is what DrawTopology reads of the cluster.
type TopologyInput struct {
	Flavor   *berthv1.ResourceFlavor
	Topology *berthv1.Topology
	Nodes    []corev1.Node
	// Pods bound to nodes; those that ended take nothing.
	Pods []corev1.Pod
	// Workloads of the cluster; those holding quota with a placement in the
	// flavor are drawn.
	Workloads []berthv1.Workload
}

// DrawTopology works out the flavor's TopologyView with the admission
// core's own placement tree (core.Cluster.Topology), so the room shown is
// the room the next admission would count on.
func DrawTopology(in TopologyInput) (TopologyView, error) {
	f := queues.FlavorOf(in.Flavor)
	levels := make([]string, 0, len(in.Topology.Spec.Levels))
	for _, l := range in.Topology.Spec.Levels {
		levels = append(levels, l.NodeLabel)
	}
	c := core.NewCluster()
	c.SetFlavor(f)
	c.SetTopology(in.Topology.Name, levels)

	used := map[string]map[string]int64{}
	for i := range in.Pods {
		p := &in.Pods[i]
		for r, q := range nodes.PodUsage(p) {
			if used[p.Spec.NodeName] == nil {
				used[p.Spec.NodeName] = map[string]int64{}
			}
			used[p.Spec.NodeName][r] += q
		}
	}
	allocatable := map[string]map[string]int64{}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		c.SetNode(nodes.NodeOf(n, used[n.Name]))
		allocatable[n.Name] = map[string]int64{}
		for r, q := range n.Status.Allocatable {
			if shown(string(r)) {
				allocatable[n.Name][string(r)] = core.Milli(q)
			}
		}
	}
	// The gangs in each domain of the lowest level, by its values joined.
	gangs := map[string][]GangView{}
	for i := range in.Workloads {
		w := &in.Workloads[i]
		if !workload.HasQuota(w) || w.Status.Admission == nil || workload.IsFinished(w) {
			continue
		}
		a := workload.AdmittedOf(w)
		mine := false
		for _, p := range a.Placements {
			if p.Flavor != f.Name {
				continue
			}
			mine = true
			for _, d := range p.Domains {
				key := strings.Join(d.Values, "\x00")
				gangs[key] = addGang(gangs[key], GangView{Workload: a.Key, ClusterQueue: a.ClusterQueue, Pods: d.Count})
			}
		}
		if mine {
			c.AddAdmitted(a)
		}
	}
	tree, err := c.Topology(f.Name)
	if err != nil {
		return TopologyView{}, err
	}
	out := TopologyView{Flavor: f.Name, Topology: in.Topology.Name, Levels: levels, Left: tree.Left}
	out.Domains = drawDomains(tree.Rooms(), levels, allocatable, gangs)
	return out, nil
}

func drawDomains(rooms []topology.DomainRoom, levels []string, allocatable map[string]map[string]int64,
	gangs map[string][]GangView) []DomainView {
	out := make([]DomainView, 0, len(rooms))
	for _, r := range rooms {
		d, _, _ := drawDomain(r, levels, allocatable, gangs)
		out = append(out, d)
	}
	return out
}

// drawDomain draws r and returns its allocatable and free room, summed
// over its nodes, in milli-units.
func drawDomain(r topology.DomainRoom, levels []string, allocatable map[string]map[string]int64,
	gangs map[string][]GangView) (d DomainView, alloc, free map[string]int64) {
	d = DomainView{Level: levels[len(r.Values)-1], Name: r.Values[len(r.Values)-1]}
	alloc, free = map[string]int64{}, map[string]int64{}
	for _, child := range r.Children {
		cd, calloc, cfree := drawDomain(child, levels, allocatable, gangs)
		d.Domains = append(d.Domains, cd)
		sum(alloc, calloc)
		sum(free, cfree)
		for _, g := range cd.Gangs {
			d.Gangs = addGang(d.Gangs, g)
		}
	}
	if r.Children == nil {
		d.Gangs = slices.Clone(gangs[strings.Join(r.Values, "\x00")])
	}
	for _, n := range r.Nodes {
		nalloc, nfree := map[string]int64{}, map[string]int64{}
		for res, q := range allocatable[n.Name] {
			nalloc[res], nfree[res] = q, n.Free[res]
		}
		d.Nodes = append(d.Nodes, NodeRoom{Name: n.Name, Room: roomOf(nalloc, nfree)})
		sum(alloc, nalloc)
		sum(free, nfree)
	}
	d.Room = roomOf(alloc, free)
	slices.SortFunc(d.Gangs, func(a, b GangView) int {
		return cmp.Or(cmp.Compare(b.Pods, a.Pods), cmp.Compare(a.Workload, b.Workload))
	})
	return d, alloc, free
}

// addGang adds g to gangs, summing its pods with an entry of the same
// workload.
func addGang(gangs []GangView, g GangView) []GangView {
	for i := range gangs {
		if gangs[i].Workload == g.Workload {
			gangs[i].Pods += g.Pods
			return gangs
		}
	}
	return append(gangs, g)
}

func sum(into, from map[string]int64) {
	for r, q := range from {
		into[r] += q
	}
}

func roomOf(alloc, free map[string]int64) []Room {
	out := make([]Room, 0, len(alloc))
	for r, q := range alloc {
		out = append(out, Room{Resource: r, Allocatable: core.FormatQuantity(r, q), Free: core.FormatQuantity(r, free[r])})
	}
	slices.SortFunc(out, func(a, b Room) int { return cmp.Compare(roomOrder(a.Resource), roomOrder(b.Resource)) })
	return out
}

// shown says whether a node resource is drawn: cpu, memory, pods and
// extended resources (gpus, say); not storage or huge pages, which berth's
// queues rarely count.
func shown(r string) bool {
	return r == string(corev1.ResourceCPU) || r == string(corev1.ResourceMemory) || r == string(corev1.ResourcePods) ||
		strings.Contains(r, "/")
}

func roomOrder(r string) string {
	switch r {
	case string(corev1.ResourceCPU):
		return "0"
	case string(corev1.ResourceMemory):
		return "1"
	case string(corev1.ResourcePods):
		return "2"
	}
	return "3" + r
}
