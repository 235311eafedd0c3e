// Package vcluster gathers berth's virtual clusters: API servers of their
// own whose Pods run, queued, in a host namespace. Its parts:
//
//   - translate: how a tenant's objects appear on the host and the host's
//     answers back inside (pure decisions; what is refused, and why)
//   - syncer: the controller that carries them out between the two
//   - serve: a virtual cluster's control plane and syncer, as `berth
//     vcluster serve` runs them
//   - supervisor: the virtual clusters of a local instance, created,
//     started, stopped and deleted by `berth vcluster`, `berth up` and
//     `berth down`
package vcluster
