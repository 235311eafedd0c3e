// Package topology places a gang of pods on nodes arranged in a tree of
// domains, one level per node label (a block, its racks, their hosts), so
// that the gang lands close together: all in one domain of a level
// (required), in as few domains as it can (preferred), or in groups of a
// fixed size each inside one domain (slices).
//
// It is pure: Build takes nodes as plain values, Place returns per domain and
// per node how many pods go there, Take subtracts a placement from the free
// capacity so the next placement in the same cycle cannot reuse it. A pod
// set fits a domain when its pods fit its nodes one by one, each node
// holding as many whole pods as its free capacity allows, not merely when
// the domain's sums do. Among domains that fit, the tightest is chosen (best
// fit), so large free domains stay whole for large gangs.
//
// A tree without levels is an error from Build, never an index out of
// range: a Topology stored without levels (by an older version, or written
// to etcd directly) must not bring the controller down.
package topology
