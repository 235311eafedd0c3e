package multicluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berth-dev/berth/internal/controller/multicluster"
	"github.com/berth-dev/berth/internal/testenv"
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
