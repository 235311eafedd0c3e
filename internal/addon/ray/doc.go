// Package ray runs KubeRay's operator (github.com/ray-project/kuberay,
// ray-operator) as a component of a local instance (berth up --with ray):
// its RayCluster, RayJob and RayService controllers, without its webhooks
// (KubeRay's own install leaves them off) and without a batch scheduler.
package ray
