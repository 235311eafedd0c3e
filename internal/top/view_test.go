package top_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/top"
	. "github.com/berth-dev/berth/test/fixtures"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// status sets what the queues controller would report; cpu is the flavor,
// then the cpu used and borrowed in it.
func status(cq *berthv1.ClusterQueue, pending, reserving, admitted int32, cpu ...string) berthv1.ClusterQueue {
	cq.Status.PendingWorkloads, cq.Status.ReservingWorkloads, cq.Status.AdmittedWorkloads = pending, reserving, admitted
	if len(cpu) == 3 {
		cq.Status.FlavorsUsage = []berthv1.FlavorUsage{{Name: cpu[0], Resources: []berthv1.ResourceUsage{{
			Name: "cpu", Total: resource.MustParse(cpu[1]), Borrowed: resource.MustParse(cpu[2])}}}}
	}
	active := metav1.Condition{Type: "Active", Status: "True", Reason: "Ready"}
	meta.SetStatusCondition(&cq.Status.Conditions, active)
	return *cq
}

func example() ([]berthv1.ClusterQueue, []berthv1.Cohort, []berthv1.LocalQueue) {
	teamA := status(MakeClusterQueue("team-a").Cohort("research").
		ResourceGroup(MakeFlavorQuotas("on-demand").Resource("cpu", "10", "4").Resource("memory", "40Gi").Obj()).Obj(),
		3, 2, 2, "on-demand", "12", "2")
	teamB := status(MakeClusterQueue("team-b").Cohort("research").
		ResourceGroup(MakeFlavorQuotas("on-demand").Resource("cpu", "10", "", "6").Obj()).Obj(), 0, 1, 1, "on-demand", "3", "0")
	gated := status(MakeClusterQueue("gated").Cohort("prod").AdmissionChecks("budget").
		ResourceGroup(MakeFlavorQuotas("on-demand").Resource("cpu", "4").Obj()).Obj(), 1, 1, 0, "on-demand", "1", "0")
	meta.SetStatusCondition(&gated.Status.Conditions, metav1.Condition{Type: "Active", Status: "False",
		Reason: "AdmissionCheckInactive", Message: "AdmissionCheck budget not Active"})
	solo := status(MakeClusterQueue("solo").ResourceGroup(MakeFlavorQuotas("spot").Resource("cpu", "8").Obj()).Obj(), 0, 0, 0)
	solo.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("100"), Window: berthv1.CalendarMonthBudget,
		WhenSpent: berthv1.NoBorrowing}
	free := metav1.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	solo.Status.Budget = &berthv1.BudgetStatus{SpentResourceHours: resource.MustParse("100.5"), FreeAgainAt: &free}
	cohorts := []berthv1.Cohort{*MakeCohort("research").Parent("org").
		ResourceGroup(MakeFlavorQuotas("on-demand").Resource("cpu", "5").Obj()).Obj()}
	capped := MakeLocalQueue("interns", "research", "team-a").Obj()
	capped.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("10"), Window: berthv1.RollingBudget,
		WhenSpent: berthv1.StopAdmitting}
	capped.Status.Budget = &berthv1.BudgetStatus{SpentResourceHours: resource.MustParse("4.25")}
	lqs := []berthv1.LocalQueue{*capped, *MakeLocalQueue("main", "research", "team-a").Obj()}
	return []berthv1.ClusterQueue{teamB, solo, gated, teamA}, cohorts, lqs
}

// The tree and its table, against golden files.
func TestRender(t *testing.T) {
	cqs, cohorts, lqs := example()
	roots := top.Tree(cqs, cohorts, lqs)
	data, err := json.MarshalIndent(roots, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for file, got := range map[string]string{"example.txt": top.Render(roots), "example.json": string(data) + "\n"} {
		path := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs (go test ./internal/top -update rewrites it):\n%s", file, got)
		}
	}
}

// Cohorts whose parents form a cycle still draw, as roots.
func TestTreeWithACycleOfParents(t *testing.T) {
	cohorts := []berthv1.Cohort{*MakeCohort("a").Parent("b").Obj(), *MakeCohort("b").Parent("a").Obj()}
	cq := *MakeClusterQueue("q").Cohort("a").ResourceGroup(MakeFlavorQuotas("f").Resource("cpu", "1").Obj()).Obj()
	roots := top.Tree([]berthv1.ClusterQueue{cq}, cohorts, nil)
	if len(roots) != 2 || roots[0].Name != "a" || len(roots[0].Children) != 1 || roots[0].Children[0].Name != "q" {
		t.Errorf("%+v", roots)
	}
}
