// Package fromkueue translates Kueue's objects (kueue.x-k8s.io v1alpha1,
// v1beta1 and v1beta2: ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
// WorkloadPriorityClass, Topology, AdmissionCheck) into berth's, and back.
//
// Which fields carry over is decided by berth's own CRD schemas, not by a
// list kept by hand: a Kueue field is kept when, after the few renames
// between the two APIs (cohortName is cohort, parentName is parent), berth's
// schema has it; any other is listed, with why, never dropped silently.
// Export is the inverse, so a berth object survives berth -> Kueue -> berth
// whole. ImportConfiguration makes berth chart values of Kueue's controller
// Configuration. Everything here is pure; `berth import` reads and applies.
package fromkueue
