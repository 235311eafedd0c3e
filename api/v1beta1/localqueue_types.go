package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalQueueSpec points a namespace's queue at a ClusterQueue.
type LocalQueueSpec struct {
	// ClusterQueue whose quota this queue's workloads are admitted against.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterQueue is immutable"
	ClusterQueue string `json:"clusterQueue"`

	// StopPolicy pauses admission from this queue (Hold) or also evicts its
	// admitted workloads (HoldAndDrain).
	// +optional
	// +kubebuilder:default=None
	StopPolicy StopPolicy `json:"stopPolicy,omitempty"`

	// FairSharing.Weight is this queue's share of admission when its
	// ClusterQueue orders by usage (admissionScope UsageBasedAdmissionFairSharing;
	// read only there): its recent usage is divided by it. Default 1; 0 puts
	// its workloads after those of every queue with a weight.
	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`

	// Budget caps the resource-time this queue's workloads may use over a
	// window, within what its ClusterQueue allows: once spent, the queue
	// admits nothing until the window frees some (docs/budgets.md). A
	// LocalQueue has no quota of its own to stay within, so whenSpent is
	// Stop.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.whenSpent == 'Stop'",message="a LocalQueue's budget can only stop it (whenSpent: Stop): it has no nominal quota of its own"
	Budget *Budget `json:"budget,omitempty"`
}

// LocalQueueFairSharingStatus is what a LocalQueue has used lately, as its
// ClusterQueue's admission fair sharing counts it.
type LocalQueueFairSharingStatus struct {
	// +optional
	AdmissionFairSharingStatus *AdmissionFairSharingStatus `json:"admissionFairSharingStatus,omitempty"`
}

// AdmissionFairSharingStatus is a LocalQueue's decayed usage: a running
// average of the quota its workloads held, halving every half-life
// (berth controller --admission-fair-sharing-half-life).
type AdmissionFairSharingStatus struct {
	// ConsumedResources is the decayed usage, by resource, as of LastUpdate.
	// +optional
	ConsumedResources corev1.ResourceList `json:"consumedResources,omitempty"`
	// LastUpdate is when the usage held was last taken in.
	LastUpdate metav1.Time `json:"lastUpdate"`
	// WeightedUsage is what orders the queue's workloads, as of LastUpdate:
	// ConsumedResources weighed by resource (berth controller
	// --admission-fair-sharing-resource-weights) and divided by the queue's
	// weight; lower goes first. Unset for a queue of weight 0, which goes
	// after every other.
	// +optional
	WeightedUsage *resource.Quantity `json:"weightedUsage,omitempty"`
}

// LocalQueueStatus is what the controller reports about a LocalQueue.
type LocalQueueStatus struct {
	// +optional
	PendingWorkloads int32 `json:"pendingWorkloads"`
	// +optional
	ReservingWorkloads int32 `json:"reservingWorkloads"`
	// +optional
	AdmittedWorkloads int32 `json:"admittedWorkloads"`

	// FlavorsUsage is the quota this queue's workloads use, by flavor and resource.
	// +optional
	// +listType=map
	// +listMapKey=name
	FlavorsUsage []FlavorUsage `json:"flavorsUsage,omitempty"`

	// Conditions: Active says whether the queue can admit, and why not;
	// BudgetSpent whether its budget holds it back.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Budget: set while spec.budget is.
	// +optional
	Budget *BudgetStatus `json:"budget,omitempty"`

	// FairSharing: set while its ClusterQueue orders by usage.
	// +optional
	FairSharing *LocalQueueFairSharingStatus `json:"fairSharing,omitempty"`
}

// LocalQueue is where a namespace's users submit work: jobs name it in the
// berth.dev/queue-name label.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lq;queue
// +kubebuilder:printcolumn:name="ClusterQueue",type=string,JSONPath=`.spec.clusterQueue`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingWorkloads`
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admittedWorkloads`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LocalQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LocalQueueSpec   `json:"spec,omitempty"`
	Status LocalQueueStatus `json:"status,omitempty"`
}

// LocalQueueList is a list of LocalQueues.
// +kubebuilder:object:root=true
type LocalQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalQueue `json:"items"`
}

func init() { register(&LocalQueue{}, &LocalQueueList{}) }
