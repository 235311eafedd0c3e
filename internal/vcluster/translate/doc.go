// Package vcluster decides how a virtual cluster's objects appear in the
// host namespace that runs them, and how the host's answers appear back
// inside: host names that never collide (HostName), the host Pod made from a
// virtual one with every reference rewritten and anything that reaches beyond
// the namespace refused (HostPod), the parts of it that may change later
// (HostUpdate), the pod status copied back field by field (PodStatus), and the
// virtual Node that stands for a host node (VirtualNode).
//
// Everything here is pure; the syncer in internal/vcluster/syncer reads
// both clusters, calls these, and writes what they return.
package translate
