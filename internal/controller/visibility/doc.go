// Package visibility serves berth's visibility API (package
// internal/visibility) from the controller's webhook server, and registers
// it with the Kubernetes API server: an APIService naming the Service
// berth-visibility. On a local control plane that Service is an
// ExternalName for the loopback address the controller listens on (no
// kube-proxy is needed); in a cluster it has no selector, and the leader
// writes its own pod address as its only endpoint, since only the leader
// has the queues.
package visibility
