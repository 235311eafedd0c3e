package multicluster

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// The manager's dashboard, in a browser, shows its worker clusters as
// reachable and where work runs: a Job dispatched to worker2 is listed on
// worker2's page, and its own page says where it runs.
func TestDashboardShowsWhereWorkRuns(t *testing.T) {
	envs := testenv.NewAll(t)
	shape(t, envs, map[string]string{worker1: "0", worker2: "4"})
	m := envs[manager]
	url := testenv.Dashboard(t, m.Config)
	ctx := testenv.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{worker1, worker2} {
		testenv.WaitText(t, ctx, wait, `#workers tr[data-worker="`+w+`"]`, "reachable")
	}

	// It runs an hour: it stays on worker2 while the page is read.
	job := MakeJob("long", m.Namespace).Queue("lq").Request("cpu", "1").
		PodAnnotation("berth.dev/sim-duration", "1h").Toleration(m.Toleration()).Obj()
	m.Create(t, job)
	waitRunsOn(t, m, job, worker2)
	wl := m.Namespace + "/" + jobs.WorkloadName(job)

	testenv.ClickUntil(t, ctx, wait, `#workers tr[data-worker="`+worker2+`"]`, "#worker-title", worker2)
	testenv.WaitText(t, ctx, wait, "#worker-summary", m.Name("mcc"))
	testenv.WaitText(t, ctx, wait, "#worker-workloads", wl)
	testenv.Screenshot(t, ctx, "dashboard-workers.png")
	testenv.ClickUntil(t, ctx, wait, `#worker-workloads tr[data-workload="`+wl+`"]`, "#workload-title", wl)
	testenv.WaitText(t, ctx, wait, "#workload-why", "worker cluster "+worker2)
}
