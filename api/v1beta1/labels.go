package v1beta1

// Labels and annotations berth reads on Jobs (and CronJob job templates).
const (
	// QueueNameLabel names the LocalQueue a Job is submitted to.
	QueueNameLabel = "berth.dev/queue-name"
	// KueueQueueNameLabel is honoured too, for users moving from Kueue.
	KueueQueueNameLabel = "kueue.x-k8s.io/queue-name"
	// PriorityClassLabel names the WorkloadPriorityClass of a Job.
	PriorityClassLabel = "berth.dev/priority-class"
	// KueuePriorityClassLabel is honoured too, for users moving from Kueue.
	KueuePriorityClassLabel = "kueue.x-k8s.io/priority-class"
)
