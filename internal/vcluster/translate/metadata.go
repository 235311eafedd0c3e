package translate

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations the syncer puts on host objects. Tenants cannot set
// them: every key of a domain a host controller acts on is dropped from what
// a tenant wrote (see tenantKey) before these are added.
const (
	// Label names the virtual cluster a host object belongs to; the syncer
	// watches and deletes by it.
	Label = "berth.dev/vcluster"
	// NamespaceLabel on a host Pod names its virtual namespace, so a synced
	// Service selects the Pods of its own namespace only.
	NamespaceLabel = "berth.dev/vcluster-namespace"
	// NameAnnotation, NamespaceAnnotation and UIDAnnotation record the virtual
	// object a host object stands for.
	NameAnnotation      = "berth.dev/vcluster-object-name"
	NamespaceAnnotation = "berth.dev/vcluster-object-namespace"
	UIDAnnotation       = "berth.dev/vcluster-object-uid"
	// NodeLabel marks the virtual Nodes the syncer made for host nodes.
	NodeLabel = "berth.dev/vcluster-node"
)

// passThrough are the keys of a host controller's domain a tenant may set:
// the simulator's, which says how long a Pod runs. Queue and priority are the
// host's to give (Options.Queue, Options.PriorityClass), and pod group names
// are rewritten into the virtual cluster (see HostPod).
var passThrough = map[string]bool{
	"berth.dev/sim-duration": true,
}

// hostDomains are the label and annotation domains (and their subdomains)
// that host controllers act on: berth's and Kueue's steer queueing and the
// syncer itself; Kubernetes' own (kubernetes.io, k8s.io) steer the API
// server, the kubelet and the controllers (Pod Security, AppArmor, seccomp,
// mirror pods, deletion costs, and those yet to come).
var hostDomains = []string{"berth.dev", "kueue.x-k8s.io", "kubernetes.io", "k8s.io"}

// tenantKey reports whether a tenant's label or annotation key is carried to
// the host as it is: none of hostDomains, unless passThrough says so.
func tenantKey(key string) bool {
	if passThrough[key] {
		return true
	}
	domain, _, found := strings.Cut(key, "/")
	if !found {
		return true
	}
	for _, d := range hostDomains {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return false
		}
	}
	return true
}

// tenantOnly is the part of m a tenant may carry to the host.
func tenantOnly(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if tenantKey(k) {
			out[k] = v
		}
	}
	return out
}

// hostMeta is the host ObjectMeta of the virtual object v: its host name in
// the host namespace, the tenant's labels and annotations, the syncer's
// own, and the owner every host object of the virtual cluster has.
func hostMeta(v metav1.ObjectMeta, o Options) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name:        HostName(v.Name, v.Namespace, o.VCluster),
		Namespace:   o.HostNamespace,
		Labels:      tenantOnly(v.Labels),
		Annotations: tenantOnly(v.Annotations),
	}
	m.Labels[Label] = o.VCluster
	m.Annotations[NameAnnotation] = v.Name
	m.Annotations[NamespaceAnnotation] = v.Namespace
	m.Annotations[UIDAnnotation] = string(v.UID)
	if o.Owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{*o.Owner}
	}
	return m
}

// Origin is the virtual object a host object stands for, read from the
// syncer's annotations; ok is false for a host object of another virtual
// cluster, or one the syncer did not make.
func Origin(host metav1.Object, vc string) (namespace, name, uid string, ok bool) {
	if host.GetLabels()[Label] != vc {
		return "", "", "", false
	}
	a := host.GetAnnotations()
	namespace, name, uid = a[NamespaceAnnotation], a[NameAnnotation], a[UIDAnnotation]
	if name == "" || namespace == "" || uid == "" || HostName(name, namespace, vc) != host.GetName() {
		return "", "", "", false
	}
	return namespace, name, uid, true
}
