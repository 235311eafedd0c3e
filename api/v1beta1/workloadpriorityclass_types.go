package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadPriorityClass gives workloads a priority for queueing and
// preemption, without affecting the priority of their pods on nodes. Jobs
// choose one with the berth.dev/priority-class label.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wpc
// +kubebuilder:printcolumn:name="Value",type=integer,JSONPath=`.value`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadPriorityClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Value is the priority; higher is more important.
	Value int32 `json:"value"`

	// Description says when to use this class.
	// +optional
	Description string `json:"description,omitempty"`
}

// WorkloadPriorityClassList is a list of WorkloadPriorityClasses.
// +kubebuilder:object:root=true
type WorkloadPriorityClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadPriorityClass `json:"items"`
}

func init() { register(&WorkloadPriorityClass{}, &WorkloadPriorityClassList{}) }
