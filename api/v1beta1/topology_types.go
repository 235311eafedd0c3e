package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TopologyLevel is one level of a topology: the node label whose values name
// its domains.
type TopologyLevel struct {
	// NodeLabel whose value on a node names the node's domain at this level,
	// such as topology.berth.dev/rack.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	NodeLabel string `json:"nodeLabel"`
}

// TopologySpec lists a topology's levels, the widest first.
// +kubebuilder:validation:XValidation:rule="size(self.levels) >= 1",message="spec.levels: a Topology needs at least one level"
// +kubebuilder:validation:XValidation:rule="self.levels.all(l, self.levels.exists_one(m, m.nodeLabel == l.nodeLabel))",message="spec.levels: each nodeLabel may appear only once"
// +kubebuilder:validation:XValidation:rule="size(self.levels) == 0 || self.levels.all(l, l.nodeLabel != 'kubernetes.io/hostname' || l == self.levels[size(self.levels) - 1])",message="spec.levels: kubernetes.io/hostname may only be the lowest (last) level"
type TopologySpec struct {
	// Levels from the widest (a block, say) to the narrowest (a host).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Levels []TopologyLevel `json:"levels"`
}

// Topology describes how nodes are grouped into domains (blocks of racks of
// hosts, say) by their labels, for topology-aware placement: a
// ResourceFlavor names it in topologyName.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=topo
// +kubebuilder:printcolumn:name="Levels",type=string,JSONPath=`.spec.levels[*].nodeLabel`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Topology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TopologySpec `json:"spec"`
}

// TopologyList is a list of Topologies.
// +kubebuilder:object:root=true
type TopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topology `json:"items"`
}

func init() { register(&Topology{}, &TopologyList{}) }
