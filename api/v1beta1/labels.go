package v1beta1

// Labels, annotations, gates and finalizers berth reads or sets on the objects
// it queues: Jobs (and CronJob job templates) and Pods.
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
)
