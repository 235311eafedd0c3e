package v1beta1

// Labels, annotations, gates and finalizers berth reads or sets on the objects
// it queues: Jobs (and CronJob job templates), Pods and pod groups.
const (
	// QueueNameLabel names the LocalQueue a Job is submitted to.
	QueueNameLabel = "berth.dev/queue-name"
	// KueueQueueNameLabel is honoured too, for users moving from Kueue.
	KueueQueueNameLabel = "kueue.x-k8s.io/queue-name"
	// PriorityClassLabel names the WorkloadPriorityClass of a Job.
	PriorityClassLabel = "berth.dev/priority-class"
	// KueuePriorityClassLabel is honoured too, for users moving from Kueue.
	KueuePriorityClassLabel = "kueue.x-k8s.io/priority-class"
	// AdmissionGate is the scheduling gate that holds a queued Pod back
	// until its Workload is admitted.
	AdmissionGate = "berth.dev/admission"
	// PodFinalizer stays on a queued Pod while berth needs to see how it
	// ends, so its quota is accounted for.
	PodFinalizer = "berth.dev/managed"
	// ManagePodsLabel on a Namespace ("true") queues its Pods that carry no
	// queue label in its LocalQueue "default".
	ManagePodsLabel = "berth.dev/manage-pods"
	// PodGroupNameLabel on queued Pods makes them one pod group: one
	// Workload, admitted all together or not at all.
	PodGroupNameLabel = "berth.dev/pod-group-name"
	// KueuePodGroupNameLabel is honoured too, for users moving from Kueue.
	KueuePodGroupNameLabel = "kueue.x-k8s.io/pod-group-name"
	// PodGroupTotalCountAnnotation on each Pod of a group says how many
	// Pods the group has.
	PodGroupTotalCountAnnotation = "berth.dev/pod-group-total-count"
	// TopologyGate holds a Pod of a topology-aware pod set back until berth
	// has given it a domain of its placement (a node selector).
	TopologyGate = "berth.dev/topology"
	// TopologyPlacedLabel marks the Pods of topology-aware pod sets: their
	// room on nodes is counted by their placement, and the Pod webhook gates
	// them (TopologyGate).
	TopologyPlacedLabel = "berth.dev/topology-placed"
	// PodSetAnnotation on a Pod names the pod set of its Workload it runs
	// in, where nothing else tells: a pod group's, written when berth starts
	// it; a configured kind's topology-placed pod set's, on its template.
	PodSetAnnotation = "berth.dev/pod-set"
	// MultiClusterOriginLabel marks the copies a manager cluster made on a
	// worker cluster; its value names the manager, so that managers sharing
	// a worker collect only their own copies.
	MultiClusterOriginLabel = "berth.dev/multicluster-origin"
	// MultiClusterWorkloadAnnotation on a copy names the manager's Workload
	// it stands for (in the same namespace).
	MultiClusterWorkloadAnnotation = "berth.dev/multicluster-workload"
	// PrebuiltWorkloadLabel on a Job (and its pods) names the Workload
	// made for it before the Job existed, which berth then uses instead of
	// making one: a manager cluster copies a Workload to its workers, and
	// makes the Job only on the worker that admitted the copy.
	PrebuiltWorkloadLabel = "berth.dev/prebuilt-workload-name"
	// KueuePodGroupTotalCountAnnotation is honoured too.
	KueuePodGroupTotalCountAnnotation = "kueue.x-k8s.io/pod-group-total-count"
	// PendingParallelismAnnotation on a running Job is a raise of its
	// parallelism waiting for quota: berth's webhook keeps spec.parallelism
	// at what is admitted and records the raise here, admits the increase
	// as a growth Workload of its own, and sets spec.parallelism once it is
	// admitted. The running pods keep running meanwhile.
	PendingParallelismAnnotation = "berth.dev/pending-parallelism"
	// GrowthOfAnnotation on a growth Workload names the Job whose increase
	// it queues; GrowthFromAnnotation and GrowthToAnnotation the pods at once
	// it grows from and to; GrowthFlavorsAnnotation (JSON, resource to
	// flavor) the flavors its pods run in, the only ones it may be admitted
	// in. Only berth writes Workloads.
	GrowthOfAnnotation      = "berth.dev/growth-of"
	GrowthFromAnnotation    = "berth.dev/growth-from"
	GrowthToAnnotation      = "berth.dev/growth-to"
	GrowthFlavorsAnnotation = "berth.dev/growth-flavors"
	// JobMinParallelismAnnotation on a Job allows partial admission: when
	// its parallelism does not fit, it runs with as many pods at once as
	// do, at least this many.
	JobMinParallelismAnnotation = "berth.dev/job-min-parallelism"
	// KueueJobMinParallelismAnnotation is honoured too.
	KueueJobMinParallelismAnnotation = "kueue.x-k8s.io/job-min-parallelism"
	// PartialAdmissionAnnotation ("true") on an object of a kind queued
	// from configuration allows partial admission: each of its pod sets
	// whose kind has a least count (minCount) may run with as few pods as
	// that least when all do not fit.
	PartialAdmissionAnnotation = "berth.dev/partial-admission"
	// MaxExecTimeLabel on a queued object limits how long its Workload may
	// run, in whole seconds, counted over all its admissions: past it, it is
	// stopped and deactivated (reason MaximumExecutionTimeExceeded).
	MaxExecTimeLabel = "berth.dev/max-exec-time-seconds"
	// KueueMaxExecTimeLabel is honoured too.
	KueueMaxExecTimeLabel = "kueue.x-k8s.io/max-exec-time-seconds"
	// OwnerUIDLabel goes on the pod templates of an object of a kind
	// queued from configuration (berth controller --configured-kinds) when
	// berth starts it: the object's UID, by which berth finds its pods.
	OwnerUIDLabel = "berth.dev/owner-uid"
	// ConfiguredKindLabel ("true") is on the Workload of an object of a
	// kind queued from configuration: evicted, it keeps its quota until the
	// object's pods are gone, and its reconciler then gives it back.
	ConfiguredKindLabel = "berth.dev/configured-kind"
)

// ResourceInUseFinalizer is on every ClusterQueue, LocalQueue and
// ResourceFlavor berth's controller has seen: deleting one that admitted work
// still uses leaves it Terminating until that work is gone. berth admits
// nothing through a ClusterQueue or LocalQueue that does not carry it yet.
const ResourceInUseFinalizer = "berth.dev/resource-in-use"

// EvictedByBerth is the reason of the DisruptionTarget condition berth puts
// on a Pod it deletes because the Pod's Workload lost its quota (preempted,
// its queue stopped, ...), as Kubernetes marks the Pods it preempts.
const EvictedByBerth = "EvictedByBerth"

// PodsGoneFinalizer is on a Workload berth made for an object whose pods it
// can find (PodSelectorAnnotation): the Workload, and the quota it holds,
// stay until those pods are gone, however the object went (deleted,
// orphaned, its Workload deleted), since a terminating pod still holds its
// node.
const PodsGoneFinalizer = "berth.dev/pods-gone"

// DevicesCountedFinalizer keeps a ResourceClaimTemplate while a workload
// whose devices were counted from it may still be admitted or make pods
// (package devicequota). Without it the template could be deleted and made
// again under the same name asking for more devices, and the workload's
// later pods would claim those, past what its quota counted. A template's
// spec cannot change in place (the API server refuses), and package guard
// refuses the finalizer's removal by anyone but berth.
const DevicesCountedFinalizer = "berth.dev/devices-counted"

// PodSelectorAnnotation on a Workload is the label selector, in the
// namespace of the Workload, of the pods that run for it: the pods of its
// Job (batch.kubernetes.io/controller-uid=UID), of its JobSet's Jobs, ...
// It is written when berth makes the Workload, so it outlives the object.
const PodSelectorAnnotation = "berth.dev/pod-selector"
