package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/top"
	. "github.com/berth-dev/berth/test/fixtures"
)

// BenchmarkDashboardAtScale measures the dashboard with Kueue's large-scale
// shape: 10 cohorts of 100 ClusterQueues (20 cpu each) and 50 workloads of
// 1 cpu per queue, 50,000, of which berth admits 20 per queue. It reports
// the dashboard's heap once its watch holds them all, how long the tree and
// a queue's page take to serve and how big the tree is, how long Chromium
// takes to draw the page first (the tree of 1,000 queues, and the longest
// queue's line), and how long a change to a queue takes to show on the open
// page. Run it alone, once:
//
//	go test ./test/integration -run '^$' -bench BenchmarkDashboardAtScale -benchtime 1x -timeout 60m
func BenchmarkDashboardAtScale(b *testing.B) {
	const cohorts, perCohort, perQueue = 10, 100, 50
	env := testenv.New(b)
	ctx := context.Background()
	rf := env.Name("rf")
	env.Create(b, MakeResourceFlavor(rf).Obj())
	queues := make([]string, 0, cohorts*perCohort)
	mine := map[string]bool{}
	for c := range cohorts {
		mine[env.Name(fmt.Sprintf("c%d", c))] = true
		for q := range perCohort {
			cq := env.Name(fmt.Sprintf("c%d-q%d", c, q))
			queues = append(queues, cq)
			env.Create(b, MakeClusterQueue(cq).Cohort(env.Name(fmt.Sprintf("c%d", c))).
				ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "20").Obj()).Obj())
			env.Create(b, MakeLocalQueue(fmt.Sprintf("lq-%d-%d", c, q), env.Namespace, cq).Obj())
		}
	}
	start := time.Now()
	var made atomic.Int64
	var wg sync.WaitGroup
	work := make(chan [2]int)
	for range 32 {
		wg.Go(func() {
			for cq := range work {
				w := MakeWorkload(fmt.Sprintf("w-%d-%d", cq[0], cq[1]), env.Namespace).
					Queue(fmt.Sprintf("lq-%d-%d", cq[0]/perCohort, cq[0]%perCohort)).Request("cpu", "1").Obj()
				if err := env.Client.Create(ctx, w); err != nil {
					b.Error(err)
					return
				}
				made.Add(1)
			}
		})
	}
	for i := range queues {
		for j := range perQueue {
			work <- [2]int{i, j}
		}
	}
	close(work)
	wg.Wait()
	b.Logf("%d workloads made in %s", made.Load(), time.Since(start).Round(time.Second))

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	url := testenv.Dashboard(b, env.Config)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/(1<<20), "MiB-heap-of-watch")

	// Wait for berth to admit what fits, so that what is measured next is
	// the dashboard, not the admissions.
	var tree dashboard.Tree
	testenv.Eventually(b, 10*time.Minute, func() error {
		tree = dashboard.Tree{}
		if err := testenv.GetJSON(url+"api/tree", &tree); err != nil {
			return err
		}
		var admitted, pending int32
		for _, root := range tree.Roots {
			if !mine[root.Name] {
				continue
			}
			for _, cq := range root.Children {
				admitted += cq.Admitted
				pending += cq.Pending
			}
		}
		if want := int32(len(queues) * 20); admitted < want || pending < int32(len(queues)*(perQueue-20)) {
			return fmt.Errorf("%d admitted, %d pending; waiting for %d admitted", admitted, pending, want)
		}
		return nil
	})
	b.Logf("berth admitted what fits %s after the first workload", time.Since(start).Round(time.Second))
	// The page shows the queue with the longest line: those made first
	// borrowed the cohort's quota and have none waiting.
	shown, most := "", int32(-1)
	for _, root := range tree.Roots {
		for _, cq := range root.Children {
			if mine[root.Name] && cq.Pending > most {
				shown, most = cq.Name, cq.Pending
			}
		}
	}

	served := func(path string) (time.Duration, int) {
		t0 := time.Now()
		res, err := http.Get(url + path)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("%s: %s %v", path, res.Status, err)
		}
		b.Logf("GET %s: %s, %d bytes", path, time.Since(t0).Round(time.Millisecond), len(body))
		return time.Since(t0), len(body)
	}
	took, size := served("api/tree")
	b.ReportMetric(float64(took.Microseconds())/1000, "ms-tree")
	b.ReportMetric(float64(size)/1024, "KiB-tree")
	took, _ = served("api/workloads?clusterQueue=" + shown + "&state=pending")
	b.ReportMetric(float64(took.Microseconds())/1000, "ms-queue-page")
	took, _ = served("api/workload?namespace=" + env.Namespace + "&name=w-0-49")
	b.ReportMetric(float64(took.Microseconds())/1000, "ms-workload-page")

	bctx := testenv.Browser(b)
	t0 := time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(url+"#cq="+shown)); err != nil {
		b.Fatal(err)
	}
	// Polled from here rather than in the page, so that a page too slow
	// says how far it got.
	var drawn, listed time.Duration
	testenv.Eventually(b, 2*time.Minute, func() error {
		counts, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](
			`[document.querySelectorAll('.node.cq').length, document.querySelectorAll('#pending tbody tr').length]`))
		if err != nil {
			return err
		}
		if drawn == 0 && counts[0] >= len(queues) {
			drawn = time.Since(t0)
		}
		if listed == 0 && counts[1] > 0 {
			listed = time.Since(t0)
		}
		if drawn == 0 || listed == 0 {
			return fmt.Errorf("after %s the page shows %d ClusterQueues and %d pending rows", time.Since(t0).Round(time.Millisecond), counts[0], counts[1])
		}
		return nil
	})
	b.ReportMetric(float64(drawn.Milliseconds()), "ms-first-tree")
	b.ReportMetric(float64(listed.Milliseconds()), "ms-first-queue-page")

	// Ten times, a queue's quota is raised and the open page waits to show
	// it: the watch, the dashboard's settling (250 ms), the tree sent and
	// drawn again. (The setup is too dear to repeat per b.N: run with
	// -benchtime 1x.)
	cq := queues[len(queues)-1]
	// The server's side of each update: when its event stream first
	// carries the new quota (the watch, and the 250 ms it settles).
	told := make(chan string, 1000)
	sctx, stop := context.WithCancel(ctx)
	defer stop() // before the server closes, which waits for its streams
	go nominalsTold(sctx, b, url, cq, told)
	var total, longest, serverTotal time.Duration
	const updates = 10
	for i := range updates {
		quota := resource.MustParse(fmt.Sprint(21 + i))
		patch := fmt.Sprintf(`{"spec":{"resourceGroups":[{"coveredResources":["cpu"],"flavors":[{"name":%q,"resources":[{"name":"cpu","nominalQuota":%q}]}]}]}}`,
			rf, quota.String())
		t0 := time.Now()
		var obj client.Object = MakeClusterQueue(cq).Obj()
		if err := env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			b.Fatal(err)
		}
		for nominal := range told {
			if nominal == quota.String() {
				serverTotal += time.Since(t0)
				break
			}
		}
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](fmt.Sprintf(
			`(document.querySelector('[data-node="ClusterQueue/%s"] [data-field="usage"]')?.textContent ?? '').includes('of %s')`, cq, quota.String()),
			chromedp.WithPollingTimeout(time.Minute))); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		total += took
		longest = max(longest, took)
	}
	b.ReportMetric(float64(serverTotal.Milliseconds())/updates, "ms-update-server-mean")
	stats, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]float64](`window.berthStats`))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("the page: %v tree events, %v trees drawn, %.0f ms drawing them (longest %.0f ms)", stats["events"], stats["renders"], stats["renderMs"], stats["renderMaxMs"])
	if stats["renders"] > 0 {
		b.ReportMetric(stats["renderMs"]/stats["renders"], "ms-draw-tree-mean")
	}
	b.ReportMetric(float64(total.Milliseconds())/updates, "ms-update-mean")
	b.ReportMetric(float64(longest.Milliseconds()), "ms-update-max")
}

// nominalsTold reads the dashboard's event stream and sends the nominal
// quota of ClusterQueue cq each tree event carries.
func nominalsTold(ctx context.Context, b *testing.B, url, cq string, told chan<- string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"api/events", nil)
	if err != nil {
		b.Error(err)
		return
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(nil, 64<<20)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var tree dashboard.Tree
		if err := json.Unmarshal([]byte(data), &tree); err != nil {
			b.Error(err)
			return
		}
		for _, root := range tree.Roots {
			for _, n := range append([]top.Node{root}, root.Children...) {
				if n.Name == cq && len(n.Resources) > 0 {
					select {
					case told <- n.Resources[0].Nominal.String():
					default: // nobody waits for this one
					}
				}
			}
		}
	}
}
