package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSet is a group of identical pods, with what placement needs to know of
// them, rather than a whole pod template: objects stay small, and the API
// server, which is the bottleneck, has less to store and send.
// +kubebuilder:validation:XValidation:rule="!has(self.minCount) || self.minCount <= self.count",message="minCount must not be more than count"
// +kubebuilder:validation:XValidation:rule="!has(self.minCount) || !has(self.topologyRequest)",message="minCount (partial admission) together with a topologyRequest is not supported yet"
type PodSet struct {
	// Name of the pod set, unique in the workload.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Count of pods.
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`

	// MinCount allows partial admission: when Count pods do not fit in the
	// free quota, the workload is admitted with the most that do, if at
	// least MinCount (its admission says how many), rather than wait or
	// preempt others. Not with a topologyRequest yet.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinCount *int32 `json:"minCount,omitempty"`

	// Requests of one pod: containers, init containers and pod overhead
	// combined as the kube-scheduler counts them.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`

	// NodeSelector of the pods, as submitted.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the pods, as submitted.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// NodeAffinity is the pods' required node affinity, as submitted.
	// +optional
	NodeAffinity *corev1.NodeSelector `json:"nodeAffinity,omitempty"`

	// ResourceClaims of each pod (Dynamic Resource Allocation), as
	// submitted. When the controller maps DeviceClasses to quota resources
	// (--device-class-mappings), the devices their ResourceClaimTemplates
	// ask for count against quota as those resources.
	// +optional
	// +listType=atomic
	ResourceClaims []corev1.PodResourceClaim `json:"resourceClaims,omitempty"`

	// TopologyRequest asks for the pods to be placed close together in the
	// topology of their flavor; the flavor must have one (topologyName).
	// +optional
	TopologyRequest *TopologyRequest `json:"topologyRequest,omitempty"`
}

// TopologyRequest says how close together a pod set's pods must be, in
// the levels of its flavor's Topology. Exactly one of required, preferred
// and unconstrained is set.
// +kubebuilder:validation:XValidation:rule="(has(self.required) ? 1 : 0) + (has(self.preferred) ? 1 : 0) + (has(self.unconstrained) && self.unconstrained ? 1 : 0) == 1",message="topologyRequest: set exactly one of required, preferred and unconstrained"
// +kubebuilder:validation:XValidation:rule="has(self.sliceRequiredLevel) == has(self.sliceSize)",message="topologyRequest: sliceRequiredLevel and sliceSize go together"
type TopologyRequest struct {
	// Required level (a node label of the Topology): all pods in one domain
	// of it, or none admitted.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Required *string `json:"required,omitempty"`
	// Preferred level: all pods in one domain of it if one has room, else
	// in one domain of the lowest level above it that has, else in the
	// fewest domains.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Preferred *string `json:"preferred,omitempty"`
	// Unconstrained: anywhere in the topology's nodes, packed as tightly as
	// they allow.
	// +optional
	Unconstrained *bool `json:"unconstrained,omitempty"`
	// SliceRequiredLevel and SliceSize: each group of SliceSize pods in one
	// domain of this level (multi-host slices); SliceSize must divide the
	// pod count.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	SliceRequiredLevel *string `json:"sliceRequiredLevel,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	SliceSize *int32 `json:"sliceSize,omitempty"`
}

// WorkloadSpec is the work to admit.
// +kubebuilder:validation:XValidation:rule="self.podSets.map(p, p.count).sum() <= 100000",message="a workload may have at most 100000 pods"
type WorkloadSpec struct {
	// PodSets of the workload; all are admitted together or not at all.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	PodSets []PodSet `json:"podSets"`

	// QueueName is the LocalQueue, in the workload's namespace, to queue in.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	QueueName string `json:"queueName,omitempty"`

	// PriorityClassName is the WorkloadPriorityClass (or PriorityClass) the
	// priority came from.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Priority orders pending workloads (higher first) and decides who may
	// preempt whom. Resolved from PriorityClassName when the workload is made.
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Active false takes the workload out of its queue: if admitted it is
	// evicted, and it then waits (QuotaReserved False, reason Deactivated)
	// until Active is true or unset again. Unset is true.
	// +optional
	Active *bool `json:"active,omitempty"`

	// MaximumExecutionTimeSeconds is how long the workload may run, counted
	// over all its admissions (from Admitted to its quota's release): past
	// it, it is stopped and deactivated (reason
	// MaximumExecutionTimeExceeded). From its object's
	// berth.dev/max-exec-time-seconds label. Unset: no limit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaximumExecutionTimeSeconds *int32 `json:"maximumExecutionTimeSeconds,omitempty"`
}

// PodSetAssignment is what one pod set was given.
type PodSetAssignment struct {
	Name string `json:"name"`
	// Flavors assigned, by resource.
	// +optional
	Flavors map[corev1.ResourceName]string `json:"flavors,omitempty"`
	// ResourceUsage is the quota the pod set holds: requests times count.
	// +optional
	ResourceUsage corev1.ResourceList `json:"resourceUsage,omitempty"`
	// Count of pods admitted.
	Count int32 `json:"count"`
	// TopologyAssignment is where the pods go, for a pod set with a
	// topology request.
	// +optional
	TopologyAssignment *TopologyAssignment `json:"topologyAssignment,omitempty"`
}

// TopologyAssignment lists the domains of the lowest level that receive a
// pod set's pods, and how many each.
type TopologyAssignment struct {
	// Levels of the Topology (node labels), the widest first.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Levels []string `json:"levels"`
	// Domains by their label values, one per level, and pod counts.
	// +listType=atomic
	Domains []TopologyDomainAssignment `json:"domains"`
}

// TopologyDomainAssignment is one domain and how many pods it receives.
type TopologyDomainAssignment struct {
	// Values of the domain's labels, one per level.
	// +listType=atomic
	Values []string `json:"values"`
	Count  int32    `json:"count"`
}

// Admission is where a workload holds quota.
type Admission struct {
	// ClusterQueue holding the quota.
	ClusterQueue string `json:"clusterQueue"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	PodSetAssignments []PodSetAssignment `json:"podSetAssignments"`
	// Priority it was admitted at, when lower than its own: its
	// ClusterQueue's budget was spent (whenSpent: LowerPriority). It may be
	// preempted as work of this priority until its quota is given back.
	// +optional
	Priority *int32 `json:"priority,omitempty"`
}

// RequeueState tracks a workload sent back to the queue after eviction.
type RequeueState struct {
	// Count of requeues so far.
	// +optional
	Count *int32 `json:"count,omitempty"`
	// RequeueAt is when it may be considered again.
	// +optional
	RequeueAt *metav1.Time `json:"requeueAt,omitempty"`
	// PodsReadyTimeouts counts its evictions because its pods were not all
	// Ready in time (berth controller --wait-for-pods-ready), since it was
	// last activated.
	// +optional
	PodsReadyTimeouts *int32 `json:"podsReadyTimeouts,omitempty"`
}

// Workload condition types.
const (
	// QuotaReserved: the workload holds quota in a ClusterQueue. While False,
	// its message says why it is still pending.
	WorkloadQuotaReserved = "QuotaReserved"
	// Admitted: quota is reserved and every admission check passed; its pods may run.
	WorkloadAdmitted = "Admitted"
	// Evicted: the workload lost its admission; the reason says why.
	WorkloadEvicted = "Evicted"
	// Preempted: it was evicted to make room for another workload.
	WorkloadPreempted = "Preempted"
	// Finished: it ran to the end; its quota is released.
	WorkloadFinished = "Finished"
	// PodsReady (berth controller --wait-for-pods-ready only): True once
	// every pod of its current admission was Ready (or had succeeded) at
	// once; False after it was evicted because they were not, within the
	// timeout (reason PodsReadyTimeout), or deactivated after too many such
	// evictions (reason RequeuingLimitExceeded), until it is admitted
	// again. Unset while its pods are awaited, and before its first
	// admission.
	WorkloadPodsReady = "PodsReady"
)

// WorkloadStatus is the workload's place in the queue.
type WorkloadStatus struct {
	// Admission is set while the workload holds quota.
	// +optional
	Admission *Admission `json:"admission,omitempty"`

	// Conditions: QuotaReserved, Admitted, PodsReady, Evicted, Preempted,
	// Finished.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// +optional
	RequeueState *RequeueState `json:"requeueState,omitempty"`

	// AdmissionChecks holds the state of each admission check of the
	// ClusterQueue the workload reserves quota in. berth lists them, all
	// Pending, when it reserves quota; each check's controller then sets its
	// state.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	AdmissionChecks []AdmissionCheckState `json:"admissionChecks,omitempty"`

	// ClusterName is the worker cluster the workload runs on, when a
	// multicluster admission check dispatched it there.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClusterName string `json:"clusterName,omitempty"`

	// AccumulatedPastExecutionTimeSeconds is how long the workload ran in
	// its admissions before the current one: from Admitted to the quota's
	// release, each time.
	// +optional
	AccumulatedPastExecutionTimeSeconds *int32 `json:"accumulatedPastExecutionTimeSeconds,omitempty"`

	// ResourceRequests are what one pod of each pod set asks for as berth
	// counts it against quota, where that is more than spec.podSets say:
	// the devices its ResourceClaimTemplates ask for, as the controller's
	// --device-class-mappings count them. Written with the reason a
	// workload waits; empty once it is admitted (its admission says it).
	// +optional
	// +listType=map
	// +listMapKey=name
	ResourceRequests []PodSetRequest `json:"resourceRequests,omitempty"`
}

// PodSetRequest is what one pod of a pod set asks for.
type PodSetRequest struct {
	// Name of the pod set.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Resources one pod of it asks for.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// CheckState is how an admission check has decided on a workload.
// +kubebuilder:validation:Enum=Pending;Ready;Retry;Rejected
type CheckState string

const (
	// CheckPending: not decided yet. The workload holds its quota and waits.
	CheckPending CheckState = "Pending"
	// CheckReady: passed. Once every check is Ready the workload is Admitted.
	CheckReady CheckState = "Ready"
	// CheckRetry: not now. The workload gives its quota back and queues
	// again after a backoff.
	CheckRetry CheckState = "Retry"
	// CheckRejected: never. The workload is deactivated (spec.active false).
	CheckRejected CheckState = "Rejected"
)

// AdmissionCheckState is one check's decision on a workload.
type AdmissionCheckState struct {
	// Name of the AdmissionCheck.
	// +kubebuilder:validation:MaxLength=253
	Name  string     `json:"name"`
	State CheckState `json:"state"`
	// LastTransitionTime is when State last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	// Message says why, in words.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`
}

// Workload is a unit of work berth admits as a whole: made by berth for each
// queued Job, or created directly.
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wl
// +kubebuilder:printcolumn:name="Queue",type=string,JSONPath=`.spec.queueName`
// +kubebuilder:printcolumn:name="Reserved in",type=string,JSONPath=`.status.admission.clusterQueue`
// +kubebuilder:printcolumn:name="Admitted",type=string,JSONPath=`.status.conditions[?(@.type=="Admitted")].status`
// +kubebuilder:printcolumn:name="Finished",type=string,JSONPath=`.status.conditions[?(@.type=="Finished")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadSpec   `json:"spec,omitempty"`
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadList is a list of Workloads.
// +kubebuilder:object:root=true
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workload `json:"items"`
}

func init() { register(&Workload{}, &WorkloadList{}) }
