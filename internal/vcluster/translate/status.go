package translate

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// PodStatus is the virtual Pod's status once the host Pod's is copied in:
// field by field, and only fields that describe what happened on the host.
// What the virtual API server computes and guards itself stays as it is:
// qosClass (immutable since Kubernetes 1.32, and computed from the virtual
// Pod's own resources, which a host LimitRange may have changed on the host
// Pod), observedGeneration, and the resources containers were given (the
// host's, after the same LimitRange). changed is false when the virtual Pod
// already says all of it, so no write is needed.
func PodStatus(host, virtual corev1.PodStatus) (out corev1.PodStatus, changed bool) {
	out = *virtual.DeepCopy()
	h := host.DeepCopy()
	out.Phase = h.Phase
	out.Message, out.Reason = h.Message, h.Reason
	out.HostIP, out.HostIPs = h.HostIP, h.HostIPs
	out.PodIP, out.PodIPs = h.PodIP, h.PodIPs
	out.StartTime = h.StartTime
	out.Conditions = nil
	for _, c := range h.Conditions {
		c.ObservedGeneration = 0
		out.Conditions = append(out.Conditions, c)
	}
	out.InitContainerStatuses = containerStatuses(h.InitContainerStatuses)
	out.ContainerStatuses = containerStatuses(h.ContainerStatuses)
	out.EphemeralContainerStatuses = containerStatuses(h.EphemeralContainerStatuses)
	return out, !apiequality.Semantic.DeepEqual(out, virtual)
}

func containerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		s.AllocatedResources, s.Resources = nil, nil
		out[i] = s
	}
	return out
}

// RefusedReason is the reason of the PodScheduled condition of a tenant's
// Pod that the host will not run: the condition's message says which field,
// and why.
const RefusedReason = "RefusedByHost"

// Refused is the virtual Pod's status once it says why the host will not run
// it; changed is false when it says so already.
func Refused(virtual corev1.PodStatus, why string) (out corev1.PodStatus, changed bool) {
	out = *virtual.DeepCopy()
	c := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: RefusedReason, Message: why}
	for i, have := range out.Conditions {
		if have.Type == corev1.PodScheduled {
			if have.Status == c.Status && have.Reason == c.Reason && have.Message == c.Message {
				return out, false
			}
			c.LastTransitionTime = have.LastTransitionTime
			out.Conditions[i] = c
			return out, true
		}
	}
	out.Conditions = append(out.Conditions, c)
	return out, true
}

// HadHostPod reports whether the virtual Pod has had a host Pod: only the
// syncer gives virtual Pods conditions (nothing schedules or runs them
// there), and a refusal is not a host Pod. Not its node: a tenant may set
// that, and the Pod is refused, not deleted.
func HadHostPod(v *corev1.Pod) bool {
	for _, c := range v.Status.Conditions {
		if c.Reason != RefusedReason {
			return true
		}
	}
	return false
}
