// Package supervisor keeps the virtual clusters of a local berth instance:
// each one's settings and data directory under the instance's, and
// creating, starting, stopping and deleting them. `berth vcluster`, `berth
// up` and `berth down` call it. What runs inside a virtual cluster is in
// its siblings: serve assembles its control plane and syncer, syncer is the
// syncer, and translate holds the rules of how tenant objects appear on the
// host.
package supervisor
