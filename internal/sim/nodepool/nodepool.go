// Package nodepool describes the fake nodes the simulator creates: how many,
// their size, their labels and where they sit in a block/rack/host topology,
// and what to create or delete to get from the nodes there are to the pool.
// It does no I/O.
package nodepool

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berth-dev/berth/internal/sim/devices"
)

const (
	// OwnerLabel marks the nodes the simulator manages (by default).
	OwnerLabel = "berth.dev/sim-node"
	// PoolLabel names the pool that created a node: only those nodes are
	// deleted when the pool shrinks.
	PoolLabel = "berth.dev/sim-pool"
	// CapacityAnnotation carries the capacity the node reports once it is
	// initialised, as JSON; the default node-initialize stage reads it.
	CapacityAnnotation = "berth.dev/sim-capacity"

	// Topology labels, from the widest domain to the narrowest.
	BlockLabel    = "topology.berth.dev/block"
	RackLabel     = "topology.berth.dev/rack"
	HostnameLabel = corev1.LabelHostname
)

// Pool is a set of identical fake nodes named Prefix0, Prefix1, ...
type Pool struct {
	Count  int
	Prefix string
	// Capacity each node reports.
	Capacity corev1.ResourceList
	// Labels added to every node (the owner labels among them).
	Labels map[string]string
	// Taints on every node, e.g. to keep pods that do not tolerate fake
	// nodes off them in a cluster that also has real ones.
	Taints []corev1.Taint
	// Devices each node offers to Dynamic Resource Allocation, by driver
	// (package devices publishes them as its ResourceSlices).
	Devices devices.Devices
	// NodesPerRack > 0 labels nodes with racks of that many nodes;
	// RacksPerBlock > 0 groups racks into blocks.
	NodesPerRack, RacksPerBlock int
}

// DefaultCapacity is a large node: 32 CPUs, 256 GiB, 110 pods.
func DefaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

// Validate reports what is wrong with the pool, naming the setting.
func (p Pool) Validate() error {
	switch {
	case p.Count < 0:
		return fmt.Errorf("nodes: %d is negative", p.Count)
	case p.NodesPerRack < 0:
		return fmt.Errorf("nodes-per-rack: %d is negative", p.NodesPerRack)
	case p.RacksPerBlock < 0:
		return fmt.Errorf("racks-per-block: %d is negative", p.RacksPerBlock)
	case p.RacksPerBlock > 0 && p.NodesPerRack == 0:
		return fmt.Errorf("racks-per-block needs nodes-per-rack")
	}
	if errs := validation.IsDNS1123Subdomain(p.Prefix + "0"); len(errs) > 0 {
		return fmt.Errorf("node name prefix %q: %s", p.Prefix, strings.Join(errs, "; "))
	}
	for _, t := range p.Taints {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Errorf("node taint %q: %s", t.Key, strings.Join(errs, "; "))
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return fmt.Errorf("node taint %s: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Key, t.Effect)
		}
	}
	if err := p.Devices.Validate(); err != nil {
		return err
	}
	for k, v := range p.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("node label %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("node label %s=%q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

// Name is the name of the i-th node.
func (p Pool) Name(i int) string { return p.Prefix + strconv.Itoa(i) }

// Node is the i-th node as it is created: labels and the capacity
// annotation; its status is the simulator's to fill in.
func (p Pool) Node(i int) *corev1.Node {
	name := p.Name(i)
	labels := map[string]string{
		HostnameLabel:          name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
		// The beta labels too, as a kubelet sets them: otherwise the node
		// lifecycle controller adds them, one more write per node.
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
		PoolLabel:                 poolValue(p.Prefix),
	}
	if p.NodesPerRack > 0 {
		rack := i / p.NodesPerRack
		labels[RackLabel] = "rack-" + strconv.Itoa(rack)
		if p.RacksPerBlock > 0 {
			labels[BlockLabel] = "block-" + strconv.Itoa(rack/p.RacksPerBlock)
		}
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	capacity := map[string]string{}
	for k, v := range p.Capacity {
		capacity[string(k)] = v.String()
	}
	capJSON, _ := json.Marshal(capacity) // a map of strings always marshals
	annotations := map[string]string{CapacityAnnotation: string(capJSON)}
	if d := p.Devices.Annotate(); d != "" {
		annotations[devices.Annotation] = d
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{Taints: p.Taints},
	}
}

// Reconcile returns what to create and what to delete so that the pool's
// nodes are exactly Prefix0..Prefix{Count-1}. existing are the names of the
// nodes this pool made before; nodes it did not make are never deleted.
func (p Pool) Reconcile(existing []string) (create []*corev1.Node, remove []string) {
	have := map[string]bool{}
	for _, n := range existing {
		have[n] = true
		if i, ok := p.index(n); !ok || i >= p.Count {
			remove = append(remove, n)
		}
	}
	for i := range p.Count {
		if !have[p.Name(i)] {
			create = append(create, p.Node(i))
		}
	}
	sort.Strings(remove)
	return create, remove
}

// Owns reports whether this pool made the node.
func (p Pool) Owns(n *corev1.Node) bool { return n.Labels[PoolLabel] == poolValue(p.Prefix) }

func (p Pool) index(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, p.Prefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0 && strconv.Itoa(i) == rest
}

// poolValue turns a name prefix into a label value.
func poolValue(prefix string) string {
	v := strings.Trim(prefix, "-_.")
	if len(v) > validation.LabelValueMaxLength {
		v = v[:validation.LabelValueMaxLength]
	}
	if v == "" {
		return "default"
	}
	return v
}
