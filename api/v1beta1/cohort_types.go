package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CohortSpec places a cohort in a tree of cohorts and gives it quota of its own.
// +kubebuilder:validation:XValidation:rule="!has(self.parent) || size(self.parent) > 0",message="parent must not be empty when set"
// +kubebuilder:validation:XValidation:rule="!has(self.resourceGroups) || self.resourceGroups.all(a, self.resourceGroups.filter(b, b.flavors.exists(f, a.flavors.exists(g, g.name == f.name))).size() == 1)",message="a flavor may appear in only one resource group"
// +kubebuilder:validation:XValidation:rule="!has(self.resourceGroups) || self.resourceGroups.all(a, self.resourceGroups.filter(b, b.coveredResources.exists(r, r in a.coveredResources)).size() == 1)",message="a resource may be covered by only one resource group"
// +kubebuilder:validation:XValidation:rule="!has(self.resourceGroups) || self.resourceGroups.map(rg, size(rg.flavors)).sum() <= 64",message="a Cohort may list at most 64 flavors across its resource groups"
type CohortSpec struct {
	// Parent is the cohort this one borrows from and lends to. Unset: a root.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Parent string `json:"parent,omitempty"`

	// ResourceGroups is quota that belongs to the cohort itself, available to
	// every queue below it. Borrowing and lending limits apply towards the parent.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ResourceGroups []ResourceGroup `json:"resourceGroups,omitempty"`

	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`
}

// CohortStatus reports problems with the cohort, such as a cycle of parents.
type CohortStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Cohort is a group of ClusterQueues (and cohorts) that share idle quota.
// ClusterQueues join a cohort by naming it in spec.cohort; the Cohort object
// is only needed to give the cohort quota of its own or a parent.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cohort struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CohortSpec   `json:"spec,omitempty"`
	Status CohortStatus `json:"status,omitempty"`
}

// CohortList is a list of Cohorts.
// +kubebuilder:object:root=true
type CohortList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cohort `json:"items"`
}

func init() { register(&Cohort{}, &CohortList{}) }
