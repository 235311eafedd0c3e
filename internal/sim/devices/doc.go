// Package devices describes the devices a simulated node offers to Dynamic
// Resource Allocation: read from the node's berth.dev/sim-devices
// annotation (driver to count), they become the node's ResourceSlices, one
// per driver, so kube-scheduler allocates pods' ResourceClaims on simulated
// nodes as it does on real ones. It does no I/O.
package devices
