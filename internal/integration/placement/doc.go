// Package placement makes the pods of a topology-aware workload land where
// admission placed them. The Pod webhook (Gater) creates every pod labelled
// berth.dev/topology-placed with the scheduling gate berth.dev/topology;
// once the pod's Workload is admitted with a topology assignment, the
// reconciler lifts the gate pod by pod, each with a node selector for one
// domain, so that each domain receives exactly its count (Assign, pure).
// kube-scheduler then binds each pod within its domain. A pod that goes is
// replaced in the domain it left, since the count of the pods placed there
// drops. The pods of a kind queued from configuration carry no queue
// label, so the manager's cache of queued pods leaves them out; they are
// watched through a cache of their own.
package placement
