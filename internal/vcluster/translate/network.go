package translate

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NetworkPolicyName names the NetworkPolicy that fences a virtual
// cluster's tenant Pods in its host namespace.
const NetworkPolicyName = "berth-vcluster-tenants"

// ControlPlaneName is the app.kubernetes.io/name of the Pod that runs a
// virtual cluster's control plane and syncer in its host namespace (the
// chart's): it is not a tenant's, and reaches the host's API server.
const ControlPlaneName = "berth-vcluster"

// NetworkPolicy fences virtual cluster vc's tenant Pods in host namespace
// ns: they take traffic only from Pods of that namespace, and send it only
// to them and to the cluster's DNS (kube-system's k8s-app=kube-dns, port
// 53). Tenant Pods are those the syncer made, by its label (tenants cannot
// write berth.dev keys); the virtual cluster's own control plane is left
// out (tenants cannot write app.kubernetes.io keys either). NetworkPolicies
// add up: the host's admin opens more with policies of their own. A
// cluster's network plugin enforces them; one that does not (a plain
// bridge) ignores them.
func NetworkPolicy(vc, ns string) *networkingv1.NetworkPolicy {
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dns := intstr.FromInt32(53)
	sameNamespace := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName, Namespace: ns, Labels: map[string]string{Label: vc}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{
				MatchLabels: map[string]string{Label: vc},
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "app.kubernetes.io/name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{ControlPlaneName}}},
			},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: sameNamespace}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: sameNamespace},
				{
					To: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
				},
			},
		},
	}
}
