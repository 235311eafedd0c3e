// Package configured queues kinds berth has no code for, from configuration
// alone (berth controller --configured-kinds): a platform team names a kind
// that can be suspended, the path of its suspend field, the paths of its
// pod sets (pod template and pod count, or an array of them, as a
// RayCluster's worker groups) and the conditions or status field that say
// it has ended; berth then queues it as it queues a JobSet. A kind may
// name fields a queued object must set (requires), pod sets that exist only
// in some modes (when) or run a default template (default), and the kinds
// whose controller makes its objects for them (ownedBy: a RayJob's
// RayCluster, queued with its RayJob). Its webhook creates a
// queued object suspended; a reconciler keeps one Workload per object, with
// a pod set per configured path, starts the object once the Workload is
// admitted (each template given its flavors' node labels and tolerations,
// and berth.dev/owner-uid, by which berth finds its pods), suspends it again
// (templates restored) when the Workload loses its quota, gives the quota
// back once its pods are gone, and finishes the Workload when a configured
// condition is True (or the status field has a configured value).
//
// Spec, Parse and CheckSchema are the configuration and its checks against
// the kind's CRD; Kind is the kind as an integration.Kind over unstructured
// objects, and Compiled.Guard its description for package guard; all pure.
// The Reconciler beside them does the I/O, and ScaleGuard, the webhook for
// a kind's scale subresource, reads the object behind a Scale.
package configured
