package translate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Synced reports whether a virtual Service gets a host Service: all do
// but default/kubernetes, which stands for the virtual API server itself.
func Synced(v *corev1.Service) bool { return !(v.Namespace == "default" && v.Name == "kubernetes") }

// HostService is the host Service for a virtual one: the same ports,
// selecting the host Pods of its own virtual namespace and cluster only.
// The host gives it its own cluster IP. Services that would open a port on
// host nodes or addresses (NodePort, LoadBalancer, externalIPs) are refused,
// as is ExternalName for now.
func HostService(v *corev1.Service, o Options) (*corev1.Service, error) {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	switch v.Spec.Type {
	case "", corev1.ServiceTypeClusterIP:
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), v.Spec.Type, []corev1.ServiceType{corev1.ServiceTypeClusterIP}))
	}
	if len(v.Spec.ExternalIPs) > 0 {
		errs = append(errs, hostAccess(spec.Child("externalIPs"), o))
	}
	for _, k := range slices.Sorted(maps.Keys(v.Spec.Selector)) {
		// The syncer's own two are set below, whatever the tenant said.
		if !tenantKey(k) && k != Label && k != NamespaceLabel {
			errs = append(errs, field.Forbidden(spec.Child("selector").Key(k),
				"host Pods do not carry this label: labels of "+strings.Join(hostDomains, ", ")+" and their subdomains stay in the virtual cluster; select on labels of your own"))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("service %s/%s: %w", v.Namespace, v.Name, errs.ToAggregate())
	}
	h := &corev1.Service{ObjectMeta: hostMeta(v.ObjectMeta, o), Spec: corev1.ServiceSpec{
		Type:                     corev1.ServiceTypeClusterIP,
		Ports:                    hostPorts(v.Spec.Ports),
		SessionAffinity:          v.Spec.SessionAffinity,
		SessionAffinityConfig:    v.Spec.SessionAffinityConfig.DeepCopy(),
		PublishNotReadyAddresses: v.Spec.PublishNotReadyAddresses,
		InternalTrafficPolicy:    v.Spec.InternalTrafficPolicy,
	}}
	if v.Spec.ClusterIP == corev1.ClusterIPNone {
		h.Spec.ClusterIP = corev1.ClusterIPNone
	}
	if v.Spec.Selector != nil {
		h.Spec.Selector = maps.Clone(v.Spec.Selector)
		// Set last: the Pods of this virtual namespace and cluster only.
		h.Spec.Selector[Label] = o.VCluster
		h.Spec.Selector[NamespaceLabel] = v.Namespace
	}
	return h, nil
}

func hostPorts(in []corev1.ServicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(in))
	for i, p := range in {
		p.NodePort = 0
		out[i] = p
	}
	return out
}

// HostServiceUpdate carries a virtual Service's changes to its host
// Service (want, from HostService), keeping what the host assigned (its
// cluster IPs). It reports whether anything changed.
func HostServiceUpdate(want, current *corev1.Service) (*corev1.Service, bool) {
	out := current.DeepCopy()
	out.Labels = mergeOwned(current.Labels, want.Labels)
	out.Annotations = mergeOwned(current.Annotations, want.Annotations)
	s := &out.Spec
	s.Ports, s.Selector = want.Spec.Ports, want.Spec.Selector
	s.SessionAffinity, s.SessionAffinityConfig = want.Spec.SessionAffinity, want.Spec.SessionAffinityConfig
	s.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
	if want.Spec.InternalTrafficPolicy != nil {
		s.InternalTrafficPolicy = want.Spec.InternalTrafficPolicy
	}
	return out, !apiequality.Semantic.DeepEqual(out.ObjectMeta, current.ObjectMeta) || !apiequality.Semantic.DeepEqual(out.Spec, current.Spec)
}
