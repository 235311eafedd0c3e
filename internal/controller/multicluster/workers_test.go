package multicluster_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller/multicluster"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/test/fixtures"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// A worker whose WorkerCluster is deleted leaves nothing running behind: its
// watches stop and its connections close (the shared control plane plays
// the worker).
func TestForgottenWorkerLeavesNoGoroutine(t *testing.T) {
	env := testenv.New(t)
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	forget, err := multicluster.ConnectAndForget(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if goleak.Find(before) == nil {
		t.Fatal("connected, yet no goroutine runs: the test would prove nothing")
	}
	forget()
	testenv.Eventually(t, 30*time.Second, func() error { return goleak.Find(before) })
}

// A worker's change concerns the workloads waiting for a worker and those
// running on it; never a finished one, which is not dispatched again.
func TestDispatchKeys(t *testing.T) {
	finished := fixtures.MakeWorkload("done", "ns").Reserved("cq", "mc").RunsOn("east").Obj()
	workload.SetFinished(finished, "Succeeded", "done", time.Now())
	for _, tc := range []struct {
		name string
		wl   *berthv1.Workload
		want []string
	}{
		{"pending, no quota", fixtures.MakeWorkload("w", "ns").Obj(), nil},
		{"quota, waiting for a worker", fixtures.MakeWorkload("w", "ns").Reserved("cq", "mc").Obj(), []string{":waiting"}},
		{"quota, no admission checks", fixtures.MakeWorkload("w", "ns").Reserved("cq").Obj(), nil},
		{"running on east", fixtures.MakeWorkload("w", "ns").Reserved("cq", "mc").RunsOn("east").Obj(), []string{"east"}},
		{"finished on east", finished, nil},
	} {
		if got := multicluster.DispatchKeys(tc.wl); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
