package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdmissionCheckParametersReference names the object that configures a
// check; its controller reads it, berth does not.
type AdmissionCheckParametersReference struct {
	// APIGroup of the parameters object.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	APIGroup string `json:"apiGroup"`
	// Kind of the parameters object.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$`
	Kind string `json:"kind"`
	// Name of the parameters object.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// AdmissionCheckSpec says which controller decides the check.
type AdmissionCheckSpec struct {
	// ControllerName identifies the controller that sets this check's state on
	// workloads, and its Active condition. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.controllerName is immutable"
	ControllerName string `json:"controllerName"`
	// Parameters, for the check's controller.
	// +optional
	Parameters *AdmissionCheckParametersReference `json:"parameters,omitempty"`
}

// AdmissionCheckStatus is written by the check's controller.
type AdmissionCheckStatus struct {
	// Conditions: Active, True while the check's controller is running and
	// its parameters are valid. A ClusterQueue that names a check that is not
	// Active admits nothing.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AdmissionCheckActive is the condition a check's controller sets while the
// check can be decided.
const AdmissionCheckActive = "Active"

// AdmissionCheck is a condition, decided by another controller, that a
// workload must pass after it reserves quota and before it may run. A
// ClusterQueue lists the checks its workloads go through in
// spec.admissionChecks.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Controller",type=string,JSONPath=`.spec.controllerName`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AdmissionCheck struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AdmissionCheckSpec `json:"spec"`
	// +optional
	Status AdmissionCheckStatus `json:"status,omitempty"`
}

// AdmissionCheckList is a list of AdmissionChecks.
// +kubebuilder:object:root=true
type AdmissionCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AdmissionCheck `json:"items"`
}

func init() { register(&AdmissionCheck{}, &AdmissionCheckList{}) }
