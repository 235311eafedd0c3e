// Package pods queues plain Pods: the webhook creates a Pod that asks for a
// queue with the scheduling gate berth.dev/admission and the finalizer
// berth.dev/managed; the reconciler keeps one Workload per Pod, owned by it,
// lifts the gate with the flavors' node labels and tolerations once the
// Workload is admitted, deletes the Pod when its Workload loses its quota (a
// Pod cannot be held back again), marks the Workload finished when the Pod
// ends or goes, and then lets the Pod go (removes the finalizer). Pods of a
// pod group are held by the same webhook, and queued by package podgroups.
package pods
