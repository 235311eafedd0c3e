package core_test

import (
	"slices"
	"testing"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

// A ClusterQueue admits only while every AdmissionCheck it names exists and
// is Active, and its admissions carry the checks to pass.
func TestAdmissionChecksGateTheQueue(t *testing.T) {
	c := core.NewCluster()
	c.SetFlavor(MakeFlavor("default").Obj())
	c.SetClusterQueue(MakeClusterQueue("cq").AdmissionChecks("budget", "capacity").
		ResourceGroup(MakeFlavorQuotas("default").Resource("cpu", "10").Obj()).Obj())
	w := MakeWorkload("w", "cq").PodSet("main", 1).Request("cpu", "1").Obj()
	for _, step := range []struct {
		do   func()
		want string
	}{
		{func() {}, "AdmissionCheck budget, capacity not found"},
		{func() { c.SetAdmissionCheck("budget", true) }, "AdmissionCheck capacity not found"},
		{func() { c.SetAdmissionCheck("capacity", false) }, "AdmissionCheck capacity not Active"},
		{func() { c.SetAdmissionCheck("capacity", true) }, ""},
		{func() { c.DeleteAdmissionCheck("budget") }, "AdmissionCheck budget not found"},
	} {
		step.do()
		if got := c.Inactive("cq"); got != step.want {
			t.Fatalf("inactive %q, want %q", got, step.want)
		}
	}
	c.SetAdmissionCheck("budget", true)
	ds := c.Cycle([]*core.Workload{w}, Epoch)
	if ds[0].Admit == nil || !slices.Equal(ds[0].Admit.AdmissionChecks, []string{"budget", "capacity"}) {
		t.Errorf("%s; want admitted with checks budget, capacity", Describe(ds))
	}
}
