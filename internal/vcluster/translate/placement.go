package translate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Placement is what of a tenant Pod's own choice of nodes reaches the host:
// nothing by default, since the host's queue and its flavor place tenant
// Pods. A tenant that could pick nodes could land on nodes kept for others
// (tolerating their taints), or read the host's layout by probing.
type Placement struct {
	// NodeLabels are the node label keys tenant Pods may select nodes by,
	// in spec.nodeSelector and node affinity; virtual Nodes show these
	// labels of their host nodes, and no others.
	NodeLabels []string `json:"nodeLabels,omitempty"`
	// Tolerations are the taint keys tenant Pods may tolerate, besides the
	// not-ready and unreachable taints that every Pod tolerates for a while.
	Tolerations []string `json:"tolerations,omitempty"`
	// Schedulers are the schedulers tenant Pods may name, besides the
	// host's default one.
	Schedulers []string `json:"schedulers,omitempty"`
}

// everyPodTolerates are the taints the API server's DefaultTolerationSeconds
// gives every Pod a toleration of (the virtual one too): they only keep a
// Pod on a node that fails, for a while.
var everyPodTolerates = []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}

// ValidatePlacement refuses keys that are not label keys and names that
// are not scheduler names, naming the flag.
func ValidatePlacement(p Placement) error {
	for _, set := range []struct {
		flag string
		keys []string
	}{{"--allow-node-label", p.NodeLabels}, {"--allow-toleration", p.Tolerations}} {
		for _, k := range set.keys {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return fmt.Errorf("%s %q: %s", set.flag, k, strings.Join(errs, "; "))
			}
		}
	}
	for _, s := range p.Schedulers {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return fmt.Errorf("--allow-scheduler %q: %s", s, strings.Join(errs, "; "))
		}
	}
	return nil
}

// placement is what the host does not let o's tenants choose of where Pod v
// runs, one error per field, each saying what they may choose: nodes by
// the labels o allows, taints o allows, schedulers o allows; pod
// (anti-)affinity only to Pods of its own host namespace. Nothing is
// refused when the virtual cluster may reach the host.
func placement(v *corev1.Pod, o Options) field.ErrorList {
	if o.AllowHostAccess {
		return nil
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	allowed := func(what string, keys []string, flag string) string {
		if len(keys) == 0 {
			return fmt.Sprintf("the host places virtual cluster %s's Pods by their queue; it lets them choose no %s (the host's admin allows some with %s)",
				o.VCluster, what, flag)
		}
		return fmt.Sprintf("virtual cluster %s's Pods may choose %s %s only (the host's admin allows more with %s)",
			o.VCluster, what, strings.Join(keys, ", "), flag)
	}
	nodeKey := func(p *field.Path, key string) {
		if !slices.Contains(o.NodeLabels, key) {
			errs = append(errs, field.Forbidden(p, allowed("nodes by label", o.NodeLabels, "--allow-node-label")))
		}
	}
	for _, k := range sortedKeys(v.Spec.NodeSelector) {
		nodeKey(spec.Child("nodeSelector").Key(k), k)
	}
	if a := v.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			terms := field.NewPath("spec", "affinity", "nodeAffinity")
			if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
				for i, t := range r.NodeSelectorTerms {
					errs = append(errs, nodeTerm(terms.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms").Index(i), t, nodeKey)...)
				}
			}
			for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				errs = append(errs, nodeTerm(terms.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("preference"), t.Preference, nodeKey)...)
			}
		}
		ownPods := func(p *field.Path, t corev1.PodAffinityTerm) {
			if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
				errs = append(errs, field.Forbidden(p, fmt.Sprintf(
					"namespaces and namespaceSelector: virtual cluster %s's Pods may be placed by their own Pods only", o.VCluster)))
			}
		}
		for _, pa := range []struct {
			name  string
			terms *podTerms
		}{{"podAffinity", podAffinityTerms(a.PodAffinity)}, {"podAntiAffinity", podAntiAffinityTerms(a.PodAntiAffinity)}} {
			p, terms := spec.Child("affinity", pa.name), pa.terms
			for i, t := range terms.required {
				ownPods(p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i), t)
			}
			for i, t := range terms.preferred {
				ownPods(p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm"), t.PodAffinityTerm)
			}
		}
	}
	for i, t := range v.Spec.Tolerations {
		if slices.Contains(o.Tolerations, t.Key) || (t.Key != "" && slices.Contains(everyPodTolerates, t.Key) && t.Effect == corev1.TaintEffectNoExecute) {
			continue
		}
		what := "taint " + t.Key
		if t.Key == "" {
			what = "every taint (a toleration without a key)"
		}
		errs = append(errs, field.Forbidden(spec.Child("tolerations").Index(i),
			what+": "+allowed("taints to tolerate", o.Tolerations, "--allow-toleration")))
	}
	if s := v.Spec.SchedulerName; s != "" && s != corev1.DefaultSchedulerName && !slices.Contains(o.Schedulers, s) {
		errs = append(errs, field.Forbidden(spec.Child("schedulerName"), allowed("scheduler", o.Schedulers, "--allow-scheduler")))
	}
	return errs
}

// nodeTerm checks the keys of one node selector term; matchFields select
// nodes by name, which no label allows.
func nodeTerm(p *field.Path, t corev1.NodeSelectorTerm, key func(*field.Path, string)) field.ErrorList {
	for i, r := range t.MatchExpressions {
		key(p.Child("matchExpressions").Index(i).Child("key"), r.Key)
	}
	var errs field.ErrorList
	for i := range t.MatchFields {
		errs = append(errs, field.Forbidden(p.Child("matchFields").Index(i), "a tenant Pod may not choose its node by name"))
	}
	return errs
}

// podTerms are the terms of a pod affinity or anti-affinity.
type podTerms struct {
	required  []corev1.PodAffinityTerm
	preferred []corev1.WeightedPodAffinityTerm
}

func podAffinityTerms(a *corev1.PodAffinity) *podTerms {
	if a == nil {
		return &podTerms{}
	}
	return &podTerms{a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution}
}

func podAntiAffinityTerms(a *corev1.PodAntiAffinity) *podTerms {
	if a == nil {
		return &podTerms{}
	}
	return &podTerms{a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
