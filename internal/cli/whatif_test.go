package cli

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/whatif"
)

// runCommand runs a berth command in process, returning its stdout, its
// stderr and its error.
func runCommand(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// A generated trace replays against the example queues, alone and against
// a plan where team-b lends nothing: team-a, which borrows, waits longer.
func TestWhatifComparesTwoPlansOnAGeneratedTrace(t *testing.T) {
	dir := t.TempDir()
	trace, _, err := runCommand(t, "trace", "generate", "--queues", "team-a/jobs=3,team-b/jobs", "--workloads", "300",
		"--rate", "0.05", "--run-mean", "300", "--pods", "1-4", "--cpu", "1", "--memory", "1Gi")
	if err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, "trace.jsonl")
	queues, err := os.ReadFile("../../examples/queues.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lendNothing := strings.Replace(string(queues), "nominalQuota: 6, lendingLimit: 4", "nominalQuota: 6, lendingLimit: 0", 1)
	if lendNothing == string(queues) {
		t.Fatal("examples/queues.yaml no longer has team-b's lending limit of 4")
	}
	for name, data := range map[string]string{tracePath: trace, filepath.Join(dir, "today.yaml"): string(queues),
		filepath.Join(dir, "lend-nothing.yaml"): lendNothing} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	out, _, err := runCommand(t, "whatif", "--trace", tracePath, "--config", filepath.Join(dir, "today.yaml"))
	if err != nil || !strings.Contains(out, "config today.yaml: 300 workloads") || !strings.Contains(out, "team-a/jobs") {
		t.Fatalf("one plan: %v\n%s", err, out)
	}
	chart := filepath.Join(dir, "compare.png")
	out, _, err = runCommand(t, "whatif", "--trace", tracePath, "--config", filepath.Join(dir, "today.yaml"),
		"--config", filepath.Join(dir, "lend-nothing.yaml"), "-o", "json", "--chart", chart)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(chart); err != nil {
		t.Errorf("no chart: %v", err)
	} else if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Errorf("the chart is no PNG: %v", err)
	}
	var c struct {
		Groups []struct {
			By, Name string
			A, B     struct{ MeanWait float64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := false
	for _, g := range c.Groups {
		if g.By == "ClusterQueue" && g.Name == "team-a" {
			found = true
			if g.B.MeanWait <= g.A.MeanWait {
				t.Errorf("team-a waits %.0fs on average when team-b lends, %.0fs when it lends nothing; want longer", g.A.MeanWait, g.B.MeanWait)
			}
		}
	}
	if !found {
		t.Fatalf("no ClusterQueue team-a in %s", out)
	}

	if _, _, err := runCommand(t, "whatif", "--trace", tracePath); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("no --config: %v", err)
	}
}

// trace record refuses a wait that could never end or never start, before
// it reads anything.
func TestTraceRecordRefusesAWrongTimeout(t *testing.T) {
	for _, arg := range []string{"--timeout=0s", "--timeout=-1m"} {
		_, _, err := runCommand(t, "trace", "record", arg, "--kubeconfig", filepath.Join(t.TempDir(), "none"))
		if err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("%s: %v", arg, err)
		}
	}
}

// --this-cluster counts as one of the (at most two) configurations, and the
// flags that say which cluster it reads are refused without it, before
// anything is read.
func TestWhatifThisClusterCountsAsAConfiguration(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--this-cluster", "--config", "a.yaml", "--config", "b.yaml"}, "--config: give one configuration to replay, or two to compare (3 given, --this-cluster counting as one)"},
		{[]string{"--config", "a.yaml", "--kubeconfig", "kc"}, "--kubeconfig, --name and --data-dir say which cluster --this-cluster reads: give --this-cluster too"},
		{[]string{"--config", "a.yaml", "--name", "other"}, "give --this-cluster too"},
		{[]string{"--this-cluster", "--config", "a.yaml", "--against-recorded"}, "--against-recorded compares one replay with what happened: give one --config, or --this-cluster (2 given)"},
	} {
		_, _, err := runCommand(t, append([]string{"whatif", "--trace", "t.jsonl"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.args, err, c.want)
		}
	}
}

// A trace's LocalQueues the cluster lacks are named, once each, in order.
func TestMissingLocalQueuesAreNamed(t *testing.T) {
	cfg := &whatif.Config{LocalQueues: []berthv1.LocalQueue{{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "jobs"}}}}
	trace := []whatif.Workload{{Namespace: "team-b", LocalQueue: "jobs"}, {Namespace: "team-a", LocalQueue: "jobs"},
		{Namespace: "team-b", LocalQueue: "jobs"}, {Namespace: "team-a", LocalQueue: "gpu"}}
	if got := missingLocalQueues(cfg, trace); !slices.Equal(got, []string{"team-a/gpu", "team-b/jobs"}) {
		t.Errorf("missing %v; want team-a/gpu and team-b/jobs", got)
	}
}
