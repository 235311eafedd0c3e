package integration

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	lq.Spec.ClusterQueue = "second"
	err := env.Client.Update(ctx, lq)
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
// never accepted and ignored.
func TestUnsupportedFieldsAreRefused(t *testing.T) {
	env := testenv.New(t)
	withChecks := MakeClusterQueue(env.Name("checks")).ResourceGroup(MakeFlavorQuotas("a").Resource("cpu", "1").Obj()).Obj()
	withChecks.Spec.AdmissionChecks = []string{"provisioning"}
	topo := "racks"
	withTopology := MakeResourceFlavor(env.Name("topo")).NodeLabel("pool", "a").Obj()
	withTopology.Spec.TopologyName = &topo
	minCount := int32(1)
	partial := &berthv1.Workload{}
	partial.Name, partial.Namespace = "partial", env.Namespace
	partial.Spec.QueueName = "main"
	partial.Spec.PodSets = []berthv1.PodSet{{Name: "main", Count: 4, MinCount: &minCount}}
	for _, tc := range []struct {
		obj  client.Object
		want []string
	}{
		{withChecks, []string{"spec.admissionChecks", "admissionChecks are not supported yet"}},
		{withTopology, []string{"spec.topologyName", "topologyName is not supported yet"}},
		{partial, []string{"spec.podSets[0].minCount", "minCount (partial admission) is not supported yet"}},
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
