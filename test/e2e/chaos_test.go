package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/chaos"
)

// berth bench chaos, small: while a quota-bound run with cohorts and
// preemption (the baseline shape) goes on, berth's controller, the
// kube-apiserver, etcd and the simulator are each killed twice with SIGKILL,
// and the leader of two controller replicas (the instance's runs with leader
// election, the bench starts a second) is paused past its lease once, in an
// order and at moments drawn from a fixed seed, each once the last victim is
// back. Each is restarted or replaced, the run ends with every workload
// finished, and the auditor, watching throughout, saw no over-admission, no
// double admission and nothing left unsettled.
func TestChaosBenchKeepsPromises(t *testing.T) {
	inst := newInstance(t, "chaos")
	inst.up(t, "--controller-flag=--leader-elect")
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inst.bin, "bench", "chaos", "--scale", "0.3", "--seed", "11", "--faults", "9",
		"--timeout", "6m", "--output", out, "--name", inst.name, "--data-dir", inst.dir)
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("berth bench chaos: %v\n%s", err, tail(string(log), 60))
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
	var victims []string
	for _, f := range r.Faults {
		victims = append(victims, f.Component)
		if f.Error != "" || f.Back == 0 {
			t.Errorf("%s killed at %v: back after %v, %s", f.Component, f.KilledAt, f.Back, f.Error)
		}
	}
	st := inst.state(t)
	for name, want := range map[string]int{"berth-controller": 2, "kube-apiserver": 2, "etcd": 2, "berth-sim": 2, chaos.LeaderPause: 1} {
		if n := restartsOf(victims, name); n != want {
			t.Errorf("%s hit %d times; want %d (faults %v)", name, n, want, victims)
		}
	}
	for _, name := range []string{"berth-controller", "kube-apiserver", "etcd", "berth-sim"} {
		// A paused leader exits when it resumes: the instance's controller
		// restarts once more for each pause that found it leading.
		kills, most := restartsOf(victims, name), restartsOf(victims, name)
		if name == "berth-controller" {
			most += restartsOf(victims, chaos.LeaderPause)
		}
		if c := component(t, st, name); c.Restarts < kills || c.Restarts > most || !c.Process.Alive() {
			t.Errorf("%s: %d restarts, alive %v; want %d to %d and running", name, c.Restarts, c.Process.Alive(), kills, most)
		}
	}
	t.Logf("the run:\n%s", tail(string(log), 40))
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
