package integration

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// screenshots, when set, is where the browser test saves what it saw
// (docs/img keeps the ones docs/dashboard.md shows).
var screenshots = flag.String("screenshots", "", "directory to save the dashboard's screenshots in")

// chromium is Debian's Chromium, which .ci/run installs.
const chromium = "/usr/bin/chromium"

// serveDashboard starts the dashboard of env's cluster on a loopback port
// for the test, and returns its URL.
func serveDashboard(t *testing.T, env *testenv.Env) string {
	t.Helper()
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr))) // the watch's errors, as berth dashboard logs them
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := dashboard.New(env.Config, controller.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL + "/"
}

// browser starts headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("the dashboard is tested in Debian's Chromium: %v (apt-get install chromium; .ci/run does)", err)
	}
	// No network but loopback here: Chromium's own calls home are turned off.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// waitText polls the page until the element selector names has text holding
// want.
func waitText(t *testing.T, ctx context.Context, selector, want string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		got, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(selector)))
		if err != nil {
			return fmt.Errorf("%s: %v", selector, err)
		}
		if !strings.Contains(got, want) {
			return fmt.Errorf("%s says %q; want %q in it", selector, got, want)
		}
		return nil
	})
}

// The dashboard in a real browser, against the real control plane: the
// tree shows the cohort and its queue with their quota; the queue's page
// shows a Job pending with why, then admitted once the Job ahead of it is
// deleted, and the tree's numbers follow, all without a reload.
func TestDashboardShowsQueuesLiveInABrowser(t *testing.T) {
	env := testenv.New(t)
	rf, cq, cohort := env.Name("rf"), env.Name("cq"), env.Name("team")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).Cohort(cohort).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	url := serveDashboard(t, env)

	// The API the page uses.
	res, err := http.Get(url + "api/tree")
	if err != nil {
		t.Fatal(err)
	}
	var tree dashboard.Tree
	err = json.NewDecoder(res.Body).Decode(&tree)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(tree), cohort) {
		t.Fatalf("/api/tree has no cohort %s: %+v", cohort, tree)
	}
	for path, want := range map[string]int{
		"api/workloads?clusterQueue=" + cq + "&state=pending&limit=-1": http.StatusBadRequest,
		"api/workload?namespace=" + env.Namespace:                      http.StatusBadRequest,
		"api/workload?namespace=" + env.Namespace + "&name=none":       http.StatusNotFound,
	} {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: %s; want %d", path, res.Status, want)
		}
	}

	// The queue is chosen by the link a click on it makes (#cq=NAME): the
	// tree is drawn again on every change anywhere in the cluster, which
	// other tests keep busy, so a test's click could land between two
	// drawings.
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"#cq="+cq)); err != nil {
		t.Fatal(err)
	}
	node := `[data-node="ClusterQueue/` + cq + `"]`
	waitText(t, ctx, `[data-node="Cohort/`+cohort+`"] > .head`, cohort)
	waitText(t, ctx, node+` [data-resource="`+rf+`/cpu"] [data-field="usage"]`, "0 of 2")
	waitText(t, ctx, "#queue-title", "ClusterQueue "+cq)

	first := MakeJob("first", env.Namespace).Queue("main").Request("cpu", "2").Obj()
	env.Create(t, first)
	waitText(t, ctx, node+` [data-field="admitted"]`, "1 admitted")
	waitText(t, ctx, node+` [data-resource="`+rf+`/cpu"] [data-field="usage"]`, "2 of 2")
	second := MakeJob("second", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, second)
	row := `tr[data-workload="` + env.Namespace + "/" + jobs.WorkloadName(second) + `"]`
	waitText(t, ctx, "#pending "+row, "needs 1 cpu")
	waitText(t, ctx, node+` [data-field="pending"]`, "1 pending")
	save(t, ctx, "dashboard.png")

	// Its row opens its page: why it waits, in berth why's words.
	wl := env.Namespace + "/" + jobs.WorkloadName(second)
	testenv.Eventually(t, wait, func() error {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := chromedp.Run(sctx, chromedp.Click(chromedp.CSS("#pending "+row))); err != nil {
			return err
		}
		got, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS("#workload-title")))
		if err != nil || !strings.Contains(got, wl) {
			return fmt.Errorf("the workload's page says %q (%v) after a click on its row", got, err)
		}
		return nil
	})
	waitText(t, ctx, "#workload-why", "position:  1 of 1 waiting in ClusterQueue "+cq)
	waitText(t, ctx, "#workload-summary", "made for Job second")
	waitText(t, ctx, "#workload-podsets", "cpu 1")

	if err := env.Client.Delete(ctx, first, client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#admitted "+row, wl)
	waitText(t, ctx, node+` [data-field="pending"]`, "0 pending")
	waitText(t, ctx, node+` [data-resource="`+rf+`/cpu"] [data-field="usage"]`, "1 of 2")

	// Its page follows: admitted, to its flavor; its Job's pod made; the
	// Job controller's event.
	waitText(t, ctx, "#workload-timeline", "Admitted")
	waitText(t, ctx, "#workload-podsets", "cpu: "+rf)
	waitText(t, ctx, "#workload-pods", "second-")
	waitText(t, ctx, "#workload-events", "SuccessfulCreate")
	save(t, ctx, "dashboard-workload.png")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "wl="+strings.ReplaceAll(wl, "/", "%2F")) {
		t.Errorf("the page's URL is %s (%v); want it to name the workload shown", loc, err)
	}
}

// save writes a screenshot of the page when -screenshots names a directory.
func save(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
