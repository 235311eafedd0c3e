// Package topology feeds topology-aware placement: it tells the scheduler
// the Topologies' levels, and, once a Topology exists, the nodes with the
// room the pods bound to them leave (the pods of topology-placed workloads
// excepted, since their placements count for them). What a node offers is
// worked out by the pure NodeOf and PodUsage; the informers and the batched
// hand-over to the scheduler are the I/O beside them.
package topology
