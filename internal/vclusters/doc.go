// Package vclusters keeps the virtual clusters of a local berth instance:
// each one's settings and data directory under the instance's, and
// creating, starting, stopping and deleting them. `berth vcluster`, `berth
// up` and `berth down` call it. What runs inside a virtual cluster is
// elsewhere: its control plane and syncer are assembled by localcluster
// (VirtualOptions), the syncer is controller/vcsyncer, and the rules of how
// tenant objects appear on the host are in vcluster.
package vclusters
