package perf

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/procstat"
)

// BenchmarkSimScale is the sim-scale scenario: `berth sim --nodes 5000`
// against a fresh control plane (etcd with fsync, as `berth up` runs it)
// until 5,000 nodes are Ready; then 10,000 pods bound to them created by 32
// writers until all are Running; then all deleted by 32 writers until all
// are gone. It reports the seconds each step took, the simulator's peak RSS
// (VmHWM) and peak anonymous memory, and the CPU seconds the simulator and
// kube-apiserver used. Run with -benchtime=1x.
//
// Environment: BENCH_ETCD_NO_FSYNC=1 runs etcd without fsync;
// BENCH_SIM_GOGC sets GOGC for the simulator alone; BENCH_SIM_HEAP_PROFILE
// names a file for the simulator's heap profile once the pods run.
func BenchmarkSimScale(b *testing.B) {
	const nodes, pods, writers = 5000, 10000, 32
	bin := binary(b)
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		plan := controlplane.DefaultPlanOptions()
		plan.EtcdUnsafeNoFsync = os.Getenv("BENCH_ETCD_NO_FSYNC") != ""
		inst, err := controlplane.Start(ctx, controlplane.Options{Name: "bench", DataDir: dir, Binary: bin, Plan: plan})
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", inst.Kubeconfig())
		if err != nil {
			b.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 5000, 5000
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		kube := kubernetes.NewForConfigOrDie(cfg)
		apiserver := pidOf(b, inst, "kube-apiserver")

		nodeCount, podCount := readyCounter(ctx, kube)

		port, err := controlplane.FreePort()
		if err != nil {
			b.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(dir, "sim.log"))
		if err != nil {
			b.Fatal(err)
		}
		writes := apiWrites(b, kube)
		b.StartTimer()
		began := time.Now()
		sim := exec.Command(bin, "sim", "--kubeconfig", inst.Kubeconfig(), "--nodes", strconv.Itoa(nodes),
			"--cluster-stages=false", "--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(port), "--profiling")
		sim.Stdout, sim.Stderr = logf, logf
		if gogc := os.Getenv("BENCH_SIM_GOGC"); gogc != "" {
			sim.Env = append(os.Environ(), "GOGC="+gogc) // the simulator's alone, not the control plane's
		}
		if err := sim.Start(); err != nil {
			b.Fatal(err)
		}
		peakAnon := sampleAnon(ctx, sim.Process.Pid)
		waitCount(b, "Ready nodes", nodeCount, nodes, 5*time.Minute)
		nodesReady := time.Since(began)
		b.Logf("%d nodes Ready after %v; API writes: %s", nodes, nodesReady, writes.delta(b, kube))

		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}},
			metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		began = time.Now()
		parallel(b, pods, writers, func(i int) error {
			_, err := kube.CoreV1().Pods("bench").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "pod-" + strconv.Itoa(i)},
				Spec: corev1.PodSpec{NodeName: "sim-node-" + strconv.Itoa(i%nodes),
					Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			}, metav1.CreateOptions{})
			return err
		})
		waitCount(b, "Running pods", podCount, pods, 5*time.Minute)
		podsRunning := time.Since(began)
		b.Logf("%d pods Running after %v; API writes: %s", pods, podsRunning, writes.delta(b, kube))
		if dst := os.Getenv("BENCH_SIM_HEAP_PROFILE"); dst != "" {
			saveProfile(b, "http://127.0.0.1:"+strconv.Itoa(port)+"/debug/pprof/heap", dst)
		}

		began = time.Now()
		parallel(b, pods, writers, func(i int) error {
			return kube.CoreV1().Pods("bench").Delete(ctx, "pod-"+strconv.Itoa(i), metav1.DeleteOptions{})
		})
		waitGone(b, kube, 5*time.Minute)
		podsGone := time.Since(began)
		b.StopTimer()
		b.Logf("%d pods gone after %v; API writes: %s", pods, podsGone, writes.delta(b, kube))

		hwm, simCPU := procStatus(b, sim.Process.Pid, "VmHWM"), cpuSeconds(b, sim.Process.Pid)
		apiCPU := cpuSeconds(b, apiserver)
		var others []string
		for _, c := range inst.State().Components {
			others = append(others, fmt.Sprintf("%s %.0f", c.Name, cpuSeconds(b, c.Process.PID)))
		}
		b.Logf("CPU seconds: berth sim %.0f, %s", simCPU, strings.Join(others, ", "))
		_ = sim.Process.Signal(syscall.SIGTERM)
		_ = sim.Wait()
		cancel()
		if err := inst.Stop(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(nodesReady.Seconds(), "s-nodes-ready")
		b.ReportMetric(podsRunning.Seconds(), "s-pods-running")
		b.ReportMetric(podsGone.Seconds(), "s-pods-gone")
		b.ReportMetric(float64(hwm)/1024, "MiB-sim-peak-rss")
		b.ReportMetric(float64(peakAnon.Load())/1024, "MiB-sim-peak-anon")
		b.ReportMetric(simCPU, "cpu-s-sim")
		b.ReportMetric(apiCPU, "cpu-s-apiserver")
		b.StartTimer() // b.Loop wants it running
	}
}

// saveProfile writes the profile at url to the file dst.
func saveProfile(b *testing.B, url, dst string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("simulator heap profile: %s", dst)
}

// readyCounter counts Ready nodes and Running pods from informers that
// keep nothing but what the count needs.
func readyCounter(ctx context.Context, kube kubernetes.Interface) (nodes, pods *atomic.Int64) {
	nodes, pods = &atomic.Int64{}, &atomic.Int64{}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(func(o any) (any, error) {
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
	}))
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
	_, _ = factory.Core().V1().Nodes().Informer().AddEventHandler(count(nodes, func(o any) bool {
		return o.(*corev1.Node).Status.Conditions[0].Status == corev1.ConditionTrue
	}))
	_, _ = factory.Core().V1().Pods().Informer().AddEventHandler(count(pods, func(o any) bool {
		return o.(*corev1.Pod).Status.Phase == corev1.PodRunning
	}))
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return nodes, pods
}

func waitCount(b *testing.B, what string, counter *atomic.Int64, want int64, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for counter.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d %s after %v", counter.Load(), want, what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitGone(b *testing.B, kube kubernetes.Interface, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		list, err := kube.CoreV1().Pods("bench").List(context.Background(), metav1.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		if len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("pods still there after %v", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func parallel(b *testing.B, n, workers int, do func(i int) error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	var failed atomic.Value
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

func pidOf(b *testing.B, inst *controlplane.Instance, component string) int {
	for _, c := range inst.State().Components {
		if c.Name == component {
			return c.Process.PID
		}
	}
	b.Fatalf("no component %s", component)
	return 0
}

// sampleAnon records the process's peak RssAnon (KiB) every 100ms.
func sampleAnon(ctx context.Context, pid int) *atomic.Int64 {
	peak := &atomic.Int64{}
	go func() {
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
	}()
	return peak
}

func procStatus(b *testing.B, pid int, field string) int64 {
	v, err := procstat.StatusKB(pid, field)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func cpuSeconds(b *testing.B, pid int) float64 {
	v, err := procstat.CPUSeconds(pid)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// writeCounts are kube-apiserver's counts of write requests by verb and
// resource, from its /metrics.
type writeCounts map[string]float64

func apiWrites(b *testing.B, kube kubernetes.Interface) writeCounts {
	data, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	out := writeCounts{}
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION":
		default:
			continue
		}
		name := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			name += "/" + l["subresource"]
		}
		v, _ := strconv.ParseFloat(value, 64)
		out[name] += v
	}
	return out
}

// delta returns the writes since the last call, largest first, and
// remembers the current counts.
func (w writeCounts) delta(b *testing.B, kube kubernetes.Interface) string {
	now := apiWrites(b, kube)
	type kv struct {
		k string
		v float64
	}
	var diffs []kv
	total := 0.0
	for k, v := range now {
		if d := v - w[k]; d >= 1 {
			diffs = append(diffs, kv{k, d})
			total += d
		}
		w[k] = v
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i].v > diffs[j].v })
	parts := []string{fmt.Sprintf("%.0f in all", total)}
	for _, d := range diffs {
		if d.v >= 100 {
			parts = append(parts, fmt.Sprintf("%s %.0f", d.k, d.v))
		}
	}
	return strings.Join(parts, ", ")
}
