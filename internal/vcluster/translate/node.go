package translate

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VirtualNode is the virtual cluster's view of a host node that runs tenant
// Pods: its name, capacity, conditions, OS and architecture, so `kubectl get
// nodes` and `kubectl get pods -o wide` make sense inside; of its labels
// only those shown (the keys its tenants may select nodes by,
// Placement.NodeLabels) and its hostname (its name already). Its addresses,
// versions and machine identifiers are the host's alone: they would help a
// tenant map and reach the host. Taints are left out: nothing schedules in
// the virtual cluster.
func VirtualNode(host *corev1.Node, shown []string) *corev1.Node {
	labels := map[string]string{NodeLabel: "true", corev1.LabelHostname: host.Name}
	for _, k := range shown {
		if v, ok := host.Labels[k]; ok {
			labels[k] = v
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: host.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Unschedulable: host.Spec.Unschedulable},
		Status: corev1.NodeStatus{
			Capacity: host.Status.Capacity.DeepCopy(), Allocatable: host.Status.Allocatable.DeepCopy(),
			Conditions: append([]corev1.NodeCondition(nil), host.Status.Conditions...),
			NodeInfo: corev1.NodeSystemInfo{OperatingSystem: host.Status.NodeInfo.OperatingSystem,
				Architecture: host.Status.NodeInfo.Architecture},
		},
	}
}

// NodeChanged reports whether the virtual node is out of date with want
// (VirtualNode of its host node), heartbeats aside: a heartbeat alone is
// not worth a write per node every few seconds.
func NodeChanged(want, have *corev1.Node) (labels, status bool) {
	strip := func(cs []corev1.NodeCondition) []corev1.NodeCondition {
		out := make([]corev1.NodeCondition, len(cs))
		for i, c := range cs {
			c.LastHeartbeatTime = metav1.Time{}
			out[i] = c
		}
		return out
	}
	labels = !apiequality.Semantic.DeepEqual(want.Labels, have.Labels) || want.Spec.Unschedulable != have.Spec.Unschedulable
	ws, hs := want.Status, have.Status
	ws.Conditions, hs.Conditions = strip(ws.Conditions), strip(hs.Conditions)
	hs.DaemonEndpoints, hs.Images, hs.VolumesInUse, hs.VolumesAttached, hs.Config, hs.RuntimeHandlers, hs.Features =
		ws.DaemonEndpoints, ws.Images, ws.VolumesInUse, ws.VolumesAttached, ws.Config, ws.RuntimeHandlers, ws.Features
	hs.DeclaredFeatures = ws.DeclaredFeatures
	status = !apiequality.Semantic.DeepEqual(ws, hs)
	return labels, status
}
