package core

import (
	"maps"
	"reflect"
	"time"

	"github.com/berth-dev/berth/internal/budget"
	"github.com/berth-dev/berth/internal/topology"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// FlavorResource names one resource in one flavor: the unit quota is kept in.
type FlavorResource struct {
	Flavor   string
	Resource string
}

// Usage is an amount per flavor and resource, in milli-units.
type Usage map[FlavorResource]int64

// Add adds o into u.
func (u Usage) Add(o Usage) {
	for fr, v := range o {
		u[fr] = AddAmounts(u[fr], v)
	}
}

// Quota is the quota of one resource in one flavor of a queue or cohort.
type Quota struct {
	Nominal        int64
	BorrowingLimit *int64 // nil: no limit
	LendingLimit   *int64 // nil: everything may be lent
}

// FlavorQuotas are one flavor's quotas for the resources of a group.
type FlavorQuotas struct {
	Name   string
	Quotas map[string]Quota // by resource
}

// ResourceGroup is a set of resources assigned one flavor together.
type ResourceGroup struct {
	Resources []string
	Flavors   []FlavorQuotas // in the order they are tried
}

// QueueingStrategy is StrictFIFO or BestEffortFIFO.
type QueueingStrategy string

const (
	StrictFIFO     QueueingStrategy = "StrictFIFO"
	BestEffortFIFO QueueingStrategy = "BestEffortFIFO"
)

// ClusterQueue is what the core needs of a ClusterQueue.
type ClusterQueue struct {
	Name           string
	Cohort         string
	Strategy       QueueingStrategy
	ResourceGroups []ResourceGroup
	// NamespaceSelector picks the namespaces it admits from; nil admits none.
	NamespaceSelector labels.Selector
	// Stopped is set by a stopPolicy other than None: nothing is admitted.
	Stopped bool
	// TryNextFlavorWhenCanBorrow: a flavor that fits only by borrowing is
	// passed over while a later one fits without (flavorFungibility.whenCanBorrow).
	TryNextFlavorWhenCanBorrow bool
	// PreemptWhenCanPreempt: stop at the first flavor where preemption makes
	// room (flavorFungibility.whenCanPreempt: Preempt) instead of looking
	// for a later flavor that fits without (TryNextFlavor, the default).
	PreemptWhenCanPreempt bool
	Preemption            Preemption
	// FairWeight is the queue's fair-sharing weight in milli-units; nil is 1.
	FairWeight *int64
	// Aging, when set, raises the priority pending workloads are ordered by
	// as they wait (anti-starvation). It never affects preemption.
	Aging *Aging
	// Budget caps the resource-time its workloads may use over a window
	// (internal/budget); the scheduler charges it and says when it is
	// spent (Cluster.SetBudgetSpent). Nil: none.
	Budget *budget.Spec
	// AdmissionFairSharing: pending workloads are ordered first by their
	// LocalQueues' recent usage (internal/admissionfairsharing), lowest
	// first. Like Aging, it never affects preemption.
	AdmissionFairSharing bool
	// AdmissionChecks every workload admitted here must pass before its pods
	// run; the queue is inactive while one is missing or not Active.
	AdmissionChecks []string
	// Problem, when set, is why the stored object cannot be used as it is
	// (an invalid selector, say); the queue stays inactive until it is fixed.
	Problem string
}

// PreemptionPolicy says which admitted workloads may be evicted.
type PreemptionPolicy string

const (
	PreemptNever                     PreemptionPolicy = "Never"
	PreemptLowerPriority             PreemptionPolicy = "LowerPriority"
	PreemptLowerOrNewerEqualPriority PreemptionPolicy = "LowerOrNewerEqualPriority"
	PreemptAny                       PreemptionPolicy = "Any"
)

// Preemption holds a ClusterQueue's preemption policies; "" means Never.
type Preemption struct {
	// WithinClusterQueue: Never, LowerPriority or LowerOrNewerEqualPriority.
	WithinClusterQueue PreemptionPolicy
	// ReclaimWithinCohort: Never, LowerPriority or Any. Victims must be in
	// other queues that borrow, and the preemptor must then fit without
	// borrowing.
	ReclaimWithinCohort PreemptionPolicy
	// BorrowWithinCohort: Never or LowerPriority. Lets a preemptor that must
	// borrow evict lower-priority workloads of other borrowing queues, up to
	// MaxPriorityThreshold.
	BorrowWithinCohort   PreemptionPolicy
	MaxPriorityThreshold *int32
}

func (p PreemptionPolicy) allows() bool { return p != "" && p != PreemptNever }

// Aging raises a pending workload's ordering priority by Step every
// Interval it waits, to at most Cap above its own priority.
type Aging struct {
	Step     int32
	Interval time.Duration
	Cap      int32
}

// Cohort is what the core needs of a Cohort object. Cohorts named by
// ClusterQueues but without an object exist too, with no quota and no parent.
type Cohort struct {
	Name           string
	Parent         string
	ResourceGroups []ResourceGroup
	// FairWeight is the cohort's fair-sharing weight in milli-units; nil is 1.
	FairWeight *int64
}

// Flavor is what the core needs of a ResourceFlavor.
type Flavor struct {
	Name        string
	NodeLabels  map[string]string
	NodeTaints  []corev1.Taint
	Tolerations []corev1.Toleration
	// TopologyName names the Topology its nodes are arranged in, "" for none.
	TopologyName string
	// Problem, when set, is why no ClusterQueue may admit with it yet; the
	// queues that name it are inactive with it as their reason.
	Problem string
}

// Workload is a pending workload as the core sees it.
type Workload struct {
	// Key identifies the workload: namespace/name.
	Key string
	// ClusterQueue it is queued in (resolved from its LocalQueue).
	ClusterQueue string
	// NamespaceLabels of its namespace, for the queue's namespaceSelector.
	NamespaceLabels labels.Set
	Priority        int32
	// Timestamp orders workloads of equal priority: creation, or the last
	// eviction for a workload sent back to the queue.
	Timestamp time.Time
	PodSets   []PodSet
	// Version is the API object's resourceVersion when it was read, so an
	// admission is only written onto the version it was decided for.
	Version string
	// NotBefore holds a workload back after an eviction (exponential backoff).
	NotBefore time.Time
	// Aged is what aging added to Priority for ordering; set by the queue.
	Aged int32
	// Behind: more of its ClusterQueue's workloads wait behind it; set by
	// the queue. A queue with more to come may take back by preemption
	// what another borrows in the same cycle, so that one waits a cycle.
	Behind bool
	// Nominated marks a workload that preempted others and waits for their
	// quota: it goes first, so the quota freed for it is not taken by others.
	Nominated bool
	// AwaitsPods: once admitted, its pods' readiness is watched (a Job's),
	// so it counts for SetBlockUntilPodsReady until they are all Ready.
	AwaitsPods bool
	// Inadmissible says why it cannot be admitted as it is, whatever the
	// quota (its devices cannot be counted, say): it waits out of line,
	// with this message, until it or what it refers to changes.
	Inadmissible string
}

// SameDemand reports whether a and b ask for the same thing in the same
// place: ClusterQueue, priority, namespace labels and pod sets alike. Then
// whatever keeps one from fitting, as things stand, keeps the other out too,
// if it is no older (an older one may preempt more under
// LowerOrNewerEqualPriority); the queue uses this to set aside a line of
// equal workloads at once rather than one per cycle.
func SameDemand(a, b *Workload) bool {
	if a.ClusterQueue != b.ClusterQueue || a.Priority != b.Priority || len(a.PodSets) != len(b.PodSets) ||
		!maps.Equal(a.NamespaceLabels, b.NamespaceLabels) {
		return false
	}
	for i := range a.PodSets {
		p, q := &a.PodSets[i], &b.PodSets[i]
		if p.Name != q.Name || p.Count != q.Count || p.MinCount != q.MinCount || p.Steerable != q.Steerable ||
			!maps.Equal(p.Requests, q.Requests) || !maps.Equal(p.NodeSelector, q.NodeSelector) ||
			!reflect.DeepEqual(p.Tolerations, q.Tolerations) || !reflect.DeepEqual(p.NodeAffinity, q.NodeAffinity) ||
			!reflect.DeepEqual(p.Topology, q.Topology) {
			return false
		}
	}
	return true
}

// OrderPriority is the priority a workload is ordered by: its own plus aging.
func (w *Workload) OrderPriority() int32 { return w.Priority + w.Aged }

// PodSet is a group of identical pods.
type PodSet struct {
	Name  string
	Count int32
	// MinCount, when above 0 and below Count, allows partial admission: as
	// few as MinCount pods when Count do not fit (Assign).
	MinCount     int32
	Requests     map[string]int64 // of one pod, milli-units
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	NodeAffinity *corev1.NodeSelector
	// Topology, when set, asks for the pods to be placed close together in
	// the topology of their flavor, which must have one.
	Topology *topology.Request
	// Flavors, when set, are the only flavors it may be admitted in, by
	// resource: the pods it adds to a running workload run in that
	// workload's flavors.
	Flavors map[string]string
	// Steerable: its integration can give each pod a domain (a Job's pods
	// are gated until berth does). Without a topology request, such a pod
	// set admitted in a flavor with a topology is placed anyway, anywhere
	// (Unconstrained), so that its room is counted and held as a gang's is.
	Steerable bool
}

// PodSetAssignment is what a pod set was given.
type PodSetAssignment struct {
	Name    string
	Count   int32
	Flavors map[string]string // resource -> flavor
	Usage   Usage
	// Topology is where its pods go, for a pod set with a topology request
	// (or a steerable one in a flavor with a topology).
	Topology *topology.Assignment
}

// Assignment is where a workload gets its quota.
type Assignment struct {
	ClusterQueue string
	// AdmissionChecks the workload must pass, its ClusterQueue's, before it
	// is Admitted; it holds the quota meanwhile.
	AdmissionChecks []string
	PodSets         []PodSetAssignment
	Usage           Usage // all pod sets together
	// Borrows is true when admitting it takes the queue above its nominal quota.
	Borrows bool
	// Preempt lists the flavor-resources that only preemption can free
	// enough of; empty when the workload fits as things are.
	Preempt []FlavorResource
	// Priority, when set, is the priority it is admitted at, lower than its
	// own: its ClusterQueue's budget is spent (Spent.Priority).
	Priority *int32
}

// Decision is the outcome of a cycle for one workload.
type Decision struct {
	Workload *Workload
	// Admit is set when the workload was admitted.
	Admit *Assignment
	// Pending is set when it was not.
	Pending *Pending
	// Preempt lists workloads to evict to make room for it (Pending then says
	// it waits for them). Only newly chosen victims are listed.
	Preempt []Victim
}

// Victim is an admitted workload to evict, and why.
type Victim struct {
	Key          string
	ClusterQueue string
	// Reason is the rule: InClusterQueue, InCohortReclamation,
	// InCohortReclaimWhileBorrowing or InCohortFairSharing.
	Reason string
}

// Preemption reasons, naming the rule that chose a victim.
const (
	InClusterQueue                = "InClusterQueue"
	InCohortReclamation           = "InCohortReclamation"
	InCohortReclaimWhileBorrowing = "InCohortReclaimWhileBorrowing"
	InCohortFairSharing           = "InCohortFairSharing"
)

// Pending says why a workload was not admitted.
type Pending struct {
	Reason  PendingReason
	Message string
	// Stable is Message without the amounts that change whenever others'
	// usage does ("2 free"). A reason is worth writing to the API again only
	// when Reason or Stable changes: otherwise every release of quota would
	// rewrite every pending workload's status.
	Stable string
}

// SameAs reports whether two reasons differ only in amounts that drift.
func (p *Pending) SameAs(o *Pending) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.Reason == o.Reason && p.stable() == o.stable()
}

func (p *Pending) stable() string {
	if p.Stable != "" {
		return p.Stable
	}
	return p.Message
}

// PendingReason classifies why a workload waits; it decides when to look again.
type PendingReason string

const (
	// NoFit: not enough free quota in any flavor. Looked at again when quota
	// is released or the queue's configuration changes.
	NoFit PendingReason = "NoFit"
	// Inadmissible: the workload can never fit as things are (a resource the
	// queue does not cover, a namespace it does not admit, no compatible flavor).
	Inadmissible PendingReason = "Inadmissible"
	// QueueInactive: its ClusterQueue cannot admit (stopped, flavor missing).
	QueueInactive PendingReason = "ClusterQueueInactive"
	// Contention: it fitted at the start of the cycle but workloads admitted
	// earlier in the same cycle took the quota. Looked at again at once.
	Contention PendingReason = "Contention"
	// Preempting: workloads are being evicted to make room for it; looked at
	// again when their quota is released.
	Preempting PendingReason = "Preempting"
	// WaitingForPodsReady: its ClusterQueue admits nothing until the pods of
	// what it admitted are all Ready (SetBlockUntilPodsReady); looked at
	// again when they are, or that workload lets go of its quota.
	WaitingForPodsReady PendingReason = "WaitingForPodsReady"
)
