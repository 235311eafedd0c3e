// Package queues connects ResourceFlavors, ClusterQueues, Cohorts and
// LocalQueues to the scheduler: informer events update the scheduler's model
// as they arrive, and a status writer reports each queue's counts, usage and
// Active condition, coalesced and written only when they changed.
package queues
