package topology

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/topology"
)

// NodeOf is what placement sees of a node: its labels and taints, whether
// it is Ready and schedulable, and its allocatable resources less used, in
// milli-units.
func NodeOf(n *corev1.Node, used map[string]int64) topology.Node {
	out := topology.Node{Name: n.Name, Labels: maps.Clone(n.Labels), Taints: n.Spec.Taints,
		Unschedulable: n.Spec.Unschedulable, Free: map[string]int64{}}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
			if !out.Ready {
				out.NotReadySince = c.LastTransitionTime.Time
			}
		}
	}
	for r, q := range n.Status.Allocatable {
		out.Free[string(r)] = core.Milli(q) - used[string(r)]
	}
	return out
}

// PodUsage is what a pod takes of its node, in milli-units, pods included:
// nothing when it has ended, or when its room is counted by its workload's
// placement (berth.dev/topology-placed).
func PodUsage(p *corev1.Pod) map[string]int64 {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed ||
		p.Labels[berthv1.TopologyPlacedLabel] != "" {
		return nil
	}
	out := map[string]int64{string(corev1.ResourcePods): 1000}
	for r, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		out[string(r)] += core.Milli(q)
	}
	return out
}
