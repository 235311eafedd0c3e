package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// VCluster is plain Pods created in a virtual cluster at once; what is
// measured is the syncer: until every one runs inside (its host Pod made,
// scheduled there, the virtual Pod bound and its status copied back), and
// what that costs in writes and memory.
type VCluster struct{ Pods int }

// VClusterAt is 1,000 Pods at scale 1.
func VClusterAt(scale float64) VCluster { return VCluster{Pods: max(1, int(math.Round(1000*scale)))} }

// VClusterTarget is the virtual cluster a run measures.
type VClusterTarget struct {
	// Virtual reaches the virtual cluster, Host the host.
	Virtual, Host *rest.Config
	// SyncerMetrics is the syncer's /metrics URL; SyncerPID its process.
	SyncerMetrics string
	SyncerPID     int
}

// VClusterResults is results.json of vcluster.
type VClusterResults struct {
	Scenario string    `json:"scenario"`
	Scale    float64   `json:"scale"`
	Date     time.Time `json:"date"`
	Version  string    `json:"version"`
	Pods     int       `json:"pods"`
	// Running: virtual Pods seen Running.
	Running       int     `json:"running"`
	CreateSeconds float64 `json:"createSeconds"`
	// WallSeconds: from the first creation until the last Pod ran inside.
	WallSeconds float64 `json:"wallSeconds"`
	PerSecond   float64 `json:"runningPerSecond"`
	// Seconds from a Pod's creation until it ran, inside.
	P50 float64 `json:"p50Seconds"`
	P90 float64 `json:"p90Seconds"`
	Max float64 `json:"maxSeconds"`
	// SyncerWrites are the syncer's API writes during the run, by cluster
	// ("host", "virtual") and method; WritesPerPod their sum per Pod.
	SyncerWrites map[string]int `json:"syncerWrites"`
	WritesPerPod float64        `json:"syncerWritesPerPod"`
	// SyncerPeakRSSMiB is the syncer's peak resident memory.
	SyncerPeakRSSMiB *float64 `json:"syncerPeakRSSMiB,omitempty"`
}

// VClusterMarkdown is vcluster's summary for people.
func VClusterMarkdown(r VClusterResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# berth bench vcluster\n\n")
	fmt.Fprintf(&b, "Scale %g, %s, berth %s.\n\n", r.Scale, r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Version)
	fmt.Fprintf(&b, "| measure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| Pods Running in the virtual cluster | %d of %d |\n", r.Running, r.Pods)
	fmt.Fprintf(&b, "| creating them took | %.1f s |\n", r.CreateSeconds)
	fmt.Fprintf(&b, "| first created to last Running | %.1f s (%.1f Pods/s) |\n", r.WallSeconds, r.PerSecond)
	fmt.Fprintf(&b, "| created to Running, p50 / p90 / max | %.2f / %.2f / %.2f s |\n", r.P50, r.P90, r.Max)
	var keys []string
	for k := range r.SyncerWrites {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.SyncerWrites[k]))
	}
	fmt.Fprintf(&b, "| syncer writes per Pod | %.2f (%s) |\n", r.WritesPerPod, strings.Join(parts, ", "))
	if r.SyncerPeakRSSMiB != nil {
		fmt.Fprintf(&b, "| syncer peak RSS | %.0f MiB |\n", *r.SyncerPeakRSSMiB)
	}
	return b.String()
}

// benchNamespace is the virtual namespace the Pods go in.
const vclusterBenchNamespace = "bench"

// RunVCluster creates the Pods in the virtual cluster and waits until all
// run there. The host must have room for them (fake nodes' pods capacity).
func RunVCluster(ctx context.Context, t VClusterTarget, sc VCluster, scale float64, o Options) (*VClusterResults, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	virtual, err := kubernetes.NewForConfig(withRate(t.Virtual))
	if err != nil {
		return nil, err
	}
	host, err := kubernetes.NewForConfig(t.Host)
	if err != nil {
		return nil, err
	}
	if err := hostRoom(ctx, host, sc.Pods); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vclusterBenchNamespace}}
	if _, err := virtual.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if err := waitDefaultAccount(ctx, virtual); err != nil {
		return nil, err
	}
	before, err := syncerWrites(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("the syncer's metrics at %s: %w", t.SyncerMetrics, err)
	}
	memCtx, stopMem := context.WithCancel(ctx)
	defer stopMem()
	mem := watchMemory(memCtx, t.SyncerPID)

	var mu sync.Mutex
	created, running := map[string]time.Time{}, map[string]time.Time{}
	done := make(chan struct{})
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watchPods(watchCtx, virtual, vclusterBenchNamespace, func(p *corev1.Pod) {
		if p.Status.Phase != corev1.PodRunning {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, seen := running[p.Name]; !seen {
			running[p.Name] = time.Now()
			if len(running) == sc.Pods {
				close(done)
			}
		}
	})

	began := time.Now()
	createErr := parallel(sc.Pods, 32, func(i int) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		mu.Lock()
		created[p.Name] = time.Now()
		mu.Unlock()
		if _, err := virtual.CoreV1().Pods(vclusterBenchNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s: %w", p.Name, err)
		}
		return nil
	})
	createSeconds := time.Since(began).Seconds()
	if createErr != nil {
		return nil, createErr
	}
	runErr := awaitAll(ctx, done, began, &mu, func() int { return len(running) }, sc.Pods, "virtual Pods Running", o)
	stopWatch()
	after, err := syncerWrites(ctx, t)
	if err != nil && runErr == nil {
		runErr = err
	}

	mu.Lock()
	defer mu.Unlock()
	res := &VClusterResults{Scenario: "vcluster", Scale: scale, Date: time.Now().UTC(), Version: version(),
		Pods: sc.Pods, Running: len(running), CreateSeconds: createSeconds, SyncerWrites: map[string]int{}}
	var lat []float64
	var last time.Time
	for name, at := range running {
		lat = append(lat, at.Sub(created[name]).Seconds())
		if at.After(last) {
			last = at
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		res.P50, res.P90, res.Max = Percentile(lat, 50), Percentile(lat, 90), lat[len(lat)-1]
		res.WallSeconds = last.Sub(began).Seconds()
		res.PerSecond = float64(len(lat)) / res.WallSeconds
	}
	total := 0
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			res.SyncerWrites[k] = d
			total += d
		}
	}
	res.WritesPerPod = float64(total) / float64(sc.Pods)
	res.SyncerPeakRSSMiB, _ = mem.peaks()
	if err := writeFiles(o.Output, res, VClusterMarkdown(*res), mcChart(began, created, running)); err != nil {
		return res, err
	}
	return res, runErr
}

// watchPods shows observe every Pod of namespace ns as it is now and each
// time it changes, until ctx ends; a watch the server ends is taken up
// again from a fresh list.
func watchPods(ctx context.Context, kube kubernetes.Interface, ns string, observe func(*corev1.Pod)) {
	for ctx.Err() == nil {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for i := range list.Items {
			observe(&list.Items[i])
		}
		w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
				observe(p)
			}
		}
		w.Stop()
	}
}

func withRate(c *rest.Config) *rest.Config {
	c = rest.CopyConfig(c)
	c.QPS, c.Burst = benchQPS, benchBurst
	return c
}

// hostRoom checks that the host's Ready nodes have room for n more Pods.
func hostRoom(ctx context.Context, host kubernetes.Interface, n int) error {
	nodes, err := host.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	room := int64(0)
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !node.Spec.Unschedulable && len(node.Spec.Taints) == 0 {
				room += node.Status.Allocatable.Pods().Value()
			}
		}
	}
	pods, err := host.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
	if err != nil {
		return err
	}
	if free := room - int64(len(pods.Items)); free < int64(n) {
		return fmt.Errorf("the host has room for %d more Pods on Ready, untainted nodes; the run needs %d (start it with more nodes: berth up --nodes %d)",
			free, n, (n+109)/110+1)
	}
	return nil
}

func waitDefaultAccount(ctx context.Context, virtual kubernetes.Interface) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := virtual.CoreV1().ServiceAccounts(vclusterBenchNamespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("virtual namespace %s has no default ServiceAccount: is the virtual kube-controller-manager running? (%w)", vclusterBenchNamespace, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// syncerWrites reads the syncer's count of API writes so far, by cluster
// and method, from client-go's request metric.
func syncerWrites(ctx context.Context, t VClusterTarget) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.SyncerMetrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", t.SyncerMetrics, resp.Status)
	}
	hostOf := func(c *rest.Config) string {
		h := strings.TrimPrefix(strings.TrimPrefix(c.Host, "https://"), "http://")
		return strings.TrimSuffix(h, "/")
	}
	clusters := map[string]string{hostOf(t.Virtual): "virtual", hostOf(t.Host): "host"}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseClientWrites(string(body), clusters), nil
}

// parseClientWrites sums client-go's rest_client_requests_total of the
// write methods, by cluster (its API server's host:port, named by clusters)
// and method.
func parseClientWrites(text string, clusters map[string]string) map[string]int {
	out := map[string]int{}
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, "rest_client_requests_total{")
		end := strings.LastIndex(rest, "}")
		if !ok || end < 0 {
			continue
		}
		labels := parseLabels(rest[:end])
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[end+1:]), 64)
		cluster, known := clusters[labels["host"]]
		switch m := labels["method"]; {
		case err != nil || !known:
		case m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE":
			out[cluster+" "+m] += int(v)
		}
	}
	return out
}
