package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/testenv"
)

// instance is a berth instance of the test's own, driven through the CLI.
type instance struct {
	name, dir, bin string
}

// newInstance prepares an instance in a temporary directory and makes sure,
// when the test ends, that it is down and none of its processes survive.
func newInstance(t *testing.T, name string) *instance {
	t.Helper()
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its path holds the test's name, and a real node's
	// sockets live in the data directory, where a Unix socket's path may
	// be at most 104 bytes.
	dir, err := os.MkdirTemp("", "e2e-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	inst := &instance{name: name, dir: dir, bin: bin}
	t.Cleanup(func() {
		if out, code := inst.run(t, "down"); code != 0 {
			t.Errorf("cleanup: berth down: exit %d\n%s", code, out)
		}
		inst.assertNothingRuns(t)
	})
	return inst
}

// run executes berth with the instance's --name and --data-dir, returning
// combined output and exit code.
func (i *instance) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, _, code := i.runSplit(t, args...)
	return out, code
}

func (i *instance) runSplit(t *testing.T, args ...string) (combined, stdout string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args = append(args, "--name", i.name, "--data-dir", i.dir)
	cmd := exec.CommandContext(ctx, i.bin, args...)
	var all, so bytes.Buffer
	var mu sync.Mutex
	cmd.Stdout = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		all.Write(p)
		return so.Write(p)
	})
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return all.Write(p)
	})
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("berth %v: %v", args, err)
	}
	return all.String(), so.String(), code
}

// writerFunc lets stdout and stderr share one buffer under a lock; exec copies
// each from its own goroutine.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// up runs `berth up --detach` with flags, requires exit 0 and returns the kubeconfig path
// printed on the last line of stdout.
func (i *instance) up(t *testing.T, flags ...string) string {
	t.Helper()
	all, stdout, code := i.runSplit(t, append([]string{"up", "--detach"}, flags...)...)
	if code != 0 {
		t.Fatalf("berth up --detach: exit %d\n%s", code, all)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	want := controlplane.Layout{Dir: i.dir}.Kubeconfig()
	if last != want {
		t.Fatalf("last line of stdout is %q, want the kubeconfig path %q", last, want)
	}
	return last
}

// down runs `berth down` and requires exit 0.
func (i *instance) down(t *testing.T) {
	t.Helper()
	if out, code := i.run(t, "down"); code != 0 {
		t.Fatalf("berth down: exit %d\n%s", code, out)
	}
}

func (i *instance) state(t *testing.T) *controlplane.State {
	t.Helper()
	st, err := controlplane.ReadState(controlplane.Layout{Dir: i.dir})
	if err != nil || st == nil {
		t.Fatalf("reading instance.json: %v (state %v)", err, st)
	}
	return st
}

// pids are the supervisor and components as instance.json records them.
func (i *instance) pids(t *testing.T) []controlplane.ProcessRef {
	st := i.state(t)
	refs := []controlplane.ProcessRef{st.Supervisor}
	for _, c := range st.Components {
		refs = append(refs, c.Process)
	}
	return refs
}

// assertNothingRuns fails if any process recorded for the instance is alive.
func (i *instance) assertNothingRuns(t *testing.T) {
	t.Helper()
	st, err := controlplane.ReadState(controlplane.Layout{Dir: i.dir})
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		return
	}
	for _, p := range i.pids(t) {
		if p.Alive() {
			t.Errorf("process %d of instance %s is still running", p.PID, i.name)
		}
	}
}
