package translate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A tenant chooses nothing of where its Pods run unless the host's admin
// allows it: node labels, taints, schedulers, pod affinity beyond its own
// host namespace are refused, naming the field and what is allowed; what
// the virtual API server gives every Pod (not-ready and unreachable
// tolerations) passes; allowed keys pass; --allow-host-access allows all.
func TestHostPodRefusesPlacementNotAllowed(t *testing.T) {
	gpu := corev1.NodeSelectorRequirement{Key: "gpu", Operator: corev1.NodeSelectorOpIn, Values: []string{"a100"}}
	nodeAffinity := func(r corev1.NodeSelectorRequirement) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{r}}}}}}
	}
	byName := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 1, Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}}
	nearOthers := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: "kubernetes.io/hostname", NamespaceSelector: &metav1.LabelSelector{}}}}}
	nearOwn := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}}
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	allowing := opts
	allowing.Placement = Placement{NodeLabels: []string{"gpu"}, Tolerations: []string{"dedicated"}, Schedulers: []string{"gang"}}
	for _, c := range []struct {
		name   string
		o      Options
		mutate func(*corev1.Pod)
		want   string // in the refusal; "" lets it through
	}{
		{"a node selector", opts, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "a100"} },
			"spec.nodeSelector[gpu]: Forbidden: the host places virtual cluster vc's Pods by their queue; it lets them choose no nodes by label (the host's admin allows some with --allow-node-label)"},
		{"an allowed node selector", allowing, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "a100"} }, ""},
		{"another node selector, where one is allowed", allowing, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} },
			"spec.nodeSelector[zone]: Forbidden: virtual cluster vc's Pods may choose nodes by label gpu only"},
		{"node affinity", opts, func(p *corev1.Pod) { p.Spec.Affinity = nodeAffinity(gpu) },
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key"},
		{"allowed node affinity", allowing, func(p *corev1.Pod) { p.Spec.Affinity = nodeAffinity(gpu) }, ""},
		{"a node by name", allowing, func(p *corev1.Pod) { p.Spec.Affinity = byName },
			"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0]: Forbidden: a tenant Pod may not choose its node by name"},
		{"affinity to other namespaces' Pods", allowing, func(p *corev1.Pod) { p.Spec.Affinity = nearOthers },
			"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: Forbidden: namespaces and namespaceSelector"},
		{"anti-affinity to its own Pods", opts, func(p *corev1.Pod) { p.Spec.Affinity = nearOwn }, ""},
		{"a toleration", opts, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "team-b", Effect: corev1.TaintEffectNoSchedule}}
		}, "spec.tolerations[0]: Forbidden: taint dedicated: the host places virtual cluster vc's Pods by their queue"},
		{"every taint", allowing, func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} },
			"spec.tolerations[0]: Forbidden: every taint (a toleration without a key)"},
		{"an allowed toleration", allowing, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}, ""},
		{"the virtual API server's own tolerations", opts, func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{notReady} }, ""},
		{"the not-ready taint, for scheduling", opts, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}, "spec.tolerations[0]"},
		{"another scheduler", opts, func(p *corev1.Pod) { p.Spec.SchedulerName = "gang" }, "spec.schedulerName: Forbidden"},
		{"an allowed scheduler", allowing, func(p *corev1.Pod) { p.Spec.SchedulerName = "gang" }, ""},
		{"the default scheduler", opts, func(p *corev1.Pod) { p.Spec.SchedulerName = corev1.DefaultSchedulerName }, ""},
		{"anything, with host access", func() Options { o := opts; o.AllowHostAccess = true; return o }(), func(p *corev1.Pod) {
			p.Spec.NodeSelector, p.Spec.SchedulerName = map[string]string{"zone": "a"}, "gang"
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := makePod("p", "ns").Obj()
			c.mutate(v)
			_, err := HostPod(v, c.o, nil)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want a refusal with %q", err, c.want)
			}
		})
	}
}

func TestValidatePlacement(t *testing.T) {
	for _, c := range []struct {
		p    Placement
		want string
	}{
		{Placement{NodeLabels: []string{"example.com/pool", "gpu"}, Tolerations: []string{"dedicated"}, Schedulers: []string{"gang"}}, ""},
		{Placement{NodeLabels: []string{"a b"}}, `--allow-node-label "a b"`},
		{Placement{Tolerations: []string{""}}, `--allow-toleration ""`},
		{Placement{Schedulers: []string{"Gang_1"}}, `--allow-scheduler "Gang_1"`},
	} {
		err := ValidatePlacement(c.p)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
}
