package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/bench/plot"
)

// A unit is what a scenario on the simulator creates and times: a Job, a
// Pod, or a pod group, of Pods pods that carry its name in a label.
type unit struct {
	Name string
	Pods int
}

// simRun is how e2e-jobs and pods run: units created at once (16 at a time)
// in the namespace of one ClusterQueue of QuotaCPU, their pods run by a
// simulator of the bench's own with Nodes nodes, watched until every pod has
// succeeded.
type simRun struct {
	Scenario  string
	What      string // what Units are, for progress: "2000 Jobs of 2 pods"
	Nodes     int
	QuotaCPU  int64
	UnitLabel string // the pod label that names a pod's unit
	Units     []unit
	Create    func(ctx context.Context, c client.Client, u unit) error
	// SimArgs are more flags for the simulator (node capacity, racks).
	SimArgs []string
	// SetUp makes the queue; nil makes setUpJobsQueue's.
	SetUp func(ctx context.Context, c client.Client) error
}

// simRunStats is what every run on the simulator measures.
type simRunStats struct {
	watch               *unitWatch
	APIServerCPUSeconds *float64
	PeakRSS, PeakAnon   *float64
	// Writes to the API server during the run, by resource (writesOf).
	Writes map[string]float64
	Audit  *AuditResult
	Cost   Cost
	chart  plot.Chart
}

// SimCosts are what a run on the simulator measured of its cost; the
// results of each such scenario embed them (flat in results.json).
type SimCosts struct {
	APIServerCPUSeconds   *float64 `json:"apiServerCPUSeconds,omitempty"`
	ControllerPeakRSSMiB  *float64 `json:"controllerPeakRSSMiB,omitempty"`
	ControllerPeakAnonMiB *float64 `json:"controllerPeakAnonMiB,omitempty"`
	// APIWrites are the writes kube-apiserver served during the run, by
	// anyone, by resource.
	APIWrites map[string]float64 `json:"apiWrites,omitempty"`
	Audit     *AuditResult       `json:"audit,omitempty"`
	Cost      Cost               `json:"cost"`
}

func (st *simRunStats) costs() SimCosts {
	return SimCosts{APIServerCPUSeconds: st.APIServerCPUSeconds, ControllerPeakRSSMiB: st.PeakRSS, ControllerPeakAnonMiB: st.PeakAnon,
		APIWrites: st.Writes, Audit: st.Audit, Cost: st.Cost}
}

// rows adds the costs to a summary's table, writes per pod of pods.
func (c SimCosts) rows(b *strings.Builder, pods int) {
	summaryCosts(b, c.APIServerCPUSeconds, c.ControllerPeakRSSMiB, c.ControllerPeakAnonMiB, c.APIWrites, pods, c.Audit, c.Cost)
}

// runOnSim runs r with a `berth sim` (binary bin) of its own for the nodes,
// and removes those nodes at the end.
func runOnSim(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, r simRun, scale float64, o Options) (*simRunStats, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	api, err := connect(cfg, benchQPS, benchBurst, false)
	if err != nil {
		return nil, err
	}
	kube, c := api.kube, api.c
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	fmt.Fprintln(o.Progress, "removing the objects of the last run")
	if err := Clear(ctx, c); err != nil {
		return nil, err
	}
	if err := clearSim(ctx, kube); err != nil {
		return nil, err
	}
	setUp := r.SetUp
	if setUp == nil {
		setUp = func(ctx context.Context, c client.Client) error { return setUpJobsQueue(ctx, c, r.QuotaCPU) }
	}
	if err := setUp(ctx, c); err != nil {
		return nil, err
	}
	sim, err := startSim(bin, kubeconfig, r.Nodes, o.Output, r.SimArgs...)
	if err != nil {
		return nil, err
	}
	defer func() {
		sim.stop()
		fmt.Fprintln(o.Progress, "removing the bench's nodes")
		_ = clearSim(context.Background(), kube)
	}()
	if err := waitNodes(ctx, kube, sim, r.Nodes, o); err != nil {
		return nil, err
	}

	w := newUnitWatch(r.Units)
	podFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(jobsQueue),
		informers.WithTransform(func(o any) (any, error) {
			if p, ok := o.(*corev1.Pod); ok {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace,
					ResourceVersion: p.ResourceVersion, Labels: map[string]string{r.UnitLabel: p.Labels[r.UnitLabel]}},
					Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}, Status: corev1.PodStatus{Phase: p.Status.Phase}}, nil
			}
			return o, nil
		}))
	if _, err := podFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(p any) { w.pod(p, r.UnitLabel) }, UpdateFunc: func(_, p any) { w.pod(p, r.UnitLabel) },
	}); err != nil {
		return nil, err
	}
	podFactory.Start(ctx.Done()) // stops when the run's context ends
	podFactory.WaitForCacheSync(ctx.Done())

	st := &simRunStats{watch: w}
	auditor, err := startAudit(ctx, api.cfg, o.Audit)
	if err != nil {
		return nil, err
	}
	m := startMeter(ctx, api.cfg, o)
	writesBefore, writesErr := writesOf(ctx, kube)
	mem := watchMemory(ctx, o.pid("berth-controller"))
	fmt.Fprintf(o.Progress, "creating %s\n", r.What)
	w.start = time.Now()
	tl := startTimeline(ctx, w.start, layout([]string{"pods of the bench"}, "created (admitted)", "running", "succeeded"), w.counts)
	if err := parallel(len(r.Units), 16, func(i int) error {
		w.unitCreated(r.Units[i].Name)
		return r.Create(ctx, c, r.Units[i])
	}); err != nil {
		return nil, fmt.Errorf("creating %s: %w", r.What, err)
	}
	runErr := await(ctx, w.done, w.progress, o)
	st.chart = tl.stop(fmt.Sprintf("berth bench %s, scale %g", r.Scenario, scale))
	st.Cost = m.end(nil)
	if cpu, ok := st.Cost.CPUSeconds["kube-apiserver"]; ok {
		st.APIServerCPUSeconds = &cpu
	}
	if after, err := writesOf(context.Background(), kube); writesErr == nil && err == nil {
		st.Writes = map[string]float64{}
		for res, n := range after {
			if d := n - writesBefore[res]; d > 0 {
				st.Writes[res] = d
			}
		}
	}
	st.PeakRSS, st.PeakAnon = mem.peaks()
	st.Audit = endAudit(auditor, false)
	return st, runErr
}

// waitNodes waits until the simulator's n nodes are Ready.
func waitNodes(ctx context.Context, kube kubernetes.Interface, sim *simProcess, n int, o Options) error {
	fmt.Fprintf(o.Progress, "waiting for %d nodes\n", n)
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-sim.exited:
			return false, fmt.Errorf("the simulator exited; see its log in %s", o.Output)
		default:
		}
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simNodeLabel + "=true"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	}); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	return nil
}

// unitWatch follows the units' pods: when each unit has all its pods
// Running, and when every pod has succeeded.
type unitWatch struct {
	size      map[string]int // unit -> pods
	pods      int
	start     time.Time
	mu        sync.Mutex
	createdAt map[string]time.Duration
	running   map[string]map[string]bool // unit -> pods seen Running
	nodes     map[string]map[string]bool // unit -> nodes its pods ran on
	startedAt map[string]time.Duration
	succeeded map[string]bool // pods
	created   map[string]bool // pods seen
	ran       int             // pods seen Running, or done
	last      time.Duration
	done      chan struct{}
}

func newUnitWatch(units []unit) *unitWatch {
	w := &unitWatch{size: map[string]int{}, createdAt: map[string]time.Duration{},
		running: map[string]map[string]bool{}, nodes: map[string]map[string]bool{}, startedAt: map[string]time.Duration{}, succeeded: map[string]bool{},
		created: map[string]bool{}, done: make(chan struct{})}
	for _, u := range units {
		w.size[u.Name] = u.Pods
		w.pods += u.Pods
	}
	return w
}

func (w *unitWatch) unitCreated(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.createdAt[name] = time.Since(w.start)
}

func (w *unitWatch) pod(obj any, unitLabel string) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Since(w.start)
	u := p.Labels[unitLabel]
	w.mu.Lock()
	defer w.mu.Unlock()
	w.created[p.Name] = true
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded:
		if w.running[u] == nil {
			w.running[u] = map[string]bool{}
		}
		if !w.running[u][p.Name] {
			w.running[u][p.Name] = true
			w.ran++
		}
		if p.Spec.NodeName != "" {
			if w.nodes[u] == nil {
				w.nodes[u] = map[string]bool{}
			}
			w.nodes[u][p.Spec.NodeName] = true
		}
		if _, ok := w.startedAt[u]; !ok && len(w.running[u]) == w.size[u] {
			w.startedAt[u] = now
		}
	}
	if p.Status.Phase == corev1.PodSucceeded && !w.succeeded[p.Name] {
		w.succeeded[p.Name] = true
		w.last = now
		if len(w.succeeded) == w.pods {
			close(w.done)
		}
	}
}

// counts are the pods created, running now, and succeeded.
func (w *unitWatch) counts() []float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return []float64{float64(len(w.created)), float64(w.ran - len(w.succeeded)), float64(len(w.succeeded))}
}

func (w *unitWatch) progress() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%6.1fs  created %d, started %d (all their pods Running); pods succeeded %d of %d",
		time.Since(w.start).Seconds(), len(w.createdAt), len(w.startedAt), len(w.succeeded), w.pods)
}

// startLatencies are the seconds from each unit's creation until all its
// pods were Running, of the units keep selects, sorted.
func (w *unitWatch) startLatencies(keep func(unit string) bool) []float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var lat []float64
	for u, at := range w.startedAt {
		if c, ok := w.createdAt[u]; ok && keep(u) {
			lat = append(lat, (at - c).Seconds())
		}
	}
	slices.Sort(lat)
	return lat
}

// Latency is a distribution of times, in seconds.
type Latency struct {
	P50 float64 `json:"p50Seconds"`
	P90 float64 `json:"p90Seconds"`
	P99 float64 `json:"p99Seconds"`
	Max float64 `json:"maxSeconds"`
}

func latencyOf(sorted []float64) Latency {
	l := Latency{P50: Percentile(sorted, 50), P90: Percentile(sorted, 90), P99: Percentile(sorted, 99)}
	if len(sorted) > 0 {
		l.Max = sorted[len(sorted)-1]
	}
	return l
}
