package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// QueueingStrategy orders a ClusterQueue's pending workloads.
// +kubebuilder:validation:Enum=StrictFIFO;BestEffortFIFO
type QueueingStrategy string

const (
	// StrictFIFO: the oldest workload of the highest priority blocks the
	// queue until it is admitted.
	StrictFIFO QueueingStrategy = "StrictFIFO"
	// BestEffortFIFO: a workload that does not fit steps aside and is looked
	// at again when something that could change the answer happens.
	BestEffortFIFO QueueingStrategy = "BestEffortFIFO"
)

// StopPolicy pauses a queue.
// +kubebuilder:validation:Enum=None;Hold;HoldAndDrain
type StopPolicy string

const (
	StopPolicyNone StopPolicy = "None"
	// Hold admits nothing new; admitted workloads run to the end.
	Hold StopPolicy = "Hold"
	// HoldAndDrain admits nothing new and evicts what is admitted.
	HoldAndDrain StopPolicy = "HoldAndDrain"
)

// ResourceQuota is the quota of one resource in one flavor.
// +kubebuilder:validation:XValidation:rule="!quantity(string(self.nominalQuota)).isLessThan(quantity('0'))",message="nominalQuota must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.borrowingLimit) || !quantity(string(self.borrowingLimit)).isLessThan(quantity('0'))",message="borrowingLimit must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || !quantity(string(self.lendingLimit)).isLessThan(quantity('0'))",message="lendingLimit must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.lendingLimit) || !quantity(string(self.lendingLimit)).isGreaterThan(quantity(string(self.nominalQuota)))",message="lendingLimit must not exceed nominalQuota"
type ResourceQuota struct {
	// Name of the resource, such as cpu, memory or nvidia.com/gpu.
	Name corev1.ResourceName `json:"name"`

	// NominalQuota is the amount this queue is guaranteed, and lends to its
	// cohort while it does not use it.
	NominalQuota resource.Quantity `json:"nominalQuota"`

	// BorrowingLimit caps how much more than NominalQuota this queue may take
	// from its cohort. Unset: no cap beyond what the cohort has free. Only
	// meaningful in a cohort.
	// +optional
	BorrowingLimit *resource.Quantity `json:"borrowingLimit,omitempty"`

	// LendingLimit caps how much of NominalQuota the cohort may borrow; the
	// rest is kept for this queue alone. Unset: all of it may be lent. Only
	// meaningful in a cohort.
	// +optional
	LendingLimit *resource.Quantity `json:"lendingLimit,omitempty"`
}

// FlavorQuotas are the quotas of one flavor for the resources of a group.
type FlavorQuotas struct {
	// Name of a ResourceFlavor.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Resources has one entry for each of the group's coveredResources.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Resources []ResourceQuota `json:"resources"`
}

// ResourceGroup is a set of resources that are assigned one flavor together:
// a pod set gets cpu and memory from the same flavor, for instance.
// +kubebuilder:validation:XValidation:rule="self.flavors.all(f, size(f.resources) == size(self.coveredResources) && f.resources.all(r, r.name in self.coveredResources))",message="each flavor must give a quota for exactly the group's coveredResources"
type ResourceGroup struct {
	// CoveredResources are the resources this group hands out.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	CoveredResources []corev1.ResourceName `json:"coveredResources"`

	// Flavors in the order they are tried.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Flavors []FlavorQuotas `json:"flavors"`
}

// PreemptionPolicy says which admitted workloads a pending one may evict.
// +kubebuilder:validation:Enum=Never;LowerPriority;LowerOrNewerEqualPriority;Any
type PreemptionPolicy string

const (
	PreemptionNever                     PreemptionPolicy = "Never"
	PreemptionLowerPriority             PreemptionPolicy = "LowerPriority"
	PreemptionLowerOrNewerEqualPriority PreemptionPolicy = "LowerOrNewerEqualPriority"
	PreemptionAny                       PreemptionPolicy = "Any"
)

// BorrowWithinCohort lets a workload preempt in other queues of the cohort
// to borrow their quota.
type BorrowWithinCohort struct {
	// Policy is Never or LowerPriority.
	// +kubebuilder:validation:Enum=Never;LowerPriority
	// +kubebuilder:default=Never
	Policy PreemptionPolicy `json:"policy,omitempty"`

	// MaxPriorityThreshold: only workloads of at most this priority may be
	// preempted to borrow.
	// +optional
	MaxPriorityThreshold *int32 `json:"maxPriorityThreshold,omitempty"`
}

// ClusterQueuePreemption are the preemption policies of a ClusterQueue.
// +kubebuilder:validation:XValidation:rule="!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) && self.borrowWithinCohort.policy != 'Never')",message="borrowWithinCohort requires reclaimWithinCohort other than Never"
type ClusterQueuePreemption struct {
	// WithinClusterQueue: which workloads of this queue a pending workload that
	// fits the nominal quota may evict.
	// +kubebuilder:validation:Enum=Never;LowerPriority;LowerOrNewerEqualPriority
	// +kubebuilder:default=Never
	WithinClusterQueue PreemptionPolicy `json:"withinClusterQueue,omitempty"`

	// ReclaimWithinCohort: which workloads of other queues that borrow from
	// the cohort may be evicted to take back this queue's nominal quota.
	// +kubebuilder:validation:Enum=Never;LowerPriority;Any
	// +kubebuilder:default=Never
	ReclaimWithinCohort PreemptionPolicy `json:"reclaimWithinCohort,omitempty"`

	// +optional
	BorrowWithinCohort *BorrowWithinCohort `json:"borrowWithinCohort,omitempty"`
}

// FlavorFungibility says when to stop at a flavor and when to try the next.
type FlavorFungibility struct {
	// WhenCanBorrow: Borrow takes a flavor that fits by borrowing;
	// TryNextFlavor looks for a later flavor that fits without.
	// +kubebuilder:validation:Enum=Borrow;TryNextFlavor
	// +kubebuilder:default=Borrow
	WhenCanBorrow string `json:"whenCanBorrow,omitempty"`

	// WhenCanPreempt: Preempt evicts in a flavor where that makes room;
	// TryNextFlavor looks for a later flavor that fits without.
	// +kubebuilder:validation:Enum=Preempt;TryNextFlavor
	// +kubebuilder:default=TryNextFlavor
	WhenCanPreempt string `json:"whenCanPreempt,omitempty"`
}

// FairSharing configures a queue's or cohort's share of borrowed capacity.
type FairSharing struct {
	// Weight of this queue's share; 0 means it borrows only what nobody else wants.
	// +optional
	Weight *resource.Quantity `json:"weight,omitempty"`
}

// AdmissionMode says how a ClusterQueue orders the workloads of its
// LocalQueues.
// +kubebuilder:validation:Enum=UsageBasedAdmissionFairSharing;NoAdmissionFairSharing
type AdmissionMode string

const (
	// UsageBasedAdmissionFairSharing: LocalQueues that used less lately go first.
	UsageBasedAdmissionFairSharing AdmissionMode = "UsageBasedAdmissionFairSharing"
	// NoAdmissionFairSharing: by priority and age alone.
	NoAdmissionFairSharing AdmissionMode = "NoAdmissionFairSharing"
)

// AdmissionScope is how a ClusterQueue shares admission between the
// LocalQueues that point at it.
type AdmissionScope struct {
	AdmissionMode AdmissionMode `json:"admissionMode"`
}

// PriorityAging lets waiting workloads rise in their queue so that a steady
// stream of higher-priority work cannot starve them: every Interval a
// workload waits adds Step to the priority it is ordered by, up to Cap. It
// changes only the order of pending workloads, never who may preempt whom.
type PriorityAging struct {
	// Step added per Interval waited.
	// +kubebuilder:validation:Minimum=1
	Step int32 `json:"step"`
	// Interval between steps, at least one second.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="interval must be at least 1s"
	Interval metav1.Duration `json:"interval"`
	// Cap on what aging adds.
	// +kubebuilder:validation:Minimum=0
	Cap int32 `json:"cap"`
}

// ClusterQueueSpec is the quota and policy of a ClusterQueue.
// +kubebuilder:validation:XValidation:rule="(has(self.cohort) && size(self.cohort) > 0) || !has(self.resourceGroups) || self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit))))",message="borrowingLimit is only allowed in a ClusterQueue with a cohort"
// +kubebuilder:validation:XValidation:rule="(has(self.cohort) && size(self.cohort) > 0) || !has(self.resourceGroups) || self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.lendingLimit))))",message="lendingLimit is only allowed in a ClusterQueue with a cohort"
// +kubebuilder:validation:XValidation:rule="!has(self.resourceGroups) || self.resourceGroups.all(a, self.resourceGroups.filter(b, b.flavors.exists(f, a.flavors.exists(g, g.name == f.name))).size() == 1)",message="a flavor may appear in only one resource group"
// +kubebuilder:validation:XValidation:rule="!has(self.resourceGroups) || self.resourceGroups.all(a, self.resourceGroups.filter(b, b.coveredResources.exists(r, r in a.coveredResources)).size() == 1)",message="a resource may be covered by only one resource group"
// +kubebuilder:validation:XValidation:rule="!has(self.resourceGroups) || self.resourceGroups.map(rg, size(rg.flavors)).sum() <= 64",message="a ClusterQueue may list at most 64 flavors across its resource groups"
type ClusterQueueSpec struct {
	// Cohort is the name of the cohort whose queues share idle quota with this one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	Cohort string `json:"cohort,omitempty"`

	// NamespaceSelector picks the namespaces whose workloads this queue admits.
	// Unset admits none; {} admits all.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// QueueingStrategy: StrictFIFO or BestEffortFIFO (the default).
	// +optional
	// +kubebuilder:default=BestEffortFIFO
	QueueingStrategy QueueingStrategy `json:"queueingStrategy,omitempty"`

	// ResourceGroups are the quotas, by resource and flavor.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ResourceGroups []ResourceGroup `json:"resourceGroups,omitempty"`

	// +optional
	Preemption *ClusterQueuePreemption `json:"preemption,omitempty"`

	// +optional
	FlavorFungibility *FlavorFungibility `json:"flavorFungibility,omitempty"`

	// +optional
	FairSharing *FairSharing `json:"fairSharing,omitempty"`

	// AdmissionScope: with admissionMode UsageBasedAdmissionFairSharing, the
	// workloads waiting here are ordered first by how much their LocalQueues
	// have used lately (weighed by each LocalQueue's spec.fairSharing.weight),
	// then by priority and age. Unset: by priority and age alone.
	// +optional
	AdmissionScope *AdmissionScope `json:"admissionScope,omitempty"`

	// StopPolicy pauses admission (Hold) or also evicts what is admitted (HoldAndDrain).
	// +optional
	// +kubebuilder:default=None
	StopPolicy StopPolicy `json:"stopPolicy,omitempty"`

	// PriorityAging raises waiting workloads' ordering priority over time.
	// Off when unset.
	// +optional
	PriorityAging *PriorityAging `json:"priorityAging,omitempty"`

	// AdmissionChecks names the AdmissionChecks every workload passes after
	// it reserves quota here and before its pods may run. While one of them
	// does not exist or is not Active, the ClusterQueue admits nothing.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=253
	AdmissionChecks []string `json:"admissionChecks,omitempty"`

	// Budget caps the resource-time its workloads may use over a window:
	// once spent, it admits only within its nominal quota, or nothing, or
	// at a lower priority, until the window frees some (docs/budgets.md).
	// +optional
	Budget *Budget `json:"budget,omitempty"`

	// RunTime bounds how long the workloads admitted here may run, counted
	// as a workload's own limit is (over all its admissions; see the
	// Workload's spec.maximumExecutionTimeSeconds). Unset: only their own.
	// +optional
	RunTime *RunTimePolicy `json:"runTime,omitempty"`
}

// BudgetWindow is the window a budget counts over.
// +kubebuilder:validation:Enum=Rolling;CalendarMonth
type BudgetWindow string

const (
	// RollingBudget counts the last period, moving.
	RollingBudget BudgetWindow = "Rolling"
	// CalendarMonthBudget counts from the first of the month (UTC).
	CalendarMonthBudget BudgetWindow = "CalendarMonth"
)

// BudgetAction is what a ClusterQueue whose budget is spent still admits.
// +kubebuilder:validation:Enum=NoBorrowing;Stop;LowerPriority
type BudgetAction string

const (
	// NoBorrowing admits only within the nominal quota.
	NoBorrowing BudgetAction = "NoBorrowing"
	// StopAdmitting admits nothing.
	StopAdmitting BudgetAction = "Stop"
	// LowerPriority admits at spentPriority: what it admits then may be
	// preempted as work of that priority for as long as it runs.
	LowerPriority BudgetAction = "LowerPriority"
)

// Budget is how much of one resource, held for how long, a ClusterQueue's
// workloads may use over a window. Usage counts from admission to the
// quota's release; what is admitted when it is spent runs on.
// +kubebuilder:validation:XValidation:rule="self.window == 'Rolling' ? has(self.period) : !has(self.period)",message="period is set for a Rolling window, and only for it"
// +kubebuilder:validation:XValidation:rule="quantity(string(self.resourceHours)).isGreaterThan(quantity('0'))",message="resourceHours must be positive"
// +kubebuilder:validation:XValidation:rule="self.whenSpent == 'LowerPriority' ? has(self.spentPriority) : !has(self.spentPriority)",message="spentPriority is set for whenSpent: LowerPriority, and only for it"
type Budget struct {
	// Resource counted, in every flavor, in its units (cores, bytes, devices).
	// +kubebuilder:validation:XValidation:rule="size(self) >= 1 && size(self) <= 253",message="resource must be 1 to 253 characters"
	Resource corev1.ResourceName `json:"resource"`
	// ResourceHours the window allows: 2000 of nvidia.com/gpu is 2,000
	// GPU-hours. Positive.
	ResourceHours resource.Quantity `json:"resourceHours"`
	// Window: Rolling (the last period) or CalendarMonth (UTC).
	Window BudgetWindow `json:"window"`
	// Period of a Rolling window, at least one minute.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="period must be at least 1m"
	Period *metav1.Duration `json:"period,omitempty"`
	// WhenSpent: NoBorrowing admits only within the nominal quota; Stop
	// admits nothing; LowerPriority admits as before, but at spentPriority.
	WhenSpent BudgetAction `json:"whenSpent"`
	// SpentPriority is the priority workloads are admitted at while the
	// budget is spent (whenSpent: LowerPriority), when their own is
	// higher. They compete for the cohort's room and preempt as work of
	// this priority, and may be preempted as such until their quota is
	// given back (status.admission.priority).
	// +optional
	SpentPriority *int32 `json:"spentPriority,omitempty"`
}

// BudgetStatus is what a ClusterQueue's budget has spent: the ledger a
// restarted controller takes up again.
type BudgetStatus struct {
	// SpentResourceHours in the window now.
	SpentResourceHours resource.Quantity `json:"spentResourceHours"`
	// Buckets: resource-hours spent per slice of the window (a Rolling
	// window's twenty-fourth, a calendar month's month), oldest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Buckets []BudgetBucket `json:"buckets,omitempty"`
	// LastUpdate is when it was last charged.
	LastUpdate metav1.Time `json:"lastUpdate"`
	// InUse is the resource in use then: time no controller saw (a
	// restart) is charged at this rate.
	InUse resource.Quantity `json:"inUse"`
	// FreeAgainAt is when a spent budget has room again if nothing more
	// is spent.
	// +optional
	FreeAgainAt *metav1.Time `json:"freeAgainAt,omitempty"`
}

// BudgetBucket is what was spent in one slice of a budget's window.
type BudgetBucket struct {
	Start         metav1.Time       `json:"start"`
	ResourceHours resource.Quantity `json:"resourceHours"`
}

// RunTimePolicy is a ClusterQueue's default and maximum run time.
// +kubebuilder:validation:XValidation:rule="!has(self.defaultSeconds) || !has(self.maximumSeconds) || self.defaultSeconds <= self.maximumSeconds",message="defaultSeconds may not exceed maximumSeconds"
type RunTimePolicy struct {
	// DefaultSeconds is the limit of a workload that sets none of its own.
	// +optional
	// +kubebuilder:validation:Minimum=1
	DefaultSeconds *int32 `json:"defaultSeconds,omitempty"`
	// MaximumSeconds caps every workload's limit, its own or the default.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaximumSeconds *int32 `json:"maximumSeconds,omitempty"`
}

// ResourceUsage is the use of one resource in one flavor.
type ResourceUsage struct {
	Name corev1.ResourceName `json:"name"`
	// Total in use by this queue's workloads.
	Total resource.Quantity `json:"total"`
	// Borrowed is the part of Total above the nominal quota.
	// +optional
	Borrowed resource.Quantity `json:"borrowed,omitempty"`
}

// FlavorUsage is the use of one flavor.
type FlavorUsage struct {
	Name string `json:"name"`
	// +listType=map
	// +listMapKey=name
	Resources []ResourceUsage `json:"resources"`
}

// ClusterQueueStatus is what the controller reports about a ClusterQueue.
type ClusterQueueStatus struct {
	// PendingWorkloads waiting for admission in this queue.
	// +optional
	PendingWorkloads int32 `json:"pendingWorkloads"`
	// ReservingWorkloads hold quota in this queue.
	// +optional
	ReservingWorkloads int32 `json:"reservingWorkloads"`
	// AdmittedWorkloads hold quota and passed all admission checks.
	// +optional
	AdmittedWorkloads int32 `json:"admittedWorkloads"`

	// FlavorsUsage is the quota in use, by flavor and resource.
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
}

// ClusterQueue is a pool of quota, by flavor and resource, that workloads
// from LocalQueues pointing at it are admitted against.
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cq
// +kubebuilder:printcolumn:name="Cohort",type=string,JSONPath=`.spec.cohort`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingWorkloads`
// +kubebuilder:printcolumn:name="Admitted",type=integer,JSONPath=`.status.admittedWorkloads`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterQueueSpec   `json:"spec,omitempty"`
	Status ClusterQueueStatus `json:"status,omitempty"`
}

// ClusterQueueList is a list of ClusterQueues.
// +kubebuilder:object:root=true
type ClusterQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterQueue `json:"items"`
}

func init() { register(&ClusterQueue{}, &ClusterQueueList{}) }
