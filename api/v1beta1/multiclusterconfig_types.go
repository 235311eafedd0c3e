package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MultiClusterControllerName is the controllerName of an AdmissionCheck that
// dispatches workloads to worker clusters. Its parameters name a
// MultiClusterConfig (apiGroup berth.dev, kind MultiClusterConfig).
const MultiClusterControllerName = "berth.dev/multicluster"

// MultiClusterConfigSpec lists where workloads may run.
type MultiClusterConfigSpec struct {
	// Clusters names WorkerClusters, in order of preference: a workload
	// admitted by several at once runs on the first of them in this list.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	Clusters []string `json:"clusters"`
}

// MultiClusterConfig is a set of worker clusters a multicluster
// AdmissionCheck dispatches workloads to.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mcc
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.spec.clusters`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MultiClusterConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec MultiClusterConfigSpec `json:"spec"`
}

// MultiClusterConfigList is a list of MultiClusterConfigs.
// +kubebuilder:object:root=true
type MultiClusterConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MultiClusterConfig `json:"items"`
}

func init() { register(&MultiClusterConfig{}, &MultiClusterConfigList{}) }
