package perf

import (
	"context"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/localcluster"
	"github.com/berth-dev/berth/internal/testenv"
)

// BenchmarkStartToReady measures `berth up` on a new data directory, from the
// call to the moment every component is healthy: certificates, etcd bootstrap,
// API server start-up with RBAC bootstrap, controller-manager and scheduler,
// berth's CRDs and RBAC installed, and berth's controller ready.
// Run with -benchtime=1x -count=5 and take the median.
func BenchmarkStartToReady(b *testing.B) {
	bin := binary(b)
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		b.StartTimer()
		startStop(b, bin, dir)
	}
}

// BenchmarkRestartToReady measures `berth up` on a data directory that already
// holds a cluster, as after `berth down`.
func BenchmarkRestartToReady(b *testing.B) {
	bin := binary(b)
	dir := b.TempDir()
	b.StopTimer()
	startStop(b, bin, dir)
	b.StartTimer()
	for b.Loop() {
		startStop(b, bin, dir)
	}
}

func binary(b *testing.B) string {
	bin, err := testenv.Binary()
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// startStop times the start (the timer runs) and excludes the stop.
func startStop(b *testing.B, bin, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := controlplane.Start(ctx, localcluster.Options(localcluster.Config{Name: "bench", DataDir: dir, Binary: bin}))
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := inst.Stop(); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}
