package integration

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// PodSetOf describes count pods of spec: each requesting what kube-scheduler
// would count for it (containers, init containers and sidecars, pod
// overhead), with the node selector, tolerations and required node affinity
// placement needs, and the ResourceClaims its devices are counted from.
func PodSetOf(name string, count int32, spec *corev1.PodSpec) berthv1.PodSet {
	ps := berthv1.PodSet{
		Name:         name,
		Count:        count,
		Requests:     resourcehelper.PodRequests(&corev1.Pod{Spec: *spec}, resourcehelper.PodResourcesOptions{}),
		NodeSelector: maps.Clone(spec.NodeSelector),
		Tolerations:  slices.Clone(spec.Tolerations),
		// Devices are counted from these when queued (package devicequota).
		ResourceClaims: slices.Clone(spec.ResourceClaims),
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		ps.NodeAffinity = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
	}
	return ps
}

// InjectFlavors adds the flavors' node labels to spec's node selector and
// their tolerations to its own, so its pods run on the flavors' nodes.
func InjectFlavors(spec *corev1.PodSpec, flavors []*berthv1.ResourceFlavor) {
	for _, f := range flavors {
		for k, v := range f.Spec.NodeLabels {
			if spec.NodeSelector == nil {
				spec.NodeSelector = map[string]string{}
			}
			spec.NodeSelector[k] = v
		}
		for _, t := range f.Spec.Tolerations {
			if !slices.ContainsFunc(spec.Tolerations, func(o corev1.Toleration) bool { return o.MatchToleration(&t) }) {
				spec.Tolerations = append(spec.Tolerations, t)
			}
		}
	}
}

// FlavorNames lists the flavors a pod set was assigned, sorted.
func FlavorNames(a *berthv1.Admission, podSet string) []string {
	var out []string
	if a == nil {
		return nil
	}
	for _, psa := range a.PodSetAssignments {
		if psa.Name != podSet {
			continue
		}
		for _, f := range psa.Flavors {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out
}
