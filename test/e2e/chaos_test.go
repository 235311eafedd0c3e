package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/chaos"
	"github.com/berth-dev/berth/internal/testenv"
)

// berth bench chaos, at CI scale: while a quota-bound run of Workloads and
// Jobs, with cohorts and preemption, goes on for two minutes and a bit,
// berth's controller, the kube-apiserver, etcd and the simulator are each
// killed ten times with SIGKILL, and the leader of two controller replicas
// (the instance's runs with leader election, on a 5s lease so that pauses
// hand over quickly; the bench starts a second) is paused past its lease ten times: the kinds side by
// side, at moments drawn from a fixed seed. Each is restarted or replaced, never
// taken for a crash loop, the run ends with every workload and Job
// finished, and the auditor, watching throughout, saw no over-admission, no
// double admission, no pod running unadmitted and nothing left unsettled.
func TestChaosBenchKeepsPromises(t *testing.T) {
	inst := newInstance(t, "chaos")
	inst.up(t, "--controller-flag=--leader-elect", "--controller-flag=--leader-elect-lease-duration=5s",
		"--controller-flag=--leader-elect-renew-deadline=4s", "--controller-flag=--leader-elect-retry-period=1s")
	out := t.TempDir()
	keepOnFailure(t, out, filepath.Join(inst.dir, "logs"))
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	const each = 10
	cmd := exec.CommandContext(ctx, inst.bin, "bench", "chaos", "--duration", "160s", "--scale", "0.1", "--seed", "11",
		"--faults", strconv.Itoa(each*len(chaos.Kinds(true))), "--timeout", "7m", "--output", out, "--name", inst.name, "--data-dir", inst.dir)
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("berth bench chaos: %v\n%s", err, tail(string(log), 80))
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Results
	if err := json.Unmarshal(data, &r); err != nil || r.Audit == nil {
		t.Fatalf("results.json has no audit (%v):\n%s", err, data)
	}
	if r.Audit.Violations != 0 || r.Finished != r.Workloads {
		t.Errorf("%d broken promises %v; %d of %d workloads finished", r.Audit.Violations, r.Audit.First, r.Finished, r.Workloads)
	}
	jobs := 0
	for _, c := range r.Classes {
		if c.Name == "job" {
			jobs = c.Count
		}
	}
	if jobs == 0 {
		t.Errorf("no Jobs in the run: %+v", r.Classes)
	}
	var victims []string
	for _, f := range r.Faults {
		victims = append(victims, f.Component)
		if f.Error != "" || f.Back == 0 {
			t.Errorf("%s hit at %v: back after %v, %s", f.Component, f.KilledAt, f.Back, f.Error)
		}
	}
	for _, kind := range chaos.Kinds(true) {
		if n := restartsOf(victims, kind); n != each {
			t.Errorf("%s hit %d times; want %d (faults %v)", kind, n, each, victims)
		}
	}
	for _, name := range chaos.Components {
		// A paused leader exits when it resumes, and a leader cut off from
		// the API server past its renew deadline exits too: the controller
		// may restart more often than it was killed, and may be waiting out
		// its restart backoff as the run ends.
		testenv.Eventually(t, time.Minute, func() error {
			if c := component(t, inst.state(t), name); c.Restarts < restartsOf(victims, name) || !c.Process.Alive() {
				return fmt.Errorf("%s: %d restarts, alive %v; want at least %d and running", name, c.Restarts, c.Process.Alive(), restartsOf(victims, name))
			}
			return nil
		})
	}
	t.Logf("the run:\n%s", tail(string(log), 40))
}

// keepOnFailure copies dirs out of the test's reach when it fails (they are
// removed with it otherwise): a broken promise seen once under chaos is
// read from the run's results and the components' logs.
func keepOnFailure(t *testing.T, dirs ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		keep, err := os.MkdirTemp("", "berth-"+t.Name()+"-")
		if err != nil {
			t.Logf("keeping the run's files: %v", err)
			return
		}
		for _, d := range dirs {
			if err := os.CopyFS(filepath.Join(keep, filepath.Base(d)), os.DirFS(d)); err != nil {
				t.Logf("keeping %s: %v", d, err)
			}
		}
		t.Logf("the run's results and logs are kept in %s", keep)
	})
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// restartsOf counts name in victims.
func restartsOf(victims []string, name string) int {
	n := 0
	for _, v := range victims {
		if v == name {
			n++
		}
	}
	return n
}
