package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceFlavorSpec describes one kind of capacity, such as on-demand or spot
// nodes, by the node labels and taints that identify it.
// +kubebuilder:validation:XValidation:rule="!has(self.topologyName) || (has(self.nodeLabels) && size(self.nodeLabels) > 0)",message="spec.topologyName: a flavor with a topology needs nodeLabels, to pick its nodes"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)",message="spec.topologyName cannot be changed or removed once set"
type ResourceFlavorSpec struct {
	// NodeLabels select the nodes of this flavor. Admitted pods get them as
	// a node selector.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`

	// NodeTaints are taints the nodes of this flavor carry. A workload is only
	// assigned this flavor if it tolerates them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	NodeTaints []corev1.Taint `json:"nodeTaints,omitempty"`

	// Tolerations are added to admitted pods, so they can run on tainted
	// nodes of this flavor.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// TopologyName names the Topology its nodes are arranged in, for pod
	// sets that ask for topology-aware placement. Such a flavor must have
	// nodeLabels (they pick its nodes), and keeps its topology once set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	TopologyName *string `json:"topologyName,omitempty"`
}

// ResourceFlavor is a kind of capacity that ClusterQueues hand out quota of.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rf;flavor
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceFlavor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ResourceFlavorSpec `json:"spec,omitempty"`
	// +optional
	Status ResourceFlavorStatus `json:"status,omitempty"`
}

// ResourceFlavorStatus is what the controller reports about a flavor.
type ResourceFlavorStatus struct {
	// Conditions: Terminating says, while the flavor is being deleted, which
	// admitted workloads still use it.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceFlavorList is a list of ResourceFlavors.
// +kubebuilder:object:root=true
type ResourceFlavorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceFlavor `json:"items"`
}

func init() { register(&ResourceFlavor{}, &ResourceFlavorList{}) }
