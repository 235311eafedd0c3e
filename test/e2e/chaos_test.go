package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/bench"
)

// A first slice of the chaos run (issue 17): berth's controller, the
// kube-apiserver and etcd, each killed with SIGKILL while a quota-bound run
// with cohorts and preemption (the baseline shape) goes on, are restarted
// and nothing is lost: the run ends with every workload finished, and the
// auditor, watching throughout, saw no over-admission, no double admission
// and nothing left unsettled.
func TestKilledComponentsMidRunKeepPromises(t *testing.T) {
	inst := newInstance(t, "chaos")
	inst.up(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, inst.bin, "bench", "baseline", "--scale", "0.05", "--timeout", "5m", "--audit",
		"--output", out, "--name", inst.name, "--data-dir", inst.dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// One kill at each progress line once the last victim is back, in this
	// order; the API server and etcd only once every workload is created,
	// so that the bench's own submissions are not what fails.
	victims := []string{"berth-controller", "kube-apiserver", "berth-controller", "etcd"}
	kills, submitting, created := 0, false, false
	var seen []string
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		line := lines.Text()
		seen = append(seen, line)
		submitting = submitting || strings.HasPrefix(line, "submitting")
		created = created || createdAll(line)
		if !submitting || kills == len(victims) {
			continue
		}
		st := inst.state(t)
		if kills > 0 {
			last := component(t, st, victims[kills-1])
			if !last.Process.Alive() || last.Restarts < restartsOf(victims[:kills], victims[kills-1]) {
				continue // not back yet
			}
		}
		next := victims[kills]
		if next != "berth-controller" && !created {
			continue
		}
		c := component(t, st, next)
		if err := syscall.Kill(c.Process.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		kills++
		seen = append(seen, "(test: killed "+next+")")
	}
	err = cmd.Wait()
	log := strings.Join(seen, "\n")
	if err != nil {
		t.Fatalf("the bench failed: %v\n%s", err, log)
	}
	if kills != len(victims) {
		t.Fatalf("the run ended after %d of %d kills; make it longer:\n%s", kills, len(victims), log)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Audit *bench.AuditResult
	}
	if err := json.Unmarshal(data, &r); err != nil || r.Audit == nil {
		t.Fatalf("results.json has no audit (%v):\n%s", err, data)
	}
	if r.Audit.Violations != 0 {
		t.Errorf("the auditor found %d broken promises: %v\n%s", r.Audit.Violations, r.Audit.First, log)
	}
	t.Logf("the run:\n%s", log)
	st := inst.state(t)
	for _, name := range []string{"berth-controller", "kube-apiserver", "etcd"} {
		if c := component(t, st, name); c.Restarts != restartsOf(victims, name) || !c.Process.Alive() {
			t.Errorf("%s: %d restarts, alive %v; want %d and running", name, c.Restarts, c.Process.Alive(), restartsOf(victims, name))
		}
	}
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

// createdAll reports a progress line saying every workload is created
// ("created 780/780").
func createdAll(line string) bool {
	f := strings.Fields(line)
	for i, w := range f {
		if w == "created" && i+1 < len(f) {
			n, total, ok := strings.Cut(f[i+1], "/")
			return ok && n == total
		}
	}
	return false
}
