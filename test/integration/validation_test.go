package integration

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// The API server refuses invalid queues with a message naming the field and
// the rule, and stores nothing.
func TestClusterQueueValidation(t *testing.T) {
	env := testenv.New(t)
	fq := func(name string) *FlavorQuotasWrapper { return MakeFlavorQuotas(name) }
	manyGroups := MakeClusterQueue("")
	for i := range 17 {
		manyGroups.ResourceGroup(fq(fmt.Sprintf("f%d", i)).Resource(fmt.Sprintf("r%d", i), "1").Obj())
	}
	manyFlavors := MakeClusterQueue("")
	for g := range 5 {
		var flavors []berthv1.FlavorQuotas
		for f := range 14 {
			flavors = append(flavors, fq(fmt.Sprintf("g%d-f%d", g, f)).Resource(fmt.Sprintf("r%d", g), "1").Obj())
		}
		manyFlavors.ResourceGroup(flavors...)
	}
	for _, tc := range []struct {
		name string
		cq   *berthv1.ClusterQueue
		want []string
	}{
		{"negative nominal quota",
			MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "-1").Obj()).Obj(),
			[]string{"spec.resourceGroups[0].flavors[0].resources[0]", "nominalQuota must not be negative"}},
		{"negative borrowing limit",
			MakeClusterQueue("").Cohort("c").ResourceGroup(fq("a").Resource("cpu", "1", "-2").Obj()).Obj(),
			[]string{"borrowingLimit must not be negative"}},
		{"negative lending limit",
			MakeClusterQueue("").Cohort("c").ResourceGroup(fq("a").Resource("cpu", "1", "", "-1").Obj()).Obj(),
			[]string{"lendingLimit must not be negative"}},
		{"borrowing limit without a cohort",
			MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1", "2").Obj()).Obj(),
			[]string{"spec", "borrowingLimit is only allowed in a ClusterQueue with a cohort"}},
		{"lending limit without a cohort",
			MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1", "", "1").Obj()).Obj(),
			[]string{"lendingLimit is only allowed in a ClusterQueue with a cohort"}},
		{"lending limit above the nominal quota",
			MakeClusterQueue("").Cohort("c").ResourceGroup(fq("a").Resource("cpu", "1", "", "1500m").Obj()).Obj(),
			[]string{"spec.resourceGroups[0].flavors[0].resources[0]", "lendingLimit must not exceed nominalQuota"}},
		{"a flavor in two resource groups",
			MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).
				ResourceGroup(fq("a").Resource("memory", "1Gi").Obj()).Obj(),
			[]string{"a flavor may appear in only one resource group"}},
		{"a flavor twice in one resource group",
			MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj(), fq("a").Resource("cpu", "2").Obj()).Obj(),
			[]string{"spec.resourceGroups[0].flavors[1]", "Duplicate value"}},
		{"a resource covered by two groups",
			MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).
				ResourceGroup(fq("b").Resource("cpu", "1").Obj()).Obj(),
			[]string{"a resource may be covered by only one resource group"}},
		{"a flavor without a quota for a covered resource",
			func() *berthv1.ClusterQueue {
				cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
				cq.Spec.ResourceGroups[0].CoveredResources = []corev1.ResourceName{"cpu", "memory"}
				return cq
			}(),
			[]string{"each flavor must give a quota for exactly the group's coveredResources"}},
		{"more than 16 resource groups", manyGroups.Obj(),
			[]string{"spec.resourceGroups", "must have at most 16 items"}},
		{"more than 64 flavors", manyFlavors.Obj(),
			[]string{"a ClusterQueue may list at most 64 flavors across its resource groups"}},
		{"a default run time past the maximum", func() *berthv1.ClusterQueue {
			cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
			cq.Spec.RunTime = &berthv1.RunTimePolicy{DefaultSeconds: ptr(int32(600)), MaximumSeconds: ptr(int32(60))}
			return cq
		}(), []string{"spec.runTime", "defaultSeconds may not exceed maximumSeconds"}},
		{"a budget of nothing", func() *berthv1.ClusterQueue {
			cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
			cq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("0"), Window: berthv1.CalendarMonthBudget, WhenSpent: berthv1.StopAdmitting}
			return cq
		}(), []string{"spec.budget", "resourceHours must be positive"}},
		{"a rolling budget without a period", func() *berthv1.ClusterQueue {
			cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
			cq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("5"), Window: berthv1.RollingBudget, WhenSpent: berthv1.StopAdmitting}
			return cq
		}(), []string{"spec.budget", "period is set for a Rolling window, and only for it"}},
		{"a budget that lowers priority to no priority", func() *berthv1.ClusterQueue {
			cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
			cq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("5"), Window: berthv1.CalendarMonthBudget, WhenSpent: berthv1.LowerPriority}
			return cq
		}(), []string{"spec.budget", "spentPriority is set for whenSpent: LowerPriority, and only for it"}},
		{"a budget that stops, with a priority it would not use", func() *berthv1.ClusterQueue {
			cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
			cq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("5"), Window: berthv1.CalendarMonthBudget,
				WhenSpent: berthv1.StopAdmitting, SpentPriority: ptr(int32(0))}
			return cq
		}(), []string{"spec.budget", "spentPriority is set for whenSpent: LowerPriority, and only for it"}},
		{"a budget that does what berth cannot", func() *berthv1.ClusterQueue {
			cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
			cq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("5"), Window: berthv1.CalendarMonthBudget, WhenSpent: "Deactivate"}
			return cq
		}(), []string{"spec.budget.whenSpent", `supported values: "NoBorrowing", "Stop", "LowerPriority"`}},
		{"a run time of zero", func() *berthv1.ClusterQueue {
			cq := MakeClusterQueue("").ResourceGroup(fq("a").Resource("cpu", "1").Obj()).Obj()
			cq.Spec.RunTime = &berthv1.RunTimePolicy{MaximumSeconds: ptr(int32(0))}
			return cq
		}(), []string{"spec.runTime.maximumSeconds", "should be greater than or equal to 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cq.Name = env.Name(strings.ReplaceAll(tc.name, " ", "-"))
			err := env.Client.Create(ctx, tc.cq)
			if err == nil {
				_ = env.Client.Delete(ctx, tc.cq)
				t.Fatal("accepted")
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("refused, but not as invalid: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			var got berthv1.ClusterQueue
			if err := env.Client.Get(ctx, client.ObjectKey{Name: tc.cq.Name}, &got); !apierrors.IsNotFound(err) {
				t.Errorf("a refused ClusterQueue was stored (get: %v)", err)
			}
		})
	}

	// Everything at the limits is accepted.
	ok := MakeClusterQueue(env.Name("ok")).Cohort("c").
		ResourceGroup(fq("a").Resource("cpu", "4", "2", "4").Resource("memory", "8Gi").Obj(),
			fq("b").Resource("cpu", "0").Resource("memory", "0").Obj()).
		ResourceGroup(fq("gpu").Resource("nvidia.com/gpu", "8").Obj()).Obj()
	env.Create(t, ok)
}

// A LocalQueue keeps the ClusterQueue it was created for; Cohorts are checked too.
func TestLocalQueueAndCohortValidation(t *testing.T) {
	env := testenv.New(t)
	lq := MakeLocalQueue("main", env.Namespace, "first").Obj()
	env.Create(t, lq)
	// A patch: the controller may write the LocalQueue's status between
	// create and edit, and a stale update would fail for that instead.
	patch := client.MergeFrom(lq.DeepCopy())
	lq.Spec.ClusterQueue = "second"
	err := env.Client.Patch(ctx, lq, patch)
	if err == nil || !strings.Contains(err.Error(), "spec.clusterQueue") || !strings.Contains(err.Error(), "clusterQueue is immutable") {
		t.Errorf("changing spec.clusterQueue: %v", err)
	}

	co := &berthv1.Cohort{}
	co.Name = env.Name("co")
	co.Spec.ResourceGroups = []berthv1.ResourceGroup{
		{CoveredResources: []corev1.ResourceName{"cpu"}, Flavors: []berthv1.FlavorQuotas{MakeFlavorQuotas("a").Resource("cpu", "1").Obj()}},
		{CoveredResources: []corev1.ResourceName{"cpu"}, Flavors: []berthv1.FlavorQuotas{MakeFlavorQuotas("b").Resource("cpu", "1").Obj()}},
	}
	err = env.Client.Create(ctx, co)
	if err == nil || !strings.Contains(err.Error(), "a resource may be covered by only one resource group") {
		t.Errorf("a Cohort covering cpu twice: %v", err)
	}
}

// Fields berth does not act on yet are refused with a message saying so,
// never accepted and ignored; so are values it cannot follow.
func TestUnsupportedFieldsAreRefused(t *testing.T) {
	env := testenv.New(t)
	minCount, rack := int32(1), "rack"
	partial := &berthv1.Workload{}
	partial.Name, partial.Namespace = "partial", env.Namespace
	partial.Spec.QueueName = "main"
	partial.Spec.PodSets = []berthv1.PodSet{{Name: "main", Count: 4, MinCount: &minCount,
		TopologyRequest: &berthv1.TopologyRequest{Required: &rack}}}
	tooMany := partial.DeepCopy()
	tooMany.Name = "too-many"
	tooMany.Spec.PodSets[0].TopologyRequest, tooMany.Spec.PodSets[0].MinCount = nil, ptr(int32(5))
	for _, tc := range []struct {
		obj  client.Object
		want []string
	}{
		{partial, []string{"spec.podSets[0]", "minCount (partial admission) together with a topologyRequest is not supported yet"}},
		{tooMany, []string{"spec.podSets[0]", "minCount must not be more than count"}},
	} {
		err := env.Client.Create(ctx, tc.obj)
		if err == nil {
			t.Errorf("%T %s accepted", tc.obj, tc.obj.GetName())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%T %s: error lacks %q:\n%v", tc.obj, tc.obj.GetName(), w, err)
			}
		}
	}
}

// Topologies, topology flavors and topology requests are checked by the API
// server, each bad one refused with a message naming the field.
func TestTopologyValidation(t *testing.T) {
	env := testenv.New(t)
	levels := func(labels ...string) *berthv1.Topology {
		topo := &berthv1.Topology{}
		topo.Name = env.Name("topo")
		topo.Spec.Levels = []berthv1.TopologyLevel{}
		for _, l := range labels {
			topo.Spec.Levels = append(topo.Spec.Levels, berthv1.TopologyLevel{NodeLabel: l})
		}
		return topo
	}
	var seventeen []string
	for i := range 17 {
		seventeen = append(seventeen, fmt.Sprintf("example.com/level-%d", i))
	}
	req := func(r berthv1.TopologyRequest) *berthv1.Workload {
		wl := &berthv1.Workload{}
		wl.Name, wl.Namespace = env.Name("wl"), env.Namespace
		wl.Spec.PodSets = []berthv1.PodSet{{Name: "main", Count: 4, TopologyRequest: &r}}
		return wl
	}
	rack, host, two := "topology.berth.dev/rack", "kubernetes.io/hostname", int32(2)
	yes := true
	noLabels := MakeResourceFlavor(env.Name("rf")).Obj()
	noLabels.Spec.TopologyName = ptr("racks")
	for _, tc := range []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"no levels", levels(), []string{"spec.levels: a Topology needs at least one level"}},
		{"a label twice", levels(rack, rack), []string{"spec.levels: each nodeLabel may appear only once"}},
		{"hostname above another level", levels(host, rack), []string{"spec.levels: kubernetes.io/hostname may only be the lowest (last) level"}},
		{"17 levels", levels(seventeen...), []string{"spec.levels", "must have at most 16 items"}},
		{"not a label", levels("a rack"), []string{"spec.levels[0].nodeLabel"}},
		{"a topology flavor without node labels", noLabels, []string{"spec.topologyName: a flavor with a topology needs nodeLabels"}},
		{"two modes", req(berthv1.TopologyRequest{Required: &rack, Preferred: &rack}),
			[]string{"spec.podSets[0].topologyRequest", "set exactly one of required, preferred and unconstrained"}},
		{"no mode", req(berthv1.TopologyRequest{}), []string{"set exactly one of required, preferred and unconstrained"}},
		{"a slice level without a size", req(berthv1.TopologyRequest{Unconstrained: &yes, SliceRequiredLevel: &host}),
			[]string{"spec.podSets[0].topologyRequest", "sliceRequiredLevel and sliceSize go together"}},
		{"a slice size without a level", req(berthv1.TopologyRequest{Required: &rack, SliceSize: &two}),
			[]string{"sliceRequiredLevel and sliceSize go together"}},
	} {
		err := env.Client.Create(ctx, tc.obj)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", tc.name, w, err)
			}
		}
	}
	// Good ones are stored; a flavor keeps its topology once it has one.
	env.Create(t, levels("topology.berth.dev/block", rack, host))
	rf := MakeResourceFlavor(env.Name("rf")).NodeLabel("pool", "a").Obj()
	rf.Spec.TopologyName = ptr("racks")
	env.Create(t, rf)
	for _, change := range []*string{ptr("blocks"), nil} {
		patch := client.MergeFrom(rf.DeepCopy())
		changed := rf.DeepCopy()
		changed.Spec.TopologyName = change
		err := env.Client.Patch(ctx, changed, patch)
		if err == nil || !strings.Contains(err.Error(), "spec.topologyName cannot be changed or removed once set") {
			t.Errorf("changing topologyName to %v: %v, want it refused", change, err)
		}
	}
	env.Create(t, req(berthv1.TopologyRequest{Required: &rack, SliceRequiredLevel: &host, SliceSize: &two}))
}
