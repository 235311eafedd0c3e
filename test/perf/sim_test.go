package perf

import (
	"context"
	"os"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/controlplane"
)

// BenchmarkSimScale is `berth bench sim-scale` against a fresh core control
// plane (etcd with fsync, as `berth up` runs it; no berth controller or
// simulator of its own): 5,000 nodes Ready, then 10,000 pods Running, then
// all gone. It reports the seconds each step took, the simulator's peak RSS
// and anonymous memory, and the CPU seconds the simulator and kube-apiserver
// used. Run with -benchtime=1x; BENCH_ETCD_NO_FSYNC=1 runs etcd without fsync.
func BenchmarkSimScale(b *testing.B) {
	bin := binary(b)
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithCancel(context.Background())
		plan := controlplane.DefaultPlanOptions()
		plan.EtcdUnsafeNoFsync = os.Getenv("BENCH_ETCD_NO_FSYNC") != ""
		inst, err := controlplane.Start(ctx, controlplane.Options{Name: "bench", DataDir: b.TempDir(), Binary: bin, Plan: plan})
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", inst.Kubeconfig())
		if err != nil {
			b.Fatal(err)
		}
		apiserver := 0
		for _, c := range inst.State().Components {
			if c.Name == "kube-apiserver" {
				apiserver = c.Process.PID
			}
		}
		b.StartTimer()
		res, err := bench.RunSimScale(ctx, cfg, inst.Kubeconfig(), bin, bench.SimScaleAt(1), 1,
			bench.Options{Output: b.TempDir(), Processes: map[string]int{"kube-apiserver": apiserver}})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		cancel()
		if err := inst.Stop(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.NodesReadySeconds, "s-nodes-ready")
		b.ReportMetric(res.PodsRunningSeconds, "s-pods-running")
		b.ReportMetric(res.PodsGoneSeconds, "s-pods-gone")
		b.ReportMetric(res.SimPeakRSSMiB, "MiB-sim-peak-rss")
		b.ReportMetric(res.SimPeakAnonMiB, "MiB-sim-peak-anon")
		b.ReportMetric(res.SimCPUSeconds, "cpu-s-sim")
		if res.APIServerCPUSeconds != nil {
			b.ReportMetric(*res.APIServerCPUSeconds, "cpu-s-apiserver")
		}
		b.StartTimer() // b.Loop wants it running
	}
}
