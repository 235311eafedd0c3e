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

// A first slice of the chaos run (issue 17): berth's controller, killed
// with SIGKILL three times while a quota-bound run with cohorts and
// preemption (the baseline shape) goes on, restarts each time and loses
// nothing: the run ends with every workload finished, and the auditor,
// watching throughout, saw no over-admission, no double admission and
// nothing left unsettled.
func TestControllerKilledMidRunKeepsPromises(t *testing.T) {
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
	const faults = 3
	kills, submitting := 0, false
	var seen []string
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		seen = append(seen, lines.Text())
		submitting = submitting || strings.HasPrefix(lines.Text(), "submitting")
		if !submitting || kills == faults {
			continue
		}
		// At each progress line, kill the controller if it is back up since
		// the last kill.
		c := component(t, inst.state(t), "berth-controller")
		if c.Restarts == kills && c.Process.Alive() {
			if err := syscall.Kill(c.Process.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			kills++
			seen = append(seen, "(test: killed berth-controller)")
		}
	}
	err = cmd.Wait()
	log := strings.Join(seen, "\n")
	if err != nil {
		t.Fatalf("the bench failed: %v\n%s", err, log)
	}
	if kills != faults {
		t.Fatalf("the run ended after %d of %d kills; make it longer:\n%s", kills, faults, log)
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
	if c := component(t, inst.state(t), "berth-controller"); c.Restarts != faults || !c.Process.Alive() {
		t.Errorf("berth-controller: %d restarts, alive %v; want %d and running", c.Restarts, c.Process.Alive(), faults)
	}
}
