package integration

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/bench"
	"github.com/berth-dev/berth/internal/testenv"
)

// Every `berth bench` scenario at a tiny scale, as a smoke test of
// correctness (not of timing): every workload is admitted through the
// queues (and, where the scenario runs them, finishes after its runtime),
// and the results say so.
func TestBenchScenariosSmoke(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bench.Clear(ctx, env.Client); err != nil {
			t.Errorf("clearing the bench's objects: %v", err)
		}
	})
	var names []string
	for name := range bench.Scenarios {
		names = append(names, name)
	}
	names = append(names, "sim-scale", "e2e-jobs", "e2e-jobsets", "pods", "tas", "deep-queue", "creates")
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			args := []string{"bench", name, "--scale", "0.01", "--kubeconfig", env.Kubeconfig,
				"--output", out, "--timeout", "3m"}
			if name == "deep-queue" {
				args = append(args, "--duration", "2s") // its gangs' run time
			}
			audited := name != "sim-scale" && name != "creates" // they admit nothing through berth's queues
			if audited {
				args = append(args, "--audit")
			}
			cmd := exec.Command(bin, args...)
			if combined, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("berth bench %s: %v\n%s", name, err, combined)
			}
			data, err := os.ReadFile(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r bench.Results
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatalf("results.json: %v\n%s", err, data)
			}
			// Every run through berth's queues is audited, and keeps
			// berth's promises (sim-scale runs the simulator alone).
			var audit struct{ Audit *bench.AuditResult }
			if err := json.Unmarshal(data, &audit); !audited {
			} else if err != nil || audit.Audit == nil {
				t.Errorf("results.json has no audit (%v)", err)
			} else if audit.Audit.Violations != 0 {
				t.Errorf("the auditor found %d broken promises: %v", audit.Audit.Violations, audit.Audit.First)
			}
			switch name {
			case "creates":
				checkCreates(t, data)
				return
			case "sim-scale":
				checkSimScale(t, data)
				want := bench.SimScaleAt(0.01)
				// The pods were Running and are gone; the nodes stay Ready.
				checkChart(t, out, map[string]float64{"the bench's nodes/Ready": float64(want.Nodes),
					"the bench's pods/Running": 0})
				return
			case "e2e-jobs", "e2e-jobsets":
				want := bench.E2EJobsAt(0.01)
				resource := "jobs"
				if name == "e2e-jobsets" {
					want, resource = bench.E2EJobSetsAt(0.01), "jobsets"
				}
				checkE2EJobs(t, data, want, resource)
				pods := float64(want.Jobs * want.Parallelism)
				checkChart(t, out, map[string]float64{"pods of the bench/created (admitted)": pods,
					"pods of the bench/running": 0, "pods of the bench/succeeded": pods})
				return
			case "tas":
				checkTAS(t, data)
				pods := float64(bench.TASAt(0.01).PodCount())
				checkChart(t, out, map[string]float64{"pods of the bench/created (admitted)": pods,
					"pods of the bench/running": 0, "pods of the bench/succeeded": pods})
				return
			case "deep-queue":
				var r bench.DeepQueueResults
				if err := json.Unmarshal(data, &r); err != nil {
					t.Fatal(err)
				}
				s := bench.DeepQueueAt(0.01)
				pods := 0
				for _, d := range s.Depths {
					pods += d * s.PodsPerGang
				}
				if r.Succeeded != pods || r.LastStartSeconds <= 0 || r.GangsPerMinute <= 0 || len(r.Start) != len(s.Depths) {
					t.Errorf("deep-queue: %d of %d pods succeeded, last start %.1f s, %.1f gangs a minute, starts of %d queues",
						r.Succeeded, pods, r.LastStartSeconds, r.GangsPerMinute, len(r.Start))
				}
				checkChart(t, out, map[string]float64{"pods of the bench/created (admitted)": float64(pods),
					"pods of the bench/running": 0, "pods of the bench/succeeded": float64(pods)})
				return
			case "pods":
				checkPods(t, data)
				pods := float64(bench.PodsAt(0.01).PodCount())
				checkChart(t, out, map[string]float64{"pods of the bench/created (admitted)": pods,
					"pods of the bench/running": 0, "pods of the bench/succeeded": pods})
				return
			}
			s := bench.Scenarios[name](0.01)
			want := len(s.Plan())
			admitted := 0
			perClass := map[string]int{}
			for _, p := range s.Plan() {
				perClass[p.Class.Name]++
			}
			wantLast := map[string]float64{}
			for _, c := range r.Classes {
				admitted += c.Count
				wantLast[c.Name+"/admitted"] = float64(perClass[c.Name])
				if s.Held { // admitted and holding quota at the end
					wantLast[c.Name+"/running"] = float64(perClass[c.Name])
				} else {
					wantLast[c.Name+"/running"] = 0
					wantLast[c.Name+"/finished"] = float64(perClass[c.Name])
				}
			}
			if !s.Held { // nothing holds quota once all have finished
				wantLast["quota in use/% of all nominal cpu"] = 0
			}
			checkChart(t, out, wantLast)
			if r.Workloads != want || admitted != want {
				t.Errorf("%d workloads, %d admitted across classes %+v; want %d", r.Workloads, admitted, r.Classes, want)
			}
			if s.Held {
				if r.RawStatusWritesPerSecond <= 0 || r.AdmissionsPerSecond <= 0 {
					t.Errorf("raw writes %.1f/s, admissions %.1f/s; want both measured", r.RawStatusWritesPerSecond, r.AdmissionsPerSecond)
				}
			} else {
				if r.Finished != want {
					t.Errorf("%d finished, want %d", r.Finished, want)
				}
				if r.WallSeconds < r.LowerBoundSeconds || r.LowerBoundSeconds <= 0 {
					t.Errorf("wall %.2fs against a lower bound of %.2fs: the bound must be positive and not beaten", r.WallSeconds, r.LowerBoundSeconds)
				}
			}
			if _, err := os.Stat(filepath.Join(out, "summary.md")); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkCreates: every round created its Jobs, and only the queued ones
// went through berth's webhook (the test's other packages may call
// berth's webhooks meanwhile, so the plain rounds may see a few calls,
// never one per Job).
func checkCreates(t *testing.T, data []byte) {
	var r bench.CreateResults
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	want := bench.CreatesAt(0.01).Jobs
	if len(r.Rounds) != 4 {
		t.Fatalf("%d rounds, want 4: %+v", len(r.Rounds), r.Rounds)
	}
	for _, rd := range r.Rounds {
		if rd.Jobs != want || rd.PerSecond <= 0 {
			t.Errorf("round %q: %d Jobs at %.1f a second, want %d at a measured rate", rd.Name, rd.Jobs, rd.PerSecond, want)
		}
		if rd.Queued && rd.WebhookCalls < float64(want) {
			t.Errorf("round %q: %.0f webhook calls for %d queued Jobs", rd.Name, rd.WebhookCalls, want)
		}
		if !rd.Queued && rd.WebhookCalls >= float64(want) {
			t.Errorf("round %q: %.0f webhook calls for %d Jobs without a queue label", rd.Name, rd.WebhookCalls, want)
		}
	}
	if r.DryRunRatio <= 0 || r.StoredRatio <= 0 {
		t.Errorf("ratios %.2f (dry run) and %.2f (stored): want both measured", r.DryRunRatio, r.StoredRatio)
	}
}

// checkChart: the run drew its chart, and the chart's data ends where the
// run did: the last sample of each named series is the count it should be.
func checkChart(t *testing.T, dir string, wantLast map[string]float64) {
	f, err := os.Open(filepath.Join(dir, "chart.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("chart.png: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "chart.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatalf("chart.csv: %v", err)
	}
	last := map[string]float64{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[3], 64)
		if err != nil {
			t.Fatalf("chart.csv row %v: %v", r, err)
		}
		last[r[0]+"/"+r[1]] = v
	}
	for k, want := range wantLast {
		if got, ok := last[k]; !ok || got != want {
			t.Errorf("chart.csv: %s ends at %v (present %v), want %v", k, got, ok, want)
		}
	}
}

// checkSimScale: the simulator's own nodes became Ready and its pods ran and
// went, and the bench removed its nodes afterwards.
func checkSimScale(t *testing.T, data []byte) {
	var r bench.SimResults
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("results.json: %v\n%s", err, data)
	}
	want := bench.SimScaleAt(0.01)
	if r.Nodes != want.Nodes || r.Pods != want.Pods {
		t.Errorf("%d nodes, %d pods; want %d and %d", r.Nodes, r.Pods, want.Nodes, want.Pods)
	}
	if r.NodesReadySeconds <= 0 || r.PodsRunningSeconds <= 0 || r.PodsGoneSeconds <= 0 || r.SimPeakRSSMiB <= 0 {
		t.Errorf("steps %.2fs, %.2fs, %.2fs, peak RSS %.0f MiB: want each measured", r.NodesReadySeconds,
			r.PodsRunningSeconds, r.PodsGoneSeconds, r.SimPeakRSSMiB)
	}
	env := testenv.New(t)
	nodes, err := env.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "berth.dev/bench-sim=true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Errorf("%d of the bench's nodes left behind", len(nodes.Items))
	}
}

// checkE2EJobs: every Job's pods ran and succeeded, and each Job's start was
// measured.
// checkE2EJobs checks e2e-jobs' results (or e2e-jobsets', resource
// "jobsets"): every unit of want ran and succeeded.
func checkE2EJobs(t *testing.T, data []byte, want bench.E2EJobs, resource string) {
	var r bench.JobResults
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("results.json: %v\n%s", err, data)
	}
	if r.Jobs != want.Jobs || r.Started != want.Jobs || r.Succeeded != want.Jobs || r.Pods != want.Jobs*want.Parallelism {
		t.Errorf("%d units of %d pods in all, %d started, %d succeeded; want %d of each, of %d pods", r.Jobs, r.Pods, r.Started, r.Succeeded,
			want.Jobs, want.Parallelism)
	}
	if r.StartP50 <= 0 || r.StartMax < r.StartP99 || r.StartP99 < r.StartP50 || r.WallSeconds < r.LowerBoundSeconds {
		t.Errorf("start p50 %.2fs, p99 %.2fs, max %.2fs, wall %.2fs against bound %.2fs: inconsistent",
			r.StartP50, r.StartP99, r.StartMax, r.WallSeconds, r.LowerBoundSeconds)
	}
	// Each unit was created, and each of its pods bound, at least once.
	if r.APIWrites[resource] < float64(want.Jobs) || r.APIWrites["pods/binding"] < float64(r.Pods) {
		t.Errorf("API writes %v: want at least %d %s created and %d pods bound", r.APIWrites, want.Jobs, resource, r.Pods)
	}
}

func checkPods(t *testing.T, data []byte) {
	var r bench.PodResults
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("results.json: %v\n%s", err, data)
	}
	want := bench.PodsAt(0.01)
	if r.Singles != want.Singles || r.Groups != want.Groups || r.Pods != want.PodCount() || r.Succeeded != r.Pods {
		t.Errorf("%d single pods, %d groups, %d of %d pods succeeded; want %d, %d, all of %d",
			r.Singles, r.Groups, r.Succeeded, r.Pods, want.Singles, want.Groups, want.PodCount())
	}
	for kind, l := range map[string]bench.Latency{"single": r.SingleStart, "group": r.GroupStart} {
		if l.P50 <= 0 || l.Max < l.P99 || l.P99 < l.P50 {
			t.Errorf("%s start %+v: inconsistent", kind, l)
		}
	}
	if r.WallSeconds < r.LowerBoundSeconds {
		t.Errorf("wall %.2fs beats the bound %.2fs", r.WallSeconds, r.LowerBoundSeconds)
	}
	if r.APIWrites["pods"] < float64(r.Pods) || r.APIWrites["pods/binding"] < float64(r.Pods) {
		t.Errorf("API writes %v: want at least %d pods created and bound", r.APIWrites, r.Pods)
	}
}

func checkTAS(t *testing.T, data []byte) {
	var r bench.TASResults
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("results.json: %v\n%s", err, data)
	}
	want := bench.TASAt(0.01)
	if r.Jobs != want.Jobs || r.Pods != want.PodCount() || r.Succeeded != r.Pods {
		t.Errorf("%d Jobs, %d of %d pods succeeded; want %d Jobs, all %d pods", r.Jobs, r.Succeeded, r.Pods, want.Jobs, want.PodCount())
	}
	gangs := 0
	for size, spans := range r.RacksSpanned {
		for racks, n := range spans {
			gangs += n
			// Every gang fits a rack of 32 cpu, which is empty at the start.
			if racks != "1" {
				t.Errorf("%d gangs of %s pods spanned %s racks", n, size, racks)
			}
		}
		if l := r.Start[size]; l.P50 <= 0 || l.Max < l.P50 {
			t.Errorf("gangs of %s: start %+v", size, l)
		}
	}
	if gangs != r.Jobs {
		t.Errorf("racks spanned counted for %d gangs, want %d: %v", gangs, r.Jobs, r.RacksSpanned)
	}
}
