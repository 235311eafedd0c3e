package bench

import (
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	s := Scenario{Name: "tiny", Cohorts: 1, QueuesPerCohort: 2, NominalCPU: 5, Classes: []Class{
		{Name: "small", CPU: 1, Runtime: time.Second},
		{Name: "large", CPU: 10, Runtime: 2 * time.Second},
	}}
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	records := []Record{
		{Name: "s1", Class: "small", Created: sec(1), Admitted: sec(1.5), Finished: sec(2.5), WasAdmitted: true, WasFinished: true},
		{Name: "s2", Class: "small", Created: sec(1), Admitted: sec(3.5), Finished: sec(4.5), WasAdmitted: true, WasFinished: true, Evictions: 1},
		{Name: "l1", Class: "large", Created: sec(2), Admitted: sec(2), Finished: sec(5), WasAdmitted: true, WasFinished: true},
		{Name: "never", Class: "large", Created: sec(3)},
	}
	r := Summarize(&s, 0.5, records, 2*time.Second)
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	if r.Workloads != 4 || r.Finished != 3 || r.Evictions != 1 {
		t.Errorf("workloads %d, finished %d, evictions %d; want 4, 3, 1", r.Workloads, r.Finished, r.Evictions)
	}
	near("wall (first arrival 1s to last finish 5s)", r.WallSeconds, 4)
	near("wall over bound", r.WallOverBound, 2)
	// 1+1+20 cpu-s run, on 10 cpu for 4s.
	near("utilisation", r.QuotaUtilisation, 22.0/40)
	if len(r.Classes) != 2 || r.Classes[0].Name != "small" || r.Classes[1].Name != "large" {
		t.Fatalf("classes %+v, want small then large", r.Classes)
	}
	near("small average wait", r.Classes[0].AvgTimeToAdmissionSeconds, (0.5+2.5)/2)
	near("small longest wait", r.Classes[0].MaxTimeToAdmissionSeconds, 2.5)
	if r.Classes[1].Count != 1 {
		t.Errorf("large admitted %d, want 1 (one never was)", r.Classes[1].Count)
	}
	near("large average wait", r.Classes[1].AvgTimeToAdmissionSeconds, 0)
	// s1 held 1s for a 1s runtime; s2 was evicted and does not count; l1
	// held 3s for 2s.
	near("small held past its runtime", r.Classes[0].AvgHeldPastRuntimeSeconds, 0)
	near("large held past its runtime", r.Classes[1].AvgHeldPastRuntimeSeconds, 1)
	if r.Classes[0].Planned != 2 || r.Classes[1].Planned != 2 {
		t.Errorf("planned %d and %d, want 2 of each", r.Classes[0].Planned, r.Classes[1].Planned)
	}

	rss, anon := 300.0, 160.0
	r.ControllerPeakRSSMiB, r.ControllerPeakAnonMiB = &rss, &anon
	md := Markdown(r)
	for _, want := range []string{"| workloads finished | 3 of 4 |", "| wall time / lower bound | 2.00 |", "| small | 2 | 1.50 s | 2.50 s | 0.00 s |",
		"| berth controller peak RSS | 300 MiB |", "| berth controller peak private memory | 160 MiB |",
		"| quota idle, waiting work would fit | "} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}

// The chart's last panel is the share of all nominal cpu that the running
// workloads hold.
func TestQuotaInUse(t *testing.T) {
	s := Scenario{Cohorts: 1, QueuesPerCohort: 2, NominalCPU: 10, Classes: []Class{{Name: "small", CPU: 1}, {Name: "large", CPU: 5}}}
	// admitted, running, finished of each class
	got := withQuotaInUse(&s, []float64{9, 5, 4, 3, 2, 1})
	if want := 100 * (5*1 + 2*5) / 20.0; got[len(got)-1] != want || len(got) != 7 {
		t.Errorf("quota in use %v, want %v%% last", got, want)
	}
}

func TestMarkdownForThroughput(t *testing.T) {
	md := Markdown(Results{Scenario: "throughput", Workloads: 2, AdmissionsPerSecond: 180, RawStatusWritesPerSecond: 200,
		AdmissionsOverRawWrites: 0.9, Classes: []ClassResult{{Name: "tiny", Count: 2}}})
	for _, want := range []string{"| workloads admitted | 2 of 2 |", "| admissions / raw writes | 0.90 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "lower bound") {
		t.Errorf("throughput summary shows a lower bound it does not have:\n%s", md)
	}
}

func TestSimScale(t *testing.T) {
	if got := SimScaleAt(1); got.Nodes != 5000 || got.Pods != 10000 {
		t.Errorf("sim-scale at 1: %+v, want 5,000 nodes and 10,000 pods", got)
	}
	if got := SimScaleAt(0.0001); got.Nodes != 1 || got.Pods != 1 {
		t.Errorf("sim-scale at 0.0001: %+v, want at least one node and one pod", got)
	}
	cpu := 12.5
	md := SimMarkdown(SimResults{Nodes: 50, Pods: 100, NodesReadySeconds: 1.25, PodsRunningSeconds: 2, PodsGoneSeconds: 3,
		SimPeakRSSMiB: 150, APIServerCPUSeconds: &cpu})
	for _, want := range []string{"| 50 nodes Ready | 1.2 |", "| 100 pods gone | 3.0 |", "| peak RSS | 150 MiB |", "| kube-apiserver CPU | 12.5 s |"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}

func TestPercentile(t *testing.T) {
	values := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{50: 5, 90: 9, 99: 10, 100: 10, 1: 1} {
		if got := Percentile(values, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestE2EJobs(t *testing.T) {
	e := E2EJobsAt(1)
	if e.Jobs != 2000 || e.Parallelism != 2 {
		t.Errorf("e2e-jobs at 1: %+v, want 2,000 Jobs of 2 pods", e)
	}
	// 4,000 pods of 1 cpu for 2s on 100 cpu.
	if got := e.LowerBound(); got != 80*time.Second {
		t.Errorf("lower bound %v, want 80s", got)
	}
	// Fewer pods than quota: one run of the duration.
	if got := (E2EJobs{Jobs: 2, Parallelism: 2, QuotaCPU: 100, Duration: 2 * time.Second}).LowerBound(); got != 2*time.Second {
		t.Errorf("lower bound %v, want the 2s duration", got)
	}
	md := JobMarkdown(JobResults{Jobs: 4, Pods: 8, Succeeded: 4, StartP50: 1.5, StartP90: 2, StartP99: 2.5, StartMax: 3})
	if want := "| creation to all pods Running: p50 / p90 / p99 / max | 1.50 / 2.00 / 2.50 / 3.00 s |"; !strings.Contains(md, want) {
		t.Errorf("summary lacks %q:\n%s", want, md)
	}
}

func TestPods(t *testing.T) {
	p := PodsAt(1)
	if p.Singles != 5000 || p.Groups != 500 || p.GroupSize != 8 || p.PodCount() != 9000 {
		t.Errorf("pods at 1: %+v, want 5,000 Pods and 500 groups of 8", p)
	}
	// 9,000 pods of 1 cpu for 2s on 100 cpu.
	if got := p.LowerBound(); got != 180*time.Second {
		t.Errorf("lower bound %v, want 180s", got)
	}
	// The groups are spread among the single Pods: one after each 10.
	units := Pods{Singles: 20, Groups: 2, GroupSize: 8}.units()
	var groupsAt []int
	for i, u := range units {
		if u.Pods > 1 {
			groupsAt = append(groupsAt, i)
		}
	}
	if len(units) != 22 || !slices.Equal(groupsAt, []int{0, 11}) {
		t.Errorf("%d units, groups at %v; want 22, groups at 0 and 11", len(units), groupsAt)
	}
	md := PodMarkdown(PodResults{Pods: 18, Succeeded: 18, Singles: 10, Groups: 1, GroupSize: 8,
		GroupStart: Latency{P50: 1, P90: 2, P99: 3, Max: 4}, SimCosts: SimCosts{APIWrites: map[string]float64{"pods": 36, "pods/binding": 18, "leases": 0.5}}})
	for _, want := range []string{
		"| group, first Pod's creation to all Running: p50 / p90 / p99 / max | 1.00 / 2.00 / 3.00 / 4.00 s |",
		"| API writes per pod (by anyone; by resource) | 3.03 (pods 2.00, pods/binding 1.00) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
}

func TestParseWrites(t *testing.T) {
	text := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PUT",version="v1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 99
apiserver_request_total{code="200",component="apiserver",dry_run="",group="berth.dev",resource="workloads",scope="resource",subresource="status",verb="PATCH",version="v1beta1"} 7.5e+00
apiserver_request_duration_seconds_count{resource="pods",verb="POST"} 1000
`
	got := parseWrites(text)
	want := map[string]float64{"pods": 15, "pods/binding": 12, "workloads/status": 7.5}
	if !maps.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if l := parseLabels(`a="x\"y",b=""`); l["a"] != `x"y` || l["b"] != "" {
		t.Errorf("labels %v", l)
	}
}

// The writes of an audit log are counted by client, verb, resource and
// class; refused ones are told apart, and a line cut short by a crash is
// skipped rather than failing the count.
func TestCountWrites(t *testing.T) {
	f, err := os.Open("testdata/writes.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := countWrites(f, classByName([]string{"small", "medium", "large"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []WriteCount{
		{Client: "berth-controller", Verb: "patch", Resource: "workloads/status", Class: "small", Count: 2},
		{Client: "berth-admin", Verb: "create", Resource: "workloads", Class: "small", Count: 1},
		{Client: "berth-controller", Verb: "create", Resource: "events", Class: "small", Count: 1},
		{Client: "berth-controller", Verb: "patch", Resource: "clusterqueues/status", Count: 1},
		{Client: "berth-controller", Verb: "patch", Resource: "workloads/status", Class: "large", Count: 1, Failed: 1},
		{Client: "kube-controller-manager/job-controller", Verb: "update", Resource: "jobs/status", Class: "small", Count: 1},
		{Client: "kube-scheduler", Verb: "create", Resource: "pods/binding", Class: "small", Count: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("countWrites:\n got %+v\nwant %+v", got, want)
	}
}

func TestClassByName(t *testing.T) {
	classOf := classByName([]string{"small", "large"})
	for name, want := range map[string]string{
		"small-q0-1":                  "small",
		"small-q12-340.18b2a3c4d5e6f": "small", // its event
		"job-large-q3-4-8f2k1":        "large", // a Job's Workload
		"large-q3-4-x7k2p":            "large", // a Job's pod
		"bench-0":                     "",
		"notsmall-q0-1":               "",
	} {
		if got := classOf(name); got != want {
			t.Errorf("classOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// The quota-time of a run of two cohorts of 10 cpu from 0 to 6 s: every
// interval between events worked out by hand.
func TestQuotaTime(t *testing.T) {
	s := Scenario{Cohorts: 2, QueuesPerCohort: 2, NominalCPU: 5, Classes: []Class{
		{Name: "small", CPU: 1, Runtime: time.Second},
		{Name: "mid", CPU: 6, Runtime: time.Second},
		{Name: "large", CPU: 10, Runtime: 2 * time.Second},
	}}
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	records := []Record{
		// Holds all 10 cpu from 0 to 3 s: 1 s past its runtime.
		{Name: "L", Class: "large", Created: 0, Admitted: 0, Finished: sec(3), WasAdmitted: true, WasFinished: true},
		// Waits 1 to 3 s with no room at all, then runs.
		{Name: "M", Class: "mid", Created: sec(1), Admitted: sec(3), Finished: sec(4), WasAdmitted: true, WasFinished: true},
		// Waits 3.2 to 5 s: too large for the 4 cpu left until 4 s, then
		// it would fit in 9 and is not admitted yet.
		{Name: "B", Class: "mid", Created: sec(3.2), Admitted: sec(5), Finished: sec(6), WasAdmitted: true, WasFinished: true},
		// Waits 3.5 to 4 s though it would fit in the 4 cpu left.
		{Name: "S", Class: "small", Created: sec(3.5), Admitted: sec(4), Finished: sec(5), WasAdmitted: true, WasFinished: true},
		// In the second cohort, alone: holds 6 cpu from 0 to 2 s, when it
		// is evicted, waits (it would fit) until 4 s and runs again to 6 s.
		{Name: "E", Class: "mid", Cohort: 1, Created: 0, Admitted: 0, Released: []time.Duration{sec(2)},
			Readmitted: []time.Duration{sec(4)}, Finished: sec(6), WasAdmitted: true, WasFinished: true, Evictions: 1},
		// Another cohort's: not counted.
		{Name: "X", Class: "small", Cohort: 3, Created: 0, Admitted: sec(1), Finished: sec(2), WasAdmitted: true, WasFinished: true},
	}
	got := quotaTime(&s, records, 0, sec(6))
	// Out of 120 cpu-seconds. The first cohort: run 20+6+6+1; held past:
	// 10 (L); waiting work would fit: S's 1 cpu for 0.5 s, B's 6 for 1 s;
	// too large: B for the 4 cpu left from 3.2 to 3.5 s, 3 of them from
	// 3.5 to 4 s; nothing (more) waiting: 4 cpu from 3 to 3.2 s, the 3
	// besides B from 4 to 5 s, 4 from 5 to 6 s. The second: E's first
	// admission, 12 preempted; run 6 and 6 past its runtime; nothing
	// waiting 4 cpu for 6 s; E would fit from 2 to 4 s.
	want := QuotaTime{Run: 39.0 / 120, HeldPastRuntime: 16.0 / 120, Preempted: 12.0 / 120,
		IdleNothingWaiting: 31.8 / 120, IdleWaitingFits: 18.5 / 120, IdleWaitingTooBig: 2.7 / 120}
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"run", got.Run, want.Run}, {"held past the runtime", got.HeldPastRuntime, want.HeldPastRuntime},
		{"preempted", got.Preempted, want.Preempted},
		{"idle, nothing waiting", got.IdleNothingWaiting, want.IdleNothingWaiting},
		{"idle, waiting work would fit", got.IdleWaitingFits, want.IdleWaitingFits},
		{"idle, waiting work too large", got.IdleWaitingTooBig, want.IdleWaitingTooBig}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s: %.4f of the quota-time, want %.4f", c.what, c.got, c.want)
		}
	}
	if sum := got.Run + got.HeldPastRuntime + got.Preempted + got.IdleNothingWaiting + got.IdleWaitingFits + got.IdleWaitingTooBig; math.Abs(sum-1) > 1e-9 {
		t.Errorf("the shares add up to %v, want 1", sum)
	}
}
