package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkerClusterSpec says how to reach a worker cluster.
type WorkerClusterSpec struct {
	// KubeconfigSecret names a Secret in berth's namespace (berth-system)
	// whose key "kubeconfig" holds the worker's kubeconfig. It may not run a
	// program (exec), use an auth-provider plugin, or name a file (token,
	// certificate, key or CA paths): credentials and certificates are inline.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	KubeconfigSecret string `json:"kubeconfigSecret"`
}

// WorkerClusterStatus reports the connection.
type WorkerClusterStatus struct {
	// Conditions: Active, True while berth reaches the worker's API server
	// (reason Connected); False with reason SecretNotFound, BadKubeconfig or
	// Unreachable, and a message saying what is wrong.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkerClusterActive is the condition that says whether berth reaches a
// worker cluster.
const WorkerClusterActive = "Active"

// WorkerCluster is a Kubernetes cluster berth connects to from this one, the
// manager, as a place to run work.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wc
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkerCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WorkerClusterSpec `json:"spec"`
	// +optional
	Status WorkerClusterStatus `json:"status,omitempty"`
}

// WorkerClusterList is a list of WorkerClusters.
// +kubebuilder:object:root=true
type WorkerClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkerCluster `json:"items"`
}

func init() { register(&WorkerCluster{}, &WorkerClusterList{}) }
