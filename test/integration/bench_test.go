package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/testenv"
)

// `berth bench baseline` at a tiny scale, as a smoke test of correctness (not
// of timing): every workload is admitted through the queues, runs for its
// class's runtime and finishes, and the results say so.
func TestBenchBaselineSmoke(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	t.Cleanup(func() {
		if err := bench.Clear(ctx, env.Client); err != nil {
			t.Errorf("clearing the bench's objects: %v", err)
		}
	})
	cmd := exec.Command(bin, "bench", "baseline", "--scale", "0.01", "--kubeconfig", env.Kubeconfig,
		"--output", out, "--timeout", "3m")
	if combined, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("berth bench baseline: %v\n%s", err, combined)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Results
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("results.json: %v\n%s", err, data)
	}
	want := len(bench.Baseline(0.01).Plan())
	if r.Workloads != want || r.Finished != want {
		t.Errorf("%d workloads, %d finished; want %d of each", r.Workloads, r.Finished, want)
	}
	admitted := 0
	for _, c := range r.Classes {
		admitted += c.Count
	}
	if admitted != want {
		t.Errorf("%d workloads admitted across classes %+v, want %d", admitted, r.Classes, want)
	}
	if r.WallSeconds < r.LowerBoundSeconds || r.LowerBoundSeconds <= 0 {
		t.Errorf("wall %.2fs against a lower bound of %.2fs: the bound must be positive and not beaten", r.WallSeconds, r.LowerBoundSeconds)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.md")); err != nil {
		t.Error(err)
	}
}
