package core_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

// admitted is a workload already holding quota when the test's cycle runs.
type admitted struct {
	key, cq string
	usage   core.Usage
}

type cycleCase struct {
	name     string
	flavors  []core.Flavor
	cohorts  []core.Cohort
	cqs      []core.ClusterQueue
	admitted []admitted
	heads    []*core.Workload
	// want maps each head's key to "admit:<flavor per resource>" or
	// "<PendingReason>:<substring of the message>".
	want map[string]string
	// wantUsage checks usage per ClusterQueue after the cycle.
	wantUsage map[string]core.Usage
}

func runCycle(t *testing.T, tc cycleCase) {
	t.Helper()
	c := core.NewCluster()
	for _, f := range tc.flavors {
		c.SetFlavor(f)
	}
	for _, co := range tc.cohorts {
		c.SetCohort(co)
	}
	for _, cq := range tc.cqs {
		c.SetClusterQueue(cq)
	}
	for _, a := range tc.admitted {
		c.AddAdmitted(core.Admitted{Key: a.key, ClusterQueue: a.cq, Usage: a.usage})
	}
	ds := c.Cycle(tc.heads, Epoch)
	if len(ds) != len(tc.heads) {
		t.Fatalf("%d decisions for %d heads", len(ds), len(tc.heads))
	}
	for i, d := range ds {
		if d.Workload != tc.heads[i] {
			t.Errorf("decision %d is for %s, want %s", i, d.Workload.Key, tc.heads[i].Key)
		}
		want, ok := tc.want[d.Workload.Key]
		if !ok {
			t.Errorf("no expectation for %s", d.Workload.Key)
			continue
		}
		if (d.Admit == nil) == (d.Pending == nil) {
			t.Errorf("%s: exactly one of Admit and Pending must be set", d.Workload.Key)
			continue
		}
		if got := summary(d); !matches(got, want) {
			t.Errorf("%s: got %q, want %q\nall decisions:\n%s", d.Workload.Key, got, want, Describe(ds))
		}
	}
	for cq, want := range tc.wantUsage {
		got := c.Usage(cq)
		if len(got) != len(want) {
			t.Errorf("usage of %s = %v, want %v", cq, got, want)
			continue
		}
		for fr, v := range want {
			if got[fr] != v {
				t.Errorf("usage of %s = %v, want %v", cq, got, want)
				break
			}
		}
	}
}

func summary(d core.Decision) string {
	if d.Admit != nil {
		var parts []string
		for _, ps := range d.Admit.PodSets {
			for _, r := range sorted(ps.Flavors) {
				parts = append(parts, r+"="+ps.Flavors[r])
			}
		}
		return "admit:" + strings.Join(parts, ",")
	}
	return string(d.Pending.Reason) + ":" + d.Pending.Message
}

func matches(got, want string) bool {
	if strings.HasPrefix(want, "admit:") {
		return got == want
	}
	reason, msg, _ := strings.Cut(want, ":")
	return strings.HasPrefix(got, reason+":") && strings.Contains(got, msg)
}

func sorted(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

func TestCycleQuota(t *testing.T) {
	defaultFlavor := MakeFlavor("default").Obj()
	single := MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj()
	for _, tc := range []cycleCase{
		{
			name: "fits within nominal quota", flavors: []core.Flavor{defaultFlavor}, cqs: []core.ClusterQueue{single},
			heads:     []*core.Workload{MakeWorkload("a", "cq").PodSet("main", 4).Request("cpu", "2").Obj()},
			want:      map[string]string{"default/a": "admit:cpu=default"},
			wantUsage: map[string]core.Usage{"cq": {FR("default", "cpu"): Milli("8")}},
		},
		{
			name:    "does not fit: the reason names amount, resource, flavor and what is free",
			flavors: []core.Flavor{defaultFlavor}, cqs: []core.ClusterQueue{single},
			admitted: []admitted{{"default/old", "cq", core.Usage{FR("default", "cpu"): Milli("8")}}},
			heads:    []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "5").Obj()},
			want:     map[string]string{"default/a": "NoFit:needs 5 cpu in flavor default, 2 free"},
		},
		{
			name:    "fractional and binary quantities read as users write them",
			flavors: []core.Flavor{defaultFlavor},
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").ResourceGroup(
				MakeFlavorQuotas("default").Resource("cpu", "1").Resource("memory", "1Gi").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1500m").Request("memory", "2Gi").Obj()},
			want:  map[string]string{"default/a": "NoFit:needs 1500m cpu in flavor default, 1 free; needs 2Gi memory in flavor default, 1Gi free"},
		},
		{
			name:    "a resource the queue has no quota for is inadmissible",
			flavors: []core.Flavor{defaultFlavor}, cqs: []core.ClusterQueue{single},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").Request("nvidia.com/gpu", "1").Obj()},
			want:  map[string]string{"default/a": "Inadmissible:requests nvidia.com/gpu, which ClusterQueue cq has no quota for"},
		},
		{
			name:    "pods count against a pods quota when the queue covers pods",
			flavors: []core.Flavor{defaultFlavor},
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").ResourceGroup(
				MakeFlavorQuotas("default").Resource("cpu", "100").Resource("pods", "3").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("a", "cq").PodSet("main", 4).Request("cpu", "1").Obj()},
			want:  map[string]string{"default/a": "NoFit:needs 4 pods in flavor default, 3 free"},
		},
		{
			name:    "pod sets of one workload add up in a flavor",
			flavors: []core.Flavor{defaultFlavor}, cqs: []core.ClusterQueue{single},
			heads: []*core.Workload{MakeWorkload("a", "cq").
				PodSet("driver", 1).Request("cpu", "4").PodSet("workers", 2).Request("cpu", "4").Obj()},
			want: map[string]string{"default/a": "NoFit:pod set workers: needs 8 cpu in flavor default, 6 free"},
		},
		{
			name:    "zero requests are ignored",
			flavors: []core.Flavor{defaultFlavor}, cqs: []core.ClusterQueue{single},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").Request("memory", "0").Obj()},
			want:  map[string]string{"default/a": "admit:cpu=default"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runCycle(t, tc) })
	}
}

func TestCycleFlavors(t *testing.T) {
	onDemand := MakeFlavor("on-demand").Label("cloud.example.com/capacity", "on-demand").Obj()
	spot := MakeFlavor("spot").Label("cloud.example.com/capacity", "spot").
		Taint("spot", "true", corev1.TaintEffectNoSchedule).Obj()
	spotTolerated := MakeFlavor("spot").Label("cloud.example.com/capacity", "spot").
		Taint("spot", "true", corev1.TaintEffectNoSchedule).
		Toleration(corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true"}).Obj()
	gpuA := MakeFlavor("a100").Label("gpu", "a100").Obj()
	twoFlavors := MakeClusterQueue("cq").ResourceGroup(
		MakeFlavorQuotas("on-demand").Resource("cpu", "4").Obj(),
		MakeFlavorQuotas("spot").Resource("cpu", "10").Obj()).Obj()
	for _, tc := range []cycleCase{
		{
			name: "flavors are tried in the order listed", flavors: []core.Flavor{onDemand, spotTolerated},
			cqs:   []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "3").Obj()},
			want:  map[string]string{"default/a": "admit:cpu=on-demand"},
		},
		{
			name: "the next flavor is used when the first is full", flavors: []core.Flavor{onDemand, spotTolerated},
			cqs:   []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "6").Obj()},
			want:  map[string]string{"default/a": "admit:cpu=spot"},
		},
		{
			name: "a taint the pods do not tolerate rules the flavor out", flavors: []core.Flavor{onDemand, spot},
			cqs:   []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "6").Obj()},
			want: map[string]string{"default/a": "NoFit:needs 6 cpu in flavor on-demand, 4 free; " +
				"flavor spot: untolerated taint spot=true:NoSchedule"},
		},
		{
			name: "the pods' own toleration admits them to a tainted flavor", flavors: []core.Flavor{onDemand, spot},
			cqs: []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "6").
				Toleration(corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}).Obj()},
			want: map[string]string{"default/a": "admit:cpu=spot"},
		},
		{
			name: "a node selector contradicting the flavor's labels rules it out", flavors: []core.Flavor{onDemand, spotTolerated},
			cqs: []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").
				NodeSelector("cloud.example.com/capacity", "spot").NodeSelector("unrelated", "x").Obj()},
			want: map[string]string{"default/a": "admit:cpu=spot"},
		},
		{
			name: "required node affinity is checked on the flavor's labels", flavors: []core.Flavor{onDemand, spotTolerated},
			cqs: []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").NodeAffinity(corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "cloud.example.com/capacity", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"on-demand"}},
					{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}},
				}}).Obj()},
			want: map[string]string{"default/a": "admit:cpu=spot"},
		},
		{
			name: "no compatible flavor is inadmissible, not a quota problem", flavors: []core.Flavor{onDemand, spot},
			cqs: []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").
				NodeSelector("cloud.example.com/capacity", "spot").Obj()},
			want: map[string]string{"default/a": "Inadmissible:flavor on-demand: node selector cloud.example.com/capacity=spot does not match"},
		},
		{
			name: "each resource group is assigned its own flavor", flavors: []core.Flavor{onDemand, spotTolerated, gpuA},
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").
				ResourceGroup(MakeFlavorQuotas("on-demand").Resource("cpu", "2").Resource("memory", "4Gi").Obj(),
					MakeFlavorQuotas("spot").Resource("cpu", "10").Resource("memory", "40Gi").Obj()).
				ResourceGroup(MakeFlavorQuotas("a100").Resource("nvidia.com/gpu", "8").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("a", "cq").PodSet("main", 2).
				Request("cpu", "2").Request("memory", "1Gi").Request("nvidia.com/gpu", "1").Obj()},
			// cpu and memory move together to spot, since on-demand lacks cpu.
			want: map[string]string{"default/a": "admit:cpu=spot,memory=spot,nvidia.com/gpu=a100"},
		},
		{
			name:    "a queue whose flavor does not exist is inactive",
			flavors: []core.Flavor{onDemand}, cqs: []core.ClusterQueue{twoFlavors},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").Obj()},
			want:  map[string]string{"default/a": "ClusterQueueInactive:ResourceFlavor spot not found"},
		},
		{
			name: "a stopped queue admits nothing", flavors: []core.Flavor{MakeFlavor("default").Obj()},
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").Stopped().ResourceGroup(
				MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").Obj()},
			want:  map[string]string{"default/a": "ClusterQueueInactive:stopped by its stopPolicy"},
		},
		{
			name: "a namespace outside the selector is refused", flavors: []core.Flavor{MakeFlavor("default").Obj()},
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").
				NamespaceSelector(labels.SelectorFromSet(labels.Set{"team": "a"})).
				ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj()},
			heads: []*core.Workload{
				MakeWorkload("a", "cq").Request("cpu", "1").NamespaceLabels(labels.Set{"team": "a"}).Obj(),
				MakeWorkload("b", "cq").Request("cpu", "1").NamespaceLabels(labels.Set{"team": "b"}).Obj(),
			},
			want: map[string]string{"default/a": "admit:cpu=default",
				"default/b": "Inadmissible:does not match the namespaceSelector of ClusterQueue cq"},
		},
		{
			name: "a queue without namespaceSelector admits no namespace", flavors: []core.Flavor{MakeFlavor("default").Obj()},
			cqs: []core.ClusterQueue{MakeClusterQueue("cq").NamespaceSelector(nil).
				ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("a", "cq").Request("cpu", "1").Obj()},
			want:  map[string]string{"default/a": "Inadmissible:namespaceSelector"},
		},
		{
			name: "a queue that does not exist", flavors: []core.Flavor{MakeFlavor("default").Obj()},
			heads: []*core.Workload{MakeWorkload("a", "missing").Request("cpu", "1").Obj()},
			want:  map[string]string{"default/a": "ClusterQueueInactive:ClusterQueue missing does not exist"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runCycle(t, tc) })
	}
}

func TestCycleCohorts(t *testing.T) {
	f := MakeFlavor("default").Obj()
	cq := func(name, nominal string, limits ...string) core.ClusterQueue {
		return MakeClusterQueue(name).Cohort("co").
			ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", nominal, limits...).Obj()).Obj()
	}
	use := func(key, q, cpu string) admitted {
		return admitted{key, q, core.Usage{FR("default", "cpu"): Milli(cpu)}}
	}
	for _, tc := range []cycleCase{
		{
			name: "a queue borrows its cohort's idle quota", flavors: []core.Flavor{f},
			cqs:   []core.ClusterQueue{cq("a", "9"), cq("b", "12")},
			heads: []*core.Workload{MakeWorkload("big", "a").Request("cpu", "21").Obj()},
			want:  map[string]string{"default/big": "admit:cpu=default"},
		},
		{
			name: "borrowing stops at the cohort's total", flavors: []core.Flavor{f},
			cqs:   []core.ClusterQueue{cq("a", "9"), cq("b", "12")},
			heads: []*core.Workload{MakeWorkload("big", "a").Request("cpu", "22").Obj()},
			want:  map[string]string{"default/big": "NoFit:needs 22 cpu in flavor default, 21 free"},
		},
		{
			name: "what the lender uses is not lent", flavors: []core.Flavor{f},
			cqs:      []core.ClusterQueue{cq("a", "9"), cq("b", "12")},
			admitted: []admitted{use("default/b1", "b", "10")},
			heads:    []*core.Workload{MakeWorkload("big", "a").Request("cpu", "12").Obj()},
			want:     map[string]string{"default/big": "NoFit:needs 12 cpu in flavor default, 11 free"},
		},
		{
			name: "borrowingLimit caps what a queue takes beyond its nominal quota", flavors: []core.Flavor{f},
			cqs:   []core.ClusterQueue{cq("a", "9", "1"), cq("b", "12")},
			heads: []*core.Workload{MakeWorkload("big", "a").Request("cpu", "11").Obj()},
			want:  map[string]string{"default/big": "NoFit:needs 11 cpu in flavor default, 10 free"},
		},
		{
			name: "lendingLimit keeps part of the nominal quota for its owner", flavors: []core.Flavor{f},
			cqs:   []core.ClusterQueue{cq("a", "9"), cq("b", "12", "", "4")},
			heads: []*core.Workload{MakeWorkload("big", "a").Request("cpu", "14").Obj()},
			want:  map[string]string{"default/big": "NoFit:needs 14 cpu in flavor default, 13 free"},
		},
		{
			name: "the owner still has its kept part when others borrowed all they could", flavors: []core.Flavor{f},
			cqs:      []core.ClusterQueue{cq("a", "9"), cq("b", "12", "", "4")},
			admitted: []admitted{use("default/a1", "a", "13")},
			heads:    []*core.Workload{MakeWorkload("b1", "b").Request("cpu", "8").Obj()},
			want:     map[string]string{"default/b1": "admit:cpu=default"},
			wantUsage: map[string]core.Usage{
				"a": {FR("default", "cpu"): Milli("13")}, "b": {FR("default", "cpu"): Milli("8")}},
		},
		{
			name: "queues without a cohort do not share", flavors: []core.Flavor{f},
			cqs: []core.ClusterQueue{
				MakeClusterQueue("a").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "9").Obj()).Obj(),
				MakeClusterQueue("b").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "12").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("big", "a").Request("cpu", "10").Obj()},
			want:  map[string]string{"default/big": "NoFit:needs 10 cpu in flavor default, 9 free"},
		},
		{
			name: "a cohort's own quota is available to its queues", flavors: []core.Flavor{f},
			cohorts: []core.Cohort{MakeCohort("co").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "5").Obj()).Obj()},
			cqs:     []core.ClusterQueue{cq("a", "9"), cq("b", "12")},
			heads:   []*core.Workload{MakeWorkload("big", "a").Request("cpu", "26").Obj()},
			want:    map[string]string{"default/big": "admit:cpu=default"},
		},
		{
			name: "a parent cohort's quota reaches queues two levels down", flavors: []core.Flavor{f},
			cohorts: []core.Cohort{
				MakeCohort("co").Parent("root").Obj(),
				MakeCohort("root").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "100").Obj()).Obj()},
			cqs:   []core.ClusterQueue{cq("a", "1")},
			heads: []*core.Workload{MakeWorkload("big", "a").Request("cpu", "101").Obj()},
			want:  map[string]string{"default/big": "admit:cpu=default"},
		},
		{
			name: "a cohort's lendingLimit keeps quota inside its subtree", flavors: []core.Flavor{f},
			cohorts: []core.Cohort{
				MakeCohort("left").Parent("root").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10", "", "2").Obj()).Obj(),
				MakeCohort("root").Obj()},
			cqs: []core.ClusterQueue{
				MakeClusterQueue("l").Cohort("left").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "0").Obj()).Obj(),
				MakeClusterQueue("r").Cohort("root").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "0").Obj()).Obj()},
			heads: []*core.Workload{
				MakeWorkload("left", "l").Request("cpu", "10").Obj(),
				MakeWorkload("right", "r").Request("cpu", "3").Obj()},
			want: map[string]string{"default/left": "admit:cpu=default",
				"default/right": "NoFit:needs 3 cpu in flavor default, 2 free"},
		},
		{
			name: "a cycle of cohort parents makes the queues below inactive", flavors: []core.Flavor{f},
			cohorts: []core.Cohort{MakeCohort("co").Parent("x").Obj(), MakeCohort("x").Parent("co").Obj()},
			cqs:     []core.ClusterQueue{cq("a", "9")},
			heads:   []*core.Workload{MakeWorkload("w", "a").Request("cpu", "1").Obj()},
			want:    map[string]string{"default/w": "ClusterQueueInactive:cycle of parents"},
		},
		{
			name:    "whenCanBorrow TryNextFlavor prefers a later flavor that fits without borrowing",
			flavors: []core.Flavor{MakeFlavor("one").Obj(), MakeFlavor("two").Obj()},
			cqs: []core.ClusterQueue{
				MakeClusterQueue("a").Cohort("co").TryNextFlavorWhenCanBorrow().ResourceGroup(
					MakeFlavorQuotas("one").Resource("cpu", "1").Obj(), MakeFlavorQuotas("two").Resource("cpu", "4").Obj()).Obj(),
				MakeClusterQueue("b").Cohort("co").ResourceGroup(
					MakeFlavorQuotas("one").Resource("cpu", "10").Obj(), MakeFlavorQuotas("two").Resource("cpu", "0").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("w", "a").Request("cpu", "3").Obj()},
			want:  map[string]string{"default/w": "admit:cpu=two"},
		},
		{
			name:    "by default a flavor that fits by borrowing is taken",
			flavors: []core.Flavor{MakeFlavor("one").Obj(), MakeFlavor("two").Obj()},
			cqs: []core.ClusterQueue{
				MakeClusterQueue("a").Cohort("co").ResourceGroup(
					MakeFlavorQuotas("one").Resource("cpu", "1").Obj(), MakeFlavorQuotas("two").Resource("cpu", "4").Obj()).Obj(),
				MakeClusterQueue("b").Cohort("co").ResourceGroup(
					MakeFlavorQuotas("one").Resource("cpu", "10").Obj(), MakeFlavorQuotas("two").Resource("cpu", "0").Obj()).Obj()},
			heads: []*core.Workload{MakeWorkload("w", "a").Request("cpu", "3").Obj()},
			want:  map[string]string{"default/w": "admit:cpu=one"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runCycle(t, tc) })
	}
}

func TestCycleOrdering(t *testing.T) {
	f := MakeFlavor("default").Obj()
	cq := func(name, nominal string) core.ClusterQueue {
		return MakeClusterQueue(name).Cohort("co").
			ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", nominal).Obj()).Obj()
	}
	for _, tc := range []cycleCase{
		{
			name:    "a workload within its nominal quota goes before one that borrows, whatever the priorities",
			flavors: []core.Flavor{f}, cqs: []core.ClusterQueue{cq("a", "4"), cq("b", "4")},
			heads: []*core.Workload{
				MakeWorkload("borrower", "a").Priority(100).Request("cpu", "6").Obj(),
				MakeWorkload("owner", "b").Priority(1).Request("cpu", "4").Obj()},
			want: map[string]string{"default/owner": "admit:cpu=default",
				"default/borrower": "Contention:taken by workloads admitted before it"},
		},
		{
			name:    "among borrowers, higher priority goes first",
			flavors: []core.Flavor{f}, cqs: []core.ClusterQueue{cq("a", "1"), cq("b", "1"), cq("c", "4")},
			heads: []*core.Workload{
				MakeWorkload("low", "a").Priority(1).Request("cpu", "4").Obj(),
				MakeWorkload("high", "b").Priority(2).Request("cpu", "4").Obj()},
			want: map[string]string{"default/high": "admit:cpu=default", "default/low": "Contention:"},
		},
		{
			name:    "at equal priority the older goes first",
			flavors: []core.Flavor{f}, cqs: []core.ClusterQueue{cq("a", "1"), cq("b", "1"), cq("c", "4")},
			heads: []*core.Workload{
				MakeWorkload("newer", "a").Created(time.Minute).Request("cpu", "4").Obj(),
				MakeWorkload("older", "b").Created(time.Second).Request("cpu", "4").Obj()},
			want: map[string]string{"default/older": "admit:cpu=default", "default/newer": "Contention:"},
		},
		{
			name:    "every head that still fits is admitted in the same cycle",
			flavors: []core.Flavor{f}, cqs: []core.ClusterQueue{cq("a", "4"), cq("b", "4"), cq("c", "4")},
			heads: []*core.Workload{
				MakeWorkload("x", "a").Request("cpu", "4").Obj(),
				MakeWorkload("y", "b").Request("cpu", "4").Obj(),
				MakeWorkload("z", "c").Request("cpu", "2").Obj()},
			want: map[string]string{"default/x": "admit:cpu=default", "default/y": "admit:cpu=default",
				"default/z": "admit:cpu=default"},
			wantUsage: map[string]core.Usage{"a": {FR("default", "cpu"): Milli("4")}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { runCycle(t, tc) })
	}
}

// Recording a workload again replaces its usage: quota is never counted twice.
func TestAddAdmittedReplaces(t *testing.T) {
	c := core.NewCluster()
	c.SetFlavor(MakeFlavor("default").Obj())
	c.SetClusterQueue(MakeClusterQueue("a").Cohort("co").
		ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4", "", "1").Obj()).Obj())
	c.SetClusterQueue(MakeClusterQueue("b").Cohort("co").
		ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "4").Obj()).Obj())
	u := core.Usage{FR("default", "cpu"): Milli("3")}
	c.AddAdmitted(core.Admitted{Key: "ns/w", ClusterQueue: "a", Usage: u})
	c.AddAdmitted(core.Admitted{Key: "ns/w", ClusterQueue: "a", Usage: u})
	if got := c.Usage("a")[FR("default", "cpu")]; got != Milli("3") {
		t.Fatalf("usage after recording twice = %d, want %d", got, Milli("3"))
	}
	// b sees a's lendable single cpu and its own 4.
	if got := c.Available("b", FR("default", "cpu")); got != Milli("5") {
		t.Errorf("available to b = %d, want %d", got, Milli("5"))
	}
	c.RemoveAdmitted("ns/w")
	c.RemoveAdmitted("ns/w")
	if got := c.Usage("a"); len(got) != 0 {
		t.Errorf("usage after release = %v", got)
	}
	if got := c.Available("b", FR("default", "cpu")); got != Milli("5") {
		t.Errorf("available to b after release = %d, want %d", got, Milli("5"))
	}
	// Usage survives a queue being redefined.
	c.AddAdmitted(core.Admitted{Key: "ns/w", ClusterQueue: "a", Usage: u})
	c.SetClusterQueue(MakeClusterQueue("a").Cohort("co").
		ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "8").Obj()).Obj())
	if got := c.Usage("a")[FR("default", "cpu")]; got != Milli("3") {
		t.Errorf("usage after redefining the queue = %d", got)
	}
}

// With SetBlockUntilPodsReady a ClusterQueue admits one workload whose pods
// are watched, then nothing more until they are all Ready; other queues go
// on, and a workload whose pods are not watched blocks nothing.
func TestBlockUntilPodsReady(t *testing.T) {
	c := core.NewCluster()
	c.SetBlockUntilPodsReady(true)
	c.SetFlavor(MakeFlavor("default").Obj())
	for _, name := range []string{"a", "b"} {
		c.SetClusterQueue(MakeClusterQueue(name).ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj())
	}
	gang := MakeWorkload("gang", "a").PodSet("main", 2).Request("cpu", "1").AwaitsPods().Obj()
	plain := MakeWorkload("plain", "b").PodSet("main", 1).Request("cpu", "1").Obj()
	ds := c.Cycle([]*core.Workload{gang, plain}, Epoch)
	if ds[0].Admit == nil || ds[1].Admit == nil || !c.PodsPending("default/gang") || c.PodsPending("default/plain") {
		t.Fatalf("first cycle: %+v / %+v", ds[0].Pending, ds[1].Pending)
	}
	next := MakeWorkload("next", "a").PodSet("main", 1).Request("cpu", "1").Obj()
	more := MakeWorkload("more", "b").PodSet("main", 1).Request("cpu", "1").Obj()
	ds = c.Cycle([]*core.Workload{next, more}, Epoch)
	if p := ds[0].Pending; p == nil || p.Reason != core.WaitingForPodsReady || !strings.Contains(p.Message, "the pods of the 1 workload(s)") {
		t.Fatalf("behind a gang whose pods are not Ready: %+v", p)
	}
	if ds[1].Admit == nil {
		t.Fatalf("another queue is not blocked: %+v", ds[1].Pending)
	}
	// Its pods Ready (the API shows it admitted without PodsPending).
	c.AddAdmitted(core.Admitted{Key: "default/gang", ClusterQueue: "a", Usage: core.Usage{FR("default", "cpu"): Milli("2")}})
	if ds = c.Cycle([]*core.Workload{next}, Epoch); ds[0].Admit == nil {
		t.Fatalf("after the gang's pods are Ready: %+v", ds[0].Pending)
	}
	// Released while its pods were pending, a gang blocks no more either.
	late := MakeWorkload("late", "a").PodSet("main", 1).Request("cpu", "1").AwaitsPods().Obj()
	if ds = c.Cycle([]*core.Workload{late}, Epoch); ds[0].Admit == nil {
		t.Fatal(ds[0].Pending)
	}
	c.RemoveAdmitted("default/late")
	if ds = c.Cycle([]*core.Workload{MakeWorkload("after", "a").PodSet("main", 1).Request("cpu", "1").Obj()}, Epoch); ds[0].Admit == nil {
		t.Fatalf("after the gang let go of its quota: %+v", ds[0].Pending)
	}
	// Off, nothing blocks.
	c.SetBlockUntilPodsReady(false)
	c.Cycle([]*core.Workload{MakeWorkload("g2", "a").PodSet("main", 1).Request("cpu", "1").AwaitsPods().Obj()}, Epoch)
	if ds = c.Cycle([]*core.Workload{MakeWorkload("free", "a").PodSet("main", 1).Request("cpu", "1").Obj()}, Epoch); ds[0].Admit == nil {
		t.Fatalf("not blocking: %+v", ds[0].Pending)
	}
}

// A workload that allows fewer pods gets the most that fit when all do not,
// never fewer than its minimum, and never by preempting: then it waits, or
// preempts for all its pods as any other would.
func TestPartialAdmission(t *testing.T) {
	setup := func(used string) *core.Cluster {
		c := core.NewCluster()
		c.SetFlavor(MakeFlavor("default").Obj())
		c.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj())
		c.AddAdmitted(core.Admitted{Key: "default/running", ClusterQueue: "cq", Usage: core.Usage{FR("default", "cpu"): Milli(used)}})
		return c
	}
	for _, tc := range []struct {
		name       string
		used       string
		w          *core.Workload
		want       []int32 // admitted counts; nil: pending
		wantReason core.PendingReason
	}{
		{"all fit", "0", MakeWorkload("w", "cq").PodSet("main", 8).Request("cpu", "1").MinCount(2).Obj(), []int32{8}, ""},
		{"the most that fit", "3", MakeWorkload("w", "cq").PodSet("main", 8).Request("cpu", "1").MinCount(2).Obj(), []int32{7}, ""},
		{"down to the minimum", "8", MakeWorkload("w", "cq").PodSet("main", 8).Request("cpu", "1").MinCount(2).Obj(), []int32{2}, ""},
		{"not below it", "9", MakeWorkload("w", "cq").PodSet("main", 8).Request("cpu", "1").MinCount(2).Obj(), nil, core.NoFit},
		{"without a minimum, all or nothing", "3", MakeWorkload("w", "cq").PodSet("main", 8).Request("cpu", "1").Obj(), nil, core.NoFit},
		{"pod sets give up the same share", "4",
			MakeWorkload("w", "cq").PodSet("workers", 4).Request("cpu", "1").MinCount(2).
				PodSet("driver", 1).Request("cpu", "1").
				PodSet("ps", 6).Request("cpu", "0.5").MinCount(2).Obj(), []int32{3, 1, 4}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setup(tc.used)
			d := c.Cycle([]*core.Workload{tc.w}, Epoch)[0]
			if tc.want == nil {
				if d.Admit != nil || d.Pending == nil || d.Pending.Reason != tc.wantReason {
					t.Fatalf("admitted %+v, pending %+v; want pending %s", d.Admit, d.Pending, tc.wantReason)
				}
				return
			}
			if d.Admit == nil {
				t.Fatalf("pending: %+v", d.Pending)
			}
			var got []int32
			var cpu int64
			for _, ps := range d.Admit.PodSets {
				got = append(got, ps.Count)
				cpu += ps.Usage[FR("default", "cpu")]
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("admitted %v pods, want %v", got, tc.want)
			}
			if cpu != d.Admit.Usage[FR("default", "cpu")] || cpu+Milli(tc.used) > Milli("10") {
				t.Fatalf("usage %d of pod sets, %d in all, with %s used of 10", cpu, d.Admit.Usage[FR("default", "cpu")], tc.used)
			}
		})
	}
}

// Partial admission is preferred to preempting: a lower-priority workload
// keeps running when fewer pods fit beside it.
func TestPartialAdmissionBeforePreemption(t *testing.T) {
	c := core.NewCluster()
	c.SetFlavor(MakeFlavor("default").Obj())
	c.SetClusterQueue(MakeClusterQueue("cq").Preemption(core.PreemptLowerPriority, core.PreemptNever).
		ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj())
	c.AddAdmitted(core.Admitted{Key: "default/low", ClusterQueue: "cq", Usage: core.Usage{FR("default", "cpu"): Milli("4")}})
	d := c.Cycle([]*core.Workload{MakeWorkload("high", "cq").Priority(10).PodSet("main", 8).Request("cpu", "1").MinCount(4).Obj()}, Epoch)[0]
	if d.Admit == nil || d.Admit.PodSets[0].Count != 6 || len(d.Preempt) > 0 {
		t.Fatalf("admit %+v, preempt %v; want 6 pods and no victim", d.Admit, d.Preempt)
	}
	// Its minimum does not fit: it preempts for all its pods.
	d = c.Cycle([]*core.Workload{MakeWorkload("higher", "cq").Priority(20).PodSet("main", 8).Request("cpu", "1").MinCount(5).Obj()}, Epoch)[0]
	if d.Admit != nil || len(d.Preempt) == 0 {
		t.Fatalf("admit %+v, preempt %v; want a preemption", d.Admit, d.Preempt)
	}
}

// A workload that would borrow what another queue of its cohort, with
// more work waiting, would take back at once by preemption waits a cycle
// instead: the other queue's next workload is then a head and goes first,
// and nothing is admitted only to be preempted. With nothing more waiting
// there, it borrows at once.
func TestBorrowingWaitsForAQueueThatWouldReclaim(t *testing.T) {
	for _, fair := range []bool{false, true} {
		setup := func() *core.Cluster {
			c := core.NewCluster()
			c.SetFairSharing(fair)
			c.SetFlavor(MakeFlavor("default").Obj())
			for _, q := range []string{"q0", "q1"} {
				c.SetClusterQueue(MakeClusterQueue(q).Cohort("co").Preemption(core.PreemptNever, core.PreemptAny).
					ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj())
			}
			return c
		}
		borrower := func() *core.Workload { return MakeWorkload("b", "q0").PodSet("main", 1).Request("cpu", "3").Obj() }
		first := func() *WorkloadWrapper { return MakeWorkload("a", "q1").PodSet("main", 1).Request("cpu", "1") }

		c := setup()
		d := c.Cycle([]*core.Workload{borrower(), first().Obj()}, Epoch)
		if d[0].Admit == nil || d[1].Admit == nil {
			t.Fatalf("fair sharing %v, nothing behind: both fit, borrowing:\n%s", fair, Describe(d))
		}

		c = setup()
		b := borrower()
		d = c.Cycle([]*core.Workload{b, first().Behind().Obj()}, Epoch)
		if d[1].Admit == nil || d[0].Admit != nil || d[0].Pending.Reason != core.Contention ||
			!strings.Contains(d[0].Pending.Message, "ClusterQueue q1 comes first in the cohort and has more work waiting") {
			t.Fatalf("fair sharing %v, more behind a: b borrows what q1's next takes back:\n%s", fair, Describe(d))
		}
		next := MakeWorkload("a2", "q1").PodSet("main", 1).Request("cpu", "1").Obj()
		d = c.Cycle([]*core.Workload{b, next}, Epoch)
		if d[1].Admit == nil || d[0].Admit != nil || len(d[0].Preempt) > 0 || len(d[1].Preempt) > 0 {
			t.Fatalf("fair sharing %v, the next cycle: a2 goes, b waits, nobody is preempted:\n%s", fair, Describe(d))
		}

		// Reclaiming only from lower priorities, q1 could not take back
		// what b borrows at its own priority: b goes at once.
		c = setup()
		c.SetClusterQueue(MakeClusterQueue("q1").Cohort("co").Preemption(core.PreemptNever, core.PreemptLowerPriority).
			ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "2").Obj()).Obj())
		d = c.Cycle([]*core.Workload{borrower(), first().Behind().Obj()}, Epoch)
		if d[0].Admit == nil || d[1].Admit == nil {
			t.Fatalf("fair sharing %v, q1 reclaims only from lower priorities: both fit:\n%s", fair, Describe(d))
		}
	}
}

// A pod set whose flavors are set (the increase of a running Job) is
// admitted only in them, though another flavor listed first has room, and
// waits, saying why, when they have none.
func TestPinnedFlavors(t *testing.T) {
	c := core.NewCluster()
	c.SetFlavor(MakeFlavor("a").Obj())
	c.SetFlavor(MakeFlavor("b").Obj())
	c.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("a").Resource("cpu", "4").Obj(),
		MakeFlavorQuotas("b").Resource("cpu", "1").Obj()).Obj())
	grow := func(cpu string) *core.Workload {
		w := MakeWorkload("grow", "cq").PodSet("main", 1).Request("cpu", cpu).Obj()
		w.PodSets[0].Flavors = map[string]string{"cpu": "b"}
		return w
	}
	if d := c.Cycle([]*core.Workload{grow("2")}, Epoch); d[0].Admit != nil || !strings.Contains(d[0].Pending.Message, "flavor a: its pods run in flavor b for cpu") {
		t.Fatalf("pinned to b, too big for it:\n%s", Describe(d))
	}
	d := c.Cycle([]*core.Workload{grow("1")}, Epoch)
	if d[0].Admit == nil || d[0].Admit.PodSets[0].Flavors["cpu"] != "b" {
		t.Fatalf("pinned to b, fits there:\n%s", Describe(d))
	}
}
