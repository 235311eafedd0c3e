package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/whatif"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// waitText polls the page until the element selector names has text holding
// want.
func waitText(t *testing.T, ctx context.Context, selector, want string) {
	t.Helper()
	testenv.WaitText(t, ctx, wait, selector, want)
}

// answers checks the status the dashboard at url answers each path with.
func answers(t *testing.T, url string, want map[string]int) {
	t.Helper()
	for path, code := range want {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != code {
			t.Errorf("%s: %s; want %d", path, res.Status, code)
		}
	}
}

// The dashboard in a real browser, against the real control plane: the
// tree shows the cohort and its queue with their quota; the queue's page
// shows a Job pending with why, then admitted once the Job ahead of it is
// deleted, and the tree's numbers follow, all without a reload.
func TestDashboardShowsQueuesLiveInABrowser(t *testing.T) {
	env := testenv.New(t)
	rf, cq, cohort := env.Name("rf"), env.Name("cq"), env.Name("team")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	q := MakeClusterQueue(cq).Cohort(cohort).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj()
	// A budget never spent here: the page shows what it has spent.
	q.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("1000"), Window: berthv1.CalendarMonthBudget,
		WhenSpent: berthv1.StopAdmitting}
	env.Create(t, q)
	lq := MakeLocalQueue("main", env.Namespace, cq).Obj()
	lq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("300"), Window: berthv1.CalendarMonthBudget,
		WhenSpent: berthv1.StopAdmitting}
	env.Create(t, lq)
	url := testenv.Dashboard(t, env.Config, func(s *dashboard.Server) { s.SampleEvery(time.Second) })

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
	answers(t, url, map[string]int{
		"api/workloads?clusterQueue=" + cq + "&state=pending&limit=-1": http.StatusBadRequest,
		"api/workload?namespace=" + env.Namespace:                      http.StatusBadRequest,
		"api/workload?namespace=" + env.Namespace + "&name=none":       http.StatusNotFound,
		"api/history": http.StatusBadRequest,
		"api/history?clusterQueue=" + cq + "-none": http.StatusNotFound,
	})
	if code, msg := post(t, url, "admin-token", `{"verb":"stop","kind":"ClusterQueue","name":"`+cq+`"}`); code != http.StatusForbidden ||
		!strings.Contains(msg, "--allow-actions") {
		t.Errorf("an action without --allow-actions: %d %s; want 403 naming the flag", code, msg)
	}

	// The queue is chosen by the link a click on it makes (#cq=NAME): the
	// tree is drawn again on every change anywhere in the cluster, which
	// other tests keep busy, so a test's click could land between two
	// drawings.
	ctx := testenv.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"#cq="+cq)); err != nil {
		t.Fatal(err)
	}
	node := `[data-node="ClusterQueue/` + cq + `"]`
	waitText(t, ctx, `[data-node="Cohort/`+cohort+`"] > .head`, cohort)
	waitText(t, ctx, node+` [data-resource="`+rf+`/cpu"] [data-field="usage"]`, "0 of 2")
	waitText(t, ctx, node+` [data-field="budget"]`, "of 1000 cpu-hours spent")
	waitText(t, ctx, node+` [data-localqueue="`+env.Namespace+`/main"]`, "of 300 cpu-hours spent")
	waitText(t, ctx, "#queue-title", "ClusterQueue "+cq)

	first := MakeJob("first", env.Namespace).Queue("main").Request("cpu", "2").Obj()
	env.Create(t, first)
	waitText(t, ctx, node+` [data-field="admitted"]`, "1 admitted")
	waitText(t, ctx, node+` [data-resource="`+rf+`/cpu"] [data-field="usage"]`, "2 of 2")
	// The queue's charts (uPlot, from the dashboard's own samples) count
	// the admission and draw the quota used.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`Number(document.getElementById("chart-admissions").dataset.total ?? 0) >= 1 &&
		Number(document.getElementById("chart-usage").dataset.total ?? 0) >= 2 && document.querySelector("#chart-usage canvas") !== null`,
		chromedp.WithPollingTimeout(wait))); err != nil {
		t.Fatalf("the charts never showed the Job's admission and its 2 cpu: %v", err)
	}
	second := MakeJob("second", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, second)
	row := `tr[data-workload="` + env.Namespace + "/" + jobs.WorkloadName(second) + `"]`
	waitText(t, ctx, "#pending "+row, "needs 1 cpu")
	waitText(t, ctx, node+` [data-field="pending"]`, "1 pending")
	testenv.Screenshot(t, ctx, "dashboard.png")

	// Its row opens its page: why it waits, in berth why's words.
	wl := env.Namespace + "/" + jobs.WorkloadName(second)
	testenv.ClickUntil(t, ctx, wait, "#pending "+row, "#workload-title", wl)
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
	testenv.Screenshot(t, ctx, "dashboard-workload.png")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(loc, "wl="+strings.ReplaceAll(wl, "/", "%2F")) {
		t.Errorf("the page's URL is %s (%v); want it to name the workload shown", loc, err)
	}
}

// A topology flavor's view: its blocks, racks and hosts with the room each
// has, and a gang placed on them named in the rack and hosts it runs in,
// its room taken, without a reload; the gang opens its workload's page.
func TestDashboardDrawsATopologyInABrowser(t *testing.T) {
	env := testenv.New(t)
	rackOf, _ := topologyQueue(t, env, 1, 2, 2)
	rf := env.Name("rf")
	url := testenv.Dashboard(t, env.Config)

	answers(t, url, map[string]int{
		"api/topology":                     http.StatusBadRequest,
		"api/topology?flavor=" + rf + "-x": http.StatusNotFound,
		"api/topology?flavor=" + rf:        http.StatusOK,
	})

	ctx := testenv.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	// The list is drawn again on every change in the cluster, which other
	// tests keep busy: the click is tried until the view opens.
	testenv.ClickUntil(t, ctx, wait, `#topologies a[data-flavor="`+rf+`"]`, "#topology-title", rf)
	block := `#topology-domains [data-domain="b0"]`
	waitText(t, ctx, block+` > [data-resource="cpu"] [data-field="free"]`, "32 free of 32")
	waitText(t, ctx, "#topology-summary", rackLabel)

	gang := gangJob(env, "gang", 2, integration.RequiredTopologyAnnotation, rackLabel)
	env.Create(t, gang)
	nodes := runningPods(t, env, "gang", 2)
	rack := rackOf[nodes[0]]
	wl := env.Namespace + "/" + jobs.WorkloadName(gang)
	waitText(t, ctx, block+` > [data-resource="cpu"] [data-field="free"]`, "24 free of 32")
	waitText(t, ctx, `[data-domain="`+rack+`"] > [data-resource="cpu"] [data-field="free"]`, "8 free of 16")
	waitText(t, ctx, `[data-domain="`+rack+`"] > .gangs`, wl+" ×2")
	for _, n := range nodes {
		waitText(t, ctx, `[data-domain="`+n+`"] > .gangs`, wl)
	}
	waitText(t, ctx, `[data-node="ClusterQueue/`+env.Name("cq")+`"] [data-field="admitted"]`, "1 admitted")
	testenv.Screenshot(t, ctx, "dashboard-topology.png")

	testenv.ClickUntil(t, ctx, wait, `[data-domain="`+rack+`"] > .gangs .gang`, "#workload-title", wl)
	waitText(t, ctx, "#workload-podsets", rack)
}

// A line of 600 workloads: the page draws the few rows in view, not the
// whole line, and scrolling to the middle shows the workloads there, in
// their places.
func TestDashboardListsALongLineWithoutDrawingIt(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "0").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeLocalQueue("other", env.Namespace, cq).Obj())
	const line = 600
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				lq := "main"
				if i%3 == 0 {
					lq = "other"
				}
				w := MakeWorkload(fmt.Sprintf("w-%04d", i), env.Namespace).Queue(lq).Request("cpu", "1").Obj()
				if err := env.Client.Create(ctx, w); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range line {
		work <- i
	}
	close(work)
	wg.Wait()
	url := testenv.Dashboard(t, env.Config)
	bctx := testenv.Browser(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(url+"#cq="+cq)); err != nil {
		t.Fatal(err)
	}
	waitText(t, bctx, "#pending-total", fmt.Sprintf("(%d)", line))
	rows := func() int {
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#pending tbody tr[data-workload]").length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows(); n == 0 || n > 100 {
		t.Fatalf("the page drew %d rows of a line of %d; want the few in view", n, line)
	}
	// Further down: the row at position 400 is drawn and in view.
	inView := `(() => {
		const box = document.getElementById("pending-box"), row = document.querySelector('#pending tr[data-position="400"]');
		if (!row) return false;
		const b = box.getBoundingClientRect(), r = row.getBoundingClientRect();
		return r.top >= b.top && r.bottom <= b.bottom;
	})()`
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
		const box = document.getElementById("pending-box");
		box.scrollTop = 399 * rowHeight - box.clientHeight / 2;
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](inView, chromedp.WithPollingTimeout(wait))); err != nil {
		t.Fatalf("after scrolling down, position 400 is not in view: %v", err)
	}
	if n := rows(); n == 0 || n > 100 {
		t.Errorf("after scrolling, the page drew %d rows; want the few in view", n)
	}

	// One LocalQueue's third of the line, each at its place in the whole.
	other := env.Namespace + "/other"
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
		const f = document.getElementById("lq-filter");
		f.value = "`+other+`";
		f.dispatchEvent(new Event("change"));
		return f.value === "`+other+`";
	})()`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, bctx, "#pending-total", fmt.Sprintf("(%d)", line/3))
	got, err := chromedp.Run(bctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#pending tbody tr[data-workload]")].map((tr) => [tr.dataset.position, tr.children[2].textContent])`))
	if err != nil || len(got) == 0 {
		t.Fatalf("rows of LocalQueue other: %v %v", got, err)
	}
	last, gap := 0, false
	for _, r := range got {
		pos, _ := strconv.Atoi(r[0])
		if r[1] != "other" || pos <= last {
			t.Fatalf("rows of LocalQueue other: %v; want only its own, in the line's order", got)
		}
		gap = gap || pos > last+1
		last = pos
	}
	if !gap {
		t.Errorf("positions %v: want those in the whole line (with gaps), not 1, 2, 3...", got)
	}
	if loc, err := chromedp.Run(bctx, chromedp.Location()); err != nil || !strings.Contains(loc, "lq="+strings.ReplaceAll(other, "/", "%2F")) {
		t.Errorf("the page's URL is %s (%v); want it to name the LocalQueue", loc, err)
	}
}

// post sends an action to the dashboard at url with a bearer token.
func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"api/actions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(msg)
}

// serviceAccountToken makes a ServiceAccount in env's namespace and
// returns a token of it; rules, when given, are granted to it cluster-wide.
func serviceAccountToken(t *testing.T, env *testenv.Env, name string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	env.Create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace}})
	if len(rules) > 0 {
		env.Create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: env.Name(name)}, Rules: rules})
		env.Create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: env.Name(name)},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: env.Name(name)},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: env.Namespace}}})
	}
	tok, err := env.Kube.CoreV1().ServiceAccounts(env.Namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// With --allow-actions, a ClusterQueue is stopped and resumed from the page
// only by a user whose own token allows it: the dashboard runs as the
// instance's admin, and a user with no permission is still refused.
func TestDashboardActsWithTheUsersOwnPermissions(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	wl := MakeWorkload("w", env.Namespace).Queue("main").Request("cpu", "1").Obj()
	env.Create(t, wl)
	url := testenv.Dashboard(t, env.Config, (*dashboard.Server).AllowActions)
	nobody := serviceAccountToken(t, env, "nobody")
	operator := serviceAccountToken(t, env, "operator", rbacv1.PolicyRule{APIGroups: []string{berthv1.GroupVersion.Group},
		Resources: []string{"clusterqueues", "workloads"}, Verbs: []string{"get", "patch"}})
	stopPolicy := func() berthv1.StopPolicy {
		var got berthv1.ClusterQueue
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: cq}, &got); err != nil {
			t.Fatal(err)
		}
		return got.Spec.StopPolicy
	}

	// The API refuses what it cannot do, naming why, and changes nothing.
	stopCQ := `{"verb":"stop","kind":"ClusterQueue","name":"` + cq + `"}`
	for _, c := range []struct {
		token, body string
		want        int
		says        string
	}{
		{"", stopCQ, http.StatusUnauthorized, "your own Kubernetes bearer token"},
		{operator, `{"verb":"stop","kind":"Deployment","name":"x"}`, http.StatusBadRequest, `kind "Deployment"`},
		{operator, `{"verb":"drain","kind":"Workload","namespace":"` + env.Namespace + `","name":"w"}`, http.StatusBadRequest, "queues only"},
		{operator, `{"verb":"stop","kind":"ClusterQueue","name":"` + cq + `","force":true}`, http.StatusBadRequest, "force"},
		{nobody, stopCQ, http.StatusForbidden, "cannot patch"},
		{"not-a-token", stopCQ, http.StatusUnauthorized, "Unauthorized"},
	} {
		if code, msg := post(t, url, c.token, c.body); code != c.want || !strings.Contains(msg, c.says) {
			t.Errorf("%s with token %.8q: %d %s; want %d saying %q", c.body, c.token, code, msg, c.want, c.says)
		}
	}
	if p := stopPolicy(); p != "" && p != berthv1.StopPolicyNone {
		t.Fatalf("refused actions left the ClusterQueue's stopPolicy %s", p)
	}
	if code, msg := post(t, url, operator, `{"verb":"stop","kind":"Workload","namespace":"`+env.Namespace+`","name":"w"}`); code != http.StatusOK {
		t.Errorf("the operator stopping Workload w: %d %s", code, msg)
	}
	var got berthv1.Workload
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(wl), &got); err != nil || got.Spec.Active == nil || *got.Spec.Active {
		t.Errorf("Workload w after stop: active %v (%v); want false", got.Spec.Active, err)
	}

	// In the browser: whoever pastes a token acts as that user.
	ctx := testenv.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"#cq="+cq)); err != nil {
		t.Fatal(err)
	}
	head := `[data-node="ClusterQueue/` + cq + `"] > .head`
	press := func(verb, token, want string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.SetValue("#token", token)); err != nil {
			t.Fatal(err)
		}
		// The tree is drawn again on every change: a click may land on a
		// button just replaced, so press until the page has sent one
		// request (never two: a late second would undo the next step).
		sent := func() string {
			n, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("action-result").dataset.sent ?? "0"`))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := sent()
		testenv.Eventually(t, wait, func() error {
			if sent() != before {
				return nil
			}
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := chromedp.Run(sctx, chromedp.Click(chromedp.CSS(head+` button[data-verb="`+verb+`"]`)))
			return fmt.Errorf("no request sent yet (%v)", err)
		})
		waitText(t, ctx, "#action-result", want)
	}
	press("stop", nobody, "cannot patch")
	if p := stopPolicy(); p != "" && p != berthv1.StopPolicyNone {
		t.Fatalf("a user without permission stopped the ClusterQueue from the page: stopPolicy %s", p)
	}
	press("stop", operator, "stopped: it admits nothing new")
	if p := stopPolicy(); p != berthv1.Hold {
		t.Fatalf("stopPolicy %q after the operator's stop; want Hold", p)
	}
	testenv.Screenshot(t, ctx, "dashboard-actions.png")
	press("resume", operator, "resumed: it admits again")
	if p := stopPolicy(); p != berthv1.StopPolicyNone {
		t.Fatalf("stopPolicy %q after the operator's resume; want None", p)
	}
}

// The URL berth up prints carries the dashboard's token: opened in a
// browser it lets the visitor in (the cookie kept on http://127.0.0.1, the
// live updates flowing), and the same page opened without it asks for the
// token and shows nothing of the cluster.
func TestDashboardTokenURLInABrowser(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	token, err := dashboard.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	url := testenv.Dashboard(t, env.Config, func(s *dashboard.Server) { s.RequireToken(token) })

	ctx := testenv.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "body", "This dashboard asks for its token")
	html, err := chromedp.Run(ctx, chromedp.OuterHTML("html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, cq) {
		t.Errorf("the page without the token shows ClusterQueue %s", cq)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(dashboard.TokenURL(url, token))); err != nil {
		t.Fatal(err)
	}
	node := `[data-node="ClusterQueue/` + cq + `"]`
	waitText(t, ctx, node+` [data-resource="`+rf+`/cpu"] [data-field="usage"]`, "0 of 2")
	location, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(location, token) {
		t.Errorf("the token stays in the address bar: %s", location)
	}
	// A change reaches the open page: its event stream has the cookie too.
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.Create(t, MakeJob("first", env.Namespace).Queue("main").Request("cpu", "2").Obj())
	waitText(t, ctx, node+` [data-resource="`+rf+`/cpu"] [data-field="usage"]`, "2 of 2")
}

// What if, in a browser: a trace of two 2-cpu workloads replayed against
// this cluster's queue (2 cpu, read from the real API server) and a plan
// of 4 cpu. The page says the second workload waits a minute in this
// cluster and not at all with the plan; nothing in the cluster changes.
// Then the cluster's own history instead of a trace: a Job run to its end
// here is replayed. A form another site posts is refused before it costs
// a replay, and so is a request past the size limit.
func TestDashboardReplaysATraceAgainstThisClusterInABrowser(t *testing.T) {
	env := testenv.New(t)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "2").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	env.CreateSimNode(t, env.Name("n"), nil)
	url := testenv.Dashboard(t, env.Config)

	dir := t.TempDir()
	var trace strings.Builder
	job := func(name string) whatif.Workload {
		return whatif.Workload{Name: name, Namespace: env.Namespace, LocalQueue: "main", Run: 60,
			PodSets: []whatif.PodSet{{Name: "main", Count: 2, Requests: map[string]string{"cpu": "1"}}}}
	}
	if err := whatif.WriteTrace(&trace, whatif.Header{Start: time.Now()}, []whatif.Workload{job("first"), job("second")}); err != nil {
		t.Fatal(err)
	}
	plan := func(cpu string) string {
		return fmt.Sprintf(`apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: %[1]s}
---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: %[2]s}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: %[1]s, resources: [{name: cpu, nominalQuota: "%[4]s"}]}]
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: %[3]s}
spec: {clusterQueue: %[2]s}
`, rf, cq, env.Namespace, cpu)
	}
	tracePath, planPath, todayPath := filepath.Join(dir, "two.jsonl"), filepath.Join(dir, "doubled.yaml"), filepath.Join(dir, "today.yaml")
	for path, text := range map[string]string{tracePath: trace.String(), planPath: plan("4"), todayPath: plan("2")} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	res, err := http.Post(url+"api/whatif", "application/x-www-form-urlencoded", strings.NewReader("trace=x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a form posted to api/whatif: %s; want 415", res.Status)
	}

	// Past the limit: refused naming it, not read to the end.
	big := `{"trace":"` + strings.Repeat("x", dashboard.MaxWhatIfBody) + `"}`
	res, err = http.Post(url+"api/whatif", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "over 64 MiB") {
		t.Errorf("a request over the limit: %s %s; want 413 naming the limit", res.Status, msg)
	}

	ctx := testenv.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.Click(chromedp.CSS("#whatif-open")),
		chromedp.SetUploadFiles(chromedp.CSS("#whatif-trace"), []string{tracePath}),
		chromedp.SetUploadFiles(chromedp.CSS("#whatif-b"), []string{planPath}),
		chromedp.Click(chromedp.CSS("#whatif-run"))); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#whatif-status", "Replayed 2 workloads of two.jsonl. A: this cluster, 0 preemptions. B: doubled.yaml")
	// Cells are told apart by tabs in an element's text.
	waitText(t, ctx, "#whatif-changed", env.Namespace+"/second\t60 s → 0.0 s")
	waitText(t, ctx, "#whatif-groups", "ClusterQueue\t"+cq+"\t2 of 2 → 2 of 2\t30 s → 0.0 s")
	waitText(t, ctx, "#whatif-quota", cq+"\t"+rf+"/cpu\t2 → 4")
	waitText(t, ctx, "#whatif-charts", "workloads waiting")
	testenv.Screenshot(t, ctx, "dashboard-whatif.png")

	// The cluster's history: a Job that ran to its end here, replayed
	// against the two plan files (the history holds other tests' Workloads
	// too; their LocalQueues are in neither plan).
	done := MakeJob("done", env.Namespace).Queue("main").Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", "1s").Obj()
	env.Create(t, done)
	testenv.Eventually(t, wait, func() error {
		var wl berthv1.Workload
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: jobs.WorkloadName(done)}, &wl); err != nil {
			return err
		}
		if !workload.IsFinished(&wl) {
			return fmt.Errorf("the Job's Workload has not finished")
		}
		return nil
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.Click(chromedp.CSS("#whatif-open")),
		chromedp.Click(chromedp.CSS("#whatif-history")),
		chromedp.SetUploadFiles(chromedp.CSS("#whatif-a"), []string{todayPath}),
		chromedp.SetUploadFiles(chromedp.CSS("#whatif-b"), []string{planPath}),
		chromedp.Click(chromedp.CSS("#whatif-run"))); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#whatif-status", "of this cluster's history")
	waitText(t, ctx, "#whatif-groups", "LocalQueue\t"+env.Namespace+"/main\t1 of 1 → 1 of 1\t0.0 s → 0.0 s")

	// The replay changed nothing: the cluster's queue has its 2 cpu.
	var got berthv1.ClusterQueue
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: cq}, &got); err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota; q.String() != "2" {
		t.Errorf("ClusterQueue %s: nominal quota %s after the replay; want 2", cq, q.String())
	}
}
