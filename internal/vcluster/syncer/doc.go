// Package syncer is the virtual-cluster syncer: the I/O around the pure
// decisions of internal/vcluster/translate. It watches a virtual cluster and the host
// namespace that runs it; makes a host Pod for every virtual Pod (first the
// ConfigMaps, Secrets and ServiceAccount it refers to), binds the virtual Pod
// once the host schedules it, copies the host Pod's status back, keeps a
// virtual Node for every host node that runs a tenant Pod, copies the host's
// events about its Pods, makes a host Service for every virtual one, and
// deletes on one side what was deleted on the other.
//
// Its host client reaches one namespace (and reads nodes): every host object
// it makes carries the virtual cluster's label and, as owner, the syncer's
// service account there, so deleting that account deletes them all.
package syncer
