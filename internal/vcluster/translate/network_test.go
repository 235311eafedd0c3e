package translate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// endpoint is one end of a flow: a Pod (namespace and labels), or an
// address outside the cluster's Pods (ns "").
type endpoint struct {
	ns     string
	labels map[string]string
}

// allows says whether the policies let a connection from src to dst's port,
// as Kubernetes defines them: a Pod that no policy of its namespace selects
// for a direction is open in it; one that some do is open only to what one
// of their rules names. Peers here are pod and namespace selectors and
// ports, which is all NetworkPolicy uses.
func allows(t *testing.T, policies []*networkingv1.NetworkPolicy, nsLabels map[string]map[string]string, src, dst endpoint, proto corev1.Protocol, port int32) bool {
	t.Helper()
	sel := func(s *metav1.LabelSelector) labels.Selector {
		out, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	peerMatches := func(p networkingv1.NetworkPolicyPeer, policyNS string, e endpoint) bool {
		if e.ns == "" {
			return false // no ipBlock in these policies
		}
		if p.NamespaceSelector == nil && e.ns != policyNS {
			return false
		}
		if p.NamespaceSelector != nil && !sel(p.NamespaceSelector).Matches(labels.Set(nsLabels[e.ns])) {
			return false
		}
		return p.PodSelector == nil || sel(p.PodSelector).Matches(labels.Set(e.labels))
	}
	portMatches := func(ports []networkingv1.NetworkPolicyPort) bool {
		if len(ports) == 0 {
			return true
		}
		for _, p := range ports {
			if (p.Protocol == nil || *p.Protocol == proto) && (p.Port == nil || p.Port.IntVal == port) {
				return true
			}
		}
		return false
	}
	side := func(e endpoint, kind networkingv1.PolicyType, ok func(*networkingv1.NetworkPolicy) bool) bool {
		if e.ns == "" {
			return true
		}
		selected := false
		for _, p := range policies {
			if p.Namespace != e.ns || !sel(&p.Spec.PodSelector).Matches(labels.Set(e.labels)) {
				continue
			}
			for _, pt := range p.Spec.PolicyTypes {
				if pt == kind {
					selected = true
					if ok(p) {
						return true
					}
				}
			}
		}
		return !selected
	}
	egress := side(src, networkingv1.PolicyTypeEgress, func(p *networkingv1.NetworkPolicy) bool {
		for _, r := range p.Spec.Egress {
			for _, peer := range r.To {
				if peerMatches(peer, p.Namespace, dst) && portMatches(r.Ports) {
					return true
				}
			}
		}
		return false
	})
	ingress := side(dst, networkingv1.PolicyTypeIngress, func(p *networkingv1.NetworkPolicy) bool {
		for _, r := range p.Spec.Ingress {
			for _, peer := range r.From {
				if peerMatches(peer, p.Namespace, src) && portMatches(r.Ports) {
					return true
				}
			}
		}
		return false
	})
	return egress && ingress
}

// A tenant Pod talks to its own virtual cluster's Pods and to the cluster's
// DNS, and to nothing else: not another namespace's Pods, another virtual
// cluster's, nor outside the cluster; nothing of other namespaces reaches
// it. The virtual cluster's own control plane, in the same namespace, keeps
// its way to the host's API server; a tenant cannot pass for it.
func TestNetworkPolicyFencesTenants(t *testing.T) {
	policies := []*networkingv1.NetworkPolicy{NetworkPolicy("team-a", "vcluster-team-a"), NetworkPolicy("team-b", "vcluster-team-b")}
	nsLabels := map[string]map[string]string{}
	for _, ns := range []string{"vcluster-team-a", "vcluster-team-b", "kube-system", "prod", "berth-system"} {
		nsLabels[ns] = map[string]string{"kubernetes.io/metadata.name": ns}
	}
	tenant := endpoint{"vcluster-team-a", map[string]string{Label: "team-a", "app": "web"}}
	neighbour := endpoint{"vcluster-team-a", map[string]string{Label: "team-a", "app": "db"}}
	controlPlane := endpoint{"vcluster-team-a", map[string]string{Label: "team-a", "app.kubernetes.io/name": ControlPlaneName}}
	otherTenant := endpoint{"vcluster-team-b", map[string]string{Label: "team-b"}}
	prod := endpoint{"prod", map[string]string{"app": "payments"}}
	dns := endpoint{"kube-system", map[string]string{"k8s-app": "kube-dns"}}
	apiServer := endpoint{"kube-system", map[string]string{"component": "kube-apiserver"}}
	outside := endpoint{}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	for _, f := range []struct {
		name     string
		src, dst endpoint
		proto    corev1.Protocol
		port     int32
		want     bool
	}{
		{"tenant to its own Pod", tenant, neighbour, tcp, 5432, true},
		{"tenant to DNS", tenant, dns, udp, 53, true},
		{"tenant to DNS over TCP", tenant, dns, tcp, 53, true},
		{"tenant to DNS's other port", tenant, dns, tcp, 9153, false},
		{"tenant to another namespace", tenant, prod, tcp, 443, false},
		{"tenant to another virtual cluster", tenant, otherTenant, tcp, 80, false},
		{"tenant to the host's API server Pod", tenant, apiServer, tcp, 6443, false},
		{"tenant outside the cluster", tenant, outside, tcp, 443, false},
		{"another namespace to a tenant", prod, tenant, tcp, 80, false},
		{"another virtual cluster to a tenant", otherTenant, tenant, tcp, 80, false},
		{"tenant to its virtual cluster's control plane", tenant, controlPlane, tcp, 6443, true},
		{"the control plane to the host's API server", controlPlane, apiServer, tcp, 6443, true},
		{"the control plane outside the cluster", controlPlane, outside, tcp, 443, true},
		{"another namespace among itself", prod, endpoint{"prod", nil}, tcp, 80, true},
	} {
		if got := allows(t, policies, nsLabels, f.src, f.dst, f.proto, f.port); got != f.want {
			t.Errorf("%s: allowed %v, want %v", f.name, got, f.want)
		}
	}
}
