package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/berth-dev/berth/internal/bench/plot"
	"github.com/berth-dev/berth/internal/procstat"
)

// SimScale is the simulator's scenario: Nodes fake nodes Ready, then Pods
// pods bound to them Running, then all deleted, each step timed.
type SimScale struct{ Nodes, Pods, Writers int }

// SimScaleAt is 5,000 nodes and 10,000 pods at scale 1.
func SimScaleAt(scale float64) SimScale {
	n := func(v int) int { return max(1, int(math.Round(float64(v)*scale))) }
	return SimScale{Nodes: n(5000), Pods: n(10000), Writers: 32}
}

// SimResults is results.json of sim-scale.
type SimResults struct {
	Scenario           string    `json:"scenario"`
	Scale              float64   `json:"scale"`
	Date               time.Time `json:"date"`
	Version            string    `json:"version"`
	Nodes              int       `json:"nodes"`
	Pods               int       `json:"pods"`
	NodesReadySeconds  float64   `json:"nodesReadySeconds"`
	PodsRunningSeconds float64   `json:"podsRunningSeconds"`
	PodsGoneSeconds    float64   `json:"podsGoneSeconds"`
	SimPeakRSSMiB      float64   `json:"simPeakRSSMiB"`
	SimPeakAnonMiB     float64   `json:"simPeakAnonMiB"`
	SimCPUSeconds      float64   `json:"simCPUSeconds"`
	// From a berth instance's kube-apiserver, when the run had one.
	APIServerCPUSeconds *float64 `json:"apiServerCPUSeconds,omitempty"`
}

// SimMarkdown is sim-scale's summary for people.
func SimMarkdown(r SimResults) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# berth bench sim-scale\n\n")
	fmt.Fprintf(&b, "Scale %g, %s, berth %s.\n\n", r.Scale, r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Version)
	fmt.Fprintf(&b, "| step | seconds |\n|---|---|\n")
	fmt.Fprintf(&b, "| %d nodes Ready | %.1f |\n", r.Nodes, r.NodesReadySeconds)
	fmt.Fprintf(&b, "| %d pods Running | %.1f |\n", r.Pods, r.PodsRunningSeconds)
	fmt.Fprintf(&b, "| %d pods gone | %.1f |\n\n", r.Pods, r.PodsGoneSeconds)
	fmt.Fprintf(&b, "| simulator | |\n|---|---|\n")
	fmt.Fprintf(&b, "| peak RSS | %.0f MiB |\n| peak anonymous memory | %.0f MiB |\n| CPU | %.1f s |\n",
		r.SimPeakRSSMiB, r.SimPeakAnonMiB, r.SimCPUSeconds)
	if r.APIServerCPUSeconds != nil {
		fmt.Fprintf(&b, "| kube-apiserver CPU | %.1f s |\n", *r.APIServerCPUSeconds)
	}
	return b.String()
}

// The bench's own simulator manages only nodes with this label, named with
// this prefix, and tainted so that nothing else is scheduled onto them.
const (
	simNodeLabel  = "berth.dev/bench-sim"
	simNodePrefix = "bench-sim-"
	simNamespace  = "bench-sim"
)

// RunSimScale starts `berth sim` (the binary bin) for the cluster of
// kubeconfig with its own pool of nodes, times the three steps, and removes
// the nodes it made.
func RunSimScale(ctx context.Context, cfg *rest.Config, kubeconfig, bin string, sc SimScale, scale float64, o Options) (*SimResults, error) {
	if err := o.prepare(); err != nil {
		return nil, err
	}
	api, err := connect(cfg, simScaleQPS, simScaleBurst, true)
	if err != nil {
		return nil, err
	}
	kube := api.kube
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	fmt.Fprintln(o.Progress, "removing the nodes and pods of the last run")
	if err := clearSim(ctx, kube); err != nil {
		return nil, err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: simNamespace,
		Labels: map[string]string{Label: "true"}}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", simNamespace, err)
	}
	nodes, pods := counters(ctx, kube)

	res := &SimResults{Scenario: "sim-scale", Scale: scale, Nodes: sc.Nodes, Pods: sc.Pods, Version: version()}
	cpuBefore := cpuOf(o.pid("kube-apiserver"))
	began := time.Now()
	sim, err := startSim(bin, kubeconfig, sc.Nodes, o.Output)
	if err != nil {
		return nil, err
	}
	tl := startTimeline(ctx, began, []plot.Panel{{Title: "the bench's nodes", Series: []plot.Series{{Name: "Ready"}}},
		{Title: "the bench's pods", Series: []plot.Series{{Name: "Running"}}}},
		func() []float64 { return []float64{float64(nodes.Load()), float64(pods.Load())} })
	defer func() {
		sim.stop()
		fmt.Fprintln(o.Progress, "removing the bench's nodes")
		_ = clearSim(context.Background(), kube)
	}()
	exited := sim.exited
	mem := watchMemory(ctx, sim.pid)

	dog := newWatchdog(o)
	step := func(what string, counter *atomic.Int64, want int64) (float64, error) {
		shown := time.Now()
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			select {
			case <-exited:
				return false, fmt.Errorf("the simulator exited; see %s", filepath.Join(o.Output, "sim.log"))
			default:
			}
			if time.Since(shown) >= o.ProgressEvery {
				shown = time.Now()
				fmt.Fprintf(o.Progress, "%6.1fs  %s: %d of %d\n", time.Since(began).Seconds(), what, counter.Load(), want)
				if err := dog.check(ctx); err != nil {
					return false, err
				}
			}
			return counter.Load() == want, nil
		})
		if err != nil {
			return 0, fmt.Errorf("%s: %d of %d: %w", what, counter.Load(), want, err)
		}
		d := time.Since(began).Seconds()
		fmt.Fprintf(o.Progress, "%6.1fs  %s: all %d\n", d, what, want)
		return d, nil
	}
	if res.NodesReadySeconds, err = step("nodes Ready", nodes, int64(sc.Nodes)); err != nil {
		return nil, err
	}
	began = time.Now()
	if err := parallel(sc.Pods, sc.Writers, func(i int) error {
		_, err := kube.CoreV1().Pods(simNamespace).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-" + strconv.Itoa(i), Labels: map[string]string{Label: "true"}},
			Spec: corev1.PodSpec{NodeName: simNodePrefix + strconv.Itoa(i%sc.Nodes),
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating pods: %w", err)
	}
	if res.PodsRunningSeconds, err = step("pods Running", pods, int64(sc.Pods)); err != nil {
		return nil, err
	}
	began = time.Now()
	if err := parallel(sc.Pods, sc.Writers, func(i int) error {
		err := kube.CoreV1().Pods(simNamespace).Delete(ctx, "pod-"+strconv.Itoa(i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("deleting pods: %w", err)
	}
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		// Gone from the API, and from the watch that counts Running pods
		// for the chart, which may lag the list.
		list, err := kube.CoreV1().Pods(simNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(list.Items) == 0 && pods.Load() == 0, nil
	}); err != nil {
		return nil, fmt.Errorf("pods not gone: %w", err)
	}
	res.PodsGoneSeconds = time.Since(began).Seconds()
	fmt.Fprintf(o.Progress, "%6.1fs  pods gone: all %d\n", res.PodsGoneSeconds, sc.Pods)

	res.Date = time.Now().UTC()
	if rss, anon := mem.peaks(); rss != nil {
		res.SimPeakRSSMiB = *rss
		if anon != nil {
			res.SimPeakAnonMiB = *anon
		}
	}
	if cpu, err := procstat.CPUSeconds(sim.pid); err == nil {
		res.SimCPUSeconds = cpu
	}
	if after := cpuOf(o.pid("kube-apiserver")); cpuBefore != nil && after != nil {
		cpu := *after - *cpuBefore
		res.APIServerCPUSeconds = &cpu
	}
	ch := tl.stop(fmt.Sprintf("berth bench sim-scale, scale %g", scale))
	return res, writeFiles(o.Output, res, SimMarkdown(*res), ch)
}

// simProcess is a `berth sim` the bench started.
type simProcess struct {
	pid    int
	exited chan struct{}
	stop   func() // interrupt, then kill after 20s; waits for the exit
}

// startSim starts `berth sim` for the bench's own pool of nodes, logging to
// sim.log in the output directory.
func startSim(bin, kubeconfig string, nodes int, output string, extra ...string) (*simProcess, error) {
	cmd := exec.Command(bin, append([]string{"sim", "--kubeconfig", kubeconfig, "--nodes", strconv.Itoa(nodes),
		"--node-name-prefix", simNodePrefix, "--node-selector", simNodeLabel + "=true",
		"--node-taints", simNodeLabel + "=true:NoSchedule", "--cluster-stages=false"}, extra...)...)
	log, err := os.Create(filepath.Join(output, "sim.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting the simulator: %w", err)
	}
	p := &simProcess{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.exited) }()
	p.stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
	}
	return p, nil
}

// clearSim deletes the bench's pods and nodes and waits until they are gone.
func clearSim(ctx context.Context, kube kubernetes.Interface) error {
	sel := metav1.ListOptions{LabelSelector: simNodeLabel + "=true"}
	if err := kube.CoreV1().Pods(simNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)},
		metav1.ListOptions{LabelSelector: Label + "=true"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the last run's pods: %w", err)
	}
	if err := kube.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("deleting the last run's nodes: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, Limit: 1})
		if err != nil {
			return false, err
		}
		p, err := kube.CoreV1().Pods(simNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return false, err
		}
		return len(n.Items) == 0 && len(p.Items) == 0, nil
	})
}

// counters count the bench's Ready nodes and Running pods, from informers
// that keep only what they count.
func counters(ctx context.Context, kube kubernetes.Interface) (nodes, pods *atomic.Int64) {
	nodes, pods = &atomic.Int64{}, &atomic.Int64{}
	trim := informers.WithTransform(func(o any) (any, error) {
		switch t := o.(type) {
		case *corev1.Node:
			ready := corev1.ConditionFalse
			for _, c := range t.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status
				}
			}
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: t.Name, ResourceVersion: t.ResourceVersion},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}, nil
		case *corev1.Pod:
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: t.Name, Namespace: t.Namespace, ResourceVersion: t.ResourceVersion},
				Status: corev1.PodStatus{Phase: t.Status.Phase}}, nil
		}
		return o, nil
	})
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, trim,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = simNodeLabel + "=true" }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, trim, informers.WithNamespace(simNamespace))
	count := func(counter *atomic.Int64, is func(any) bool) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) {
				if is(o) {
					counter.Add(1)
				}
			},
			UpdateFunc: func(old, o any) {
				switch was, now := is(old), is(o); {
				case now && !was:
					counter.Add(1)
				case was && !now:
					counter.Add(-1)
				}
			},
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if is(o) {
					counter.Add(-1)
				}
			},
		}
	}
	_, _ = nodeFactory.Core().V1().Nodes().Informer().AddEventHandler(count(nodes, func(o any) bool {
		return o.(*corev1.Node).Status.Conditions[0].Status == corev1.ConditionTrue
	}))
	_, _ = podFactory.Core().V1().Pods().Informer().AddEventHandler(count(pods, func(o any) bool {
		return o.(*corev1.Pod).Status.Phase == corev1.PodRunning
	}))
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	nodeFactory.WaitForCacheSync(ctx.Done())
	podFactory.WaitForCacheSync(ctx.Done())
	return nodes, pods
}

// sample keeps the peak of the process's anonymous memory, every 100ms.
func sample(ctx context.Context, pid int, peak *atomic.Int64) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := procstat.StatusKB(pid, "RssAnon")
		if err != nil {
			return
		}
		if v > peak.Load() {
			peak.Store(v)
		}
	}
}

// parallel runs do(0..n-1) on workers goroutines; the first error stops it.
func parallel(n, workers int, do func(i int) error) error {
	var wg sync.WaitGroup
	var next atomic.Int64
	var failed atomic.Value
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && failed.Load() == nil; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	err, _ := failed.Load().(error)
	return err
}
