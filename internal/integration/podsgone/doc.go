// Package podsgone keeps the quota of a Workload berth made for an object
// until the pods that ran for it are gone, however the object went: deleted
// (its Workload goes with it, but a terminating pod still holds its node),
// deleted with --cascade=orphan (its pods run on, and its Workload is left
// with no owner), or its Workload deleted by hand.
//
// Such a Workload carries berth's finalizer (berthv1.PodsGoneFinalizer) and
// the selector of its pods (berthv1.PodSelectorAnnotation) from the moment
// it is made: the rule is the same for every kind whose pods can be found
// by labels. Decide says what a Workload calls for, given its pods; the
// Reconciler beside it counts them and carries the decision out.
package podsgone
