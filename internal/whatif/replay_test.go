package whatif_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/bench/plot"
	"github.com/berth-dev/berth/internal/whatif"
)

// config is one ClusterQueue of cpu quota for LocalQueue main of namespace
// team, with preemption within it as given.
func config(t *testing.T, name, cpu, preemption string) *whatif.Config {
	t.Helper()
	return parse(t, name, queueYAML(cpu, "preemption: {withinClusterQueue: "+preemption+"}"))
}

// queueYAML is one ClusterQueue of cpu quota, with spec as given beside
// it, and LocalQueue main of namespace team.
func queueYAML(cpu, spec string) string {
	return `
apiVersion: berth.dev/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  ` + spec + `
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "` + cpu + `"}]
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: team}
spec: {clusterQueue: cq}
`
}

func parse(t *testing.T, name, yaml string) *whatif.Config {
	t.Helper()
	cfg, err := whatif.ParseConfig(name, []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func wl(name string, arrival, run float64, cpu string, priority int32) whatif.Workload {
	return whatif.Workload{Name: name, Namespace: "team", LocalQueue: "main", Arrival: arrival, Run: run, Priority: priority,
		PodSets: []whatif.PodSet{{Name: "main", Count: 1, Requests: map[string]string{"cpu": cpu}}}}
}

var start = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

type want struct {
	admitted         bool
	wait             float64
	preempted        int
	finished         bool
	lastAdmittedAt   float64
	checkLastAdmitAt bool
}

func check(t *testing.T, r *whatif.Result, wants map[string]want) {
	t.Helper()
	for _, o := range r.Workloads {
		w, ok := wants[o.Key]
		if !ok {
			continue
		}
		if (o.Admitted != nil) != w.admitted || o.Wait != w.wait || o.Preempted != w.preempted || o.Finished != w.finished ||
			w.checkLastAdmitAt && (o.Admitted == nil || *o.Admitted != w.lastAdmittedAt) {
			t.Errorf("%s: %s: admitted at %v, wait %v, preempted %d, finished %v; want %+v", r.Config, o.Key, o.Admitted, o.Wait, o.Preempted, o.Finished, w)
		}
	}
}

// Worked by hand: 4 cpu hold one 4-cpu run of 10 s; two 2-cpu workloads
// that arrive meanwhile start together when it ends; an 8-cpu one never
// fits, and is still waiting when the last run ends. With 8 cpu everything
// but the 8-cpu one starts at once, and it starts when the first run ends.
func TestReplayWaitsForQuota(t *testing.T) {
	trace := []whatif.Workload{wl("w1", 0, 10, "4", 0), wl("w2", 1, 5, "2", 0), wl("w3", 2, 5, "2", 0), wl("w4", 3, 1, "8", 0)}
	small, err := whatif.Replay(config(t, "small", "4", "Never"), start, trace, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, small, map[string]want{
		"team/w1": {admitted: true, wait: 0, finished: true},
		"team/w2": {admitted: true, wait: 9, finished: true},
		"team/w3": {admitted: true, wait: 8, finished: true},
		"team/w4": {admitted: false, wait: 12, finished: false}, // to the last event, w2's and w3's end at 15
	})
	if small.End != 15 || small.Preemptions != 0 {
		t.Errorf("small: end %v, preemptions %d; want 15, 0", small.End, small.Preemptions)
	}

	big, err := whatif.Replay(config(t, "big", "8", "Never"), start, trace, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, big, map[string]want{
		"team/w1": {admitted: true, wait: 0, finished: true},
		"team/w2": {admitted: true, wait: 0, finished: true},
		"team/w3": {admitted: true, wait: 0, finished: true},
		"team/w4": {admitted: true, wait: 7, finished: true},
	})

	// Over time: at 5 s, w2, w3 and w4 wait; at 12 s, w4 alone.
	chart := whatif.Chart(small, big)
	waiting := chart.Panels[0].Series
	at := func(points []plot.Point, seconds float64) float64 {
		for _, p := range points {
			if math.Abs(p.X-seconds/3600) < 1e-9 {
				return p.Y
			}
		}
		return -1
	}
	if len(waiting) != 2 || at(waiting[0].Points, 5) != 3 || at(waiting[0].Points, 12) != 1 || at(waiting[1].Points, 5) != 1 {
		t.Errorf("waiting over time: %+v", waiting)
	}
	// Quota held: 4 of 4 cpu throughout with 4; with 8, all 8 at 5 s, w1's
	// 4 alone at 8 s, nothing once w4 (10 to 11 s) is done.
	if len(chart.Panels) != 3 || chart.Panels[2].Title != "quota held, % of the ClusterQueues' nominal cpu" {
		t.Fatalf("panels: %+v", chart.Panels)
	}
	held := chart.Panels[2].Series
	if at(held[0].Points, 5) != 100 || at(held[0].Points, 12) != 100 || at(held[1].Points, 5) != 100 ||
		at(held[1].Points, 8) != 50 || at(held[1].Points, 11) != 0 {
		t.Errorf("quota held over time: %+v", held)
	}

	c := whatif.Compare(small, big, 2)
	if len(c.Changed) != 2 || c.Changed[0].Key != "team/w2" || c.Changed[1].Key != "team/w3" {
		t.Errorf("most changed: %+v; want w2 (9 s less), then w3 (8 s less)", c.Changed)
	}
	var out strings.Builder
	if err := whatif.WriteComparison(&out, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "team/main") || !strings.Contains(out.String(), "3/4") {
		t.Errorf("comparison table:\n%s", out.String())
	}
}

// A high-priority arrival preempts the low one running under
// LowerPriority: it starts at once, and the low one, queued again, runs
// again in full once the high one ends.
func TestReplayPreempts(t *testing.T) {
	trace := []whatif.Workload{wl("low", 0, 10, "4", 0), wl("high", 2, 3, "4", 10)}
	r, err := whatif.Replay(config(t, "preempting", "4", "LowerPriority"), start, trace, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"team/low":  {admitted: true, wait: 0, preempted: 1, finished: true, lastAdmittedAt: 5, checkLastAdmitAt: true},
		"team/high": {admitted: true, wait: 0, finished: true, lastAdmittedAt: 2, checkLastAdmitAt: true},
	})
	if r.Preemptions != 1 || r.End != 15 {
		t.Errorf("preemptions %d, end %v; want 1, 15", r.Preemptions, r.End)
	}
	groups := whatif.Summarize(r)
	if g := groups[0]; g.By != "ClusterQueue" || g.Name != "cq" || g.Stats.Preempted != 1 || g.Stats.Admitted != 2 {
		t.Errorf("first group %+v; want ClusterQueue cq, 2 admitted, 1 preemption", g)
	}
}

// What a replay does not model is refused, naming the object and field;
// so is what is not a queue configuration.
func TestParseConfigRefuses(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"apiVersion: berth.dev/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\nspec: {topologyName: dc}\n",
			"ResourceFlavor f: spec.topologyName: Topology dc is not in the configuration"},
		{"apiVersion: berth.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec: {admissionChecks: [budget]}\n",
			"ClusterQueue q: spec.admissionChecks: admission checks are not replayed yet"},
		{"apiVersion: berth.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec: {budget: {resource: cpu, resourceHours: \"0\", window: CalendarMonth, whenSpent: Stop}}\n",
			"ClusterQueue q: spec.budget.resourceHours 0: must be positive"},
		{"apiVersion: berth.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: lq, namespace: t}\nspec: {clusterQueue: q, budget: {resource: cpu, resourceHours: \"5\", window: CalendarMonth, whenSpent: NoBorrowing}}\n",
			"LocalQueue t/lq: spec.budget.whenSpent NoBorrowing: a LocalQueue's budget can only stop it (Stop)"},
		{"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n", "Job j (batch/v1) is not part of a queue configuration"},
		{"apiVersion: berth.dev/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec: {cohortt: x}\n", `unknown field "spec.cohortt"`},
		{"apiVersion: berth.dev/v1beta1\nkind: LocalQueue\nmetadata: {name: lq}\nspec: {clusterQueue: q}\n", "LocalQueue lq: metadata.namespace: required"},
	} {
		if _, err := whatif.ParseConfig("plan.yaml", []byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.doc, err, tc.want)
		}
	}
}

// A trace reads back as written; a bad line is refused, naming it.
func TestTraceRoundTrip(t *testing.T) {
	trace := []whatif.Workload{wl("a", 0, 10, "4", 0), wl("b", 1.5, 2, "500m", 3)}
	var buf strings.Builder
	if err := whatif.WriteTrace(&buf, whatif.Header{Start: start, Source: "test"}, trace); err != nil {
		t.Fatal(err)
	}
	h, got, err := whatif.ReadTrace(strings.NewReader(buf.String()))
	if err != nil || !h.Start.Equal(start) || len(got) != 2 || got[1].Arrival != 1.5 || got[1].PodSets[0].Requests["cpu"] != "500m" {
		t.Fatalf("read back %+v %+v: %v", h, got, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"", "the trace is empty"},
		{`{"format":"other","version":1}`, `format "other" version 1`},
		{buf.String() + `{"name":"c","namespace":"team","localQueue":"main","arrival":1,"run":1,"podSets":[{"name":"p","count":1,"requests":{"cpu":"x"}}]}`,
			"line 4: workload team/c: podSets[0].requests[cpu]"},
		{buf.String() + `{"name":"a","namespace":"team","localQueue":"main","arrival":1,"run":1,"podSets":[{"name":"p","count":1}]}`,
			"line 4: workload team/a: already on line 2"},
		{buf.String() + `{"name":"d","namespace":"team","localQueue":"main","arrival":1,"run":1,"podSets":[{"name":"p","count":1}],"extra":1}`,
			`line 4: json: unknown field "extra"`},
	} {
		if _, _, err := whatif.ReadTrace(strings.NewReader(tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.text, err, tc.want)
		}
	}
}

// A ClusterQueue that orders by LocalQueue usage does in the replay too:
// the quiet team's one workload runs second, not after the busy team's
// whole burst as first come, first served would have it.
func TestReplayAdmissionFairSharing(t *testing.T) {
	for mode, at := range map[string]float64{"NoAdmissionFairSharing": 30, "UsageBasedAdmissionFairSharing": 10} {
		cfg := parse(t, mode, queueYAML("1", "admissionScope: {admissionMode: "+mode+"}")+`---
apiVersion: berth.dev/v1beta1
kind: LocalQueue
metadata: {name: quiet, namespace: team}
spec: {clusterQueue: cq}
`)
		q := wl("q1", 1, 10, "1", 0)
		q.LocalQueue = "quiet"
		trace := []whatif.Workload{wl("b1", 0, 10, "1", 0), wl("b2", 0.1, 10, "1", 0), wl("b3", 0.2, 10, "1", 0), q}
		r, err := whatif.Replay(cfg, start, trace, whatif.Options{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, r, map[string]want{"team/q1": {admitted: true, wait: at - 1, finished: true, lastAdmittedAt: at, checkLastAdmitAt: true}})
	}
}

// Worked by hand: a preempted workload is held back as the controller
// holds an evicted one (1 s after its first eviction), so the quota freed
// half a second after its preemption waits for it until then.
func TestAPreemptedWorkloadBacksOff(t *testing.T) {
	trace := []whatif.Workload{wl("low", 0, 10, "1", 0), wl("high", 1, 0.5, "1", 100)}
	r, err := whatif.Replay(config(t, "one", "1", "LowerPriority"), start, trace, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"team/high": {admitted: true, wait: 0, finished: true},
		"team/low":  {admitted: true, wait: 0, preempted: 1, finished: true, lastAdmittedAt: 2, checkLastAdmitAt: true},
	})
}

// What a ClusterQueue held is averaged over the replay, and what it held
// above its nominal quota counted as borrowed: 3 cpu for 10 s (1 of them
// borrowed from an idle queue of the cohort), then 1 cpu for 10 s, over 20
// s, is 2 cpu used and 0.5 borrowed; the idle queue used nothing.
func TestReplayAveragesTheQuotaHeld(t *testing.T) {
	yaml := strings.Replace(queueYAML("2", "cohort: co"), "---\napiVersion: v1\n", `---
apiVersion: berth.dev/v1beta1
kind: ClusterQueue
metadata: {name: idle}
spec:
  cohort: co
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "2"}]
---
apiVersion: v1
`, 1)
	r, err := whatif.Replay(parse(t, "cfg", yaml), start, []whatif.Workload{wl("big", 0, 10, "3", 0), wl("small", 10, 10, "1", 0)}, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []whatif.QuotaUse{
		{ClusterQueue: "cq", Flavor: "default", Resource: "cpu", Nominal: 2, Used: 2, Borrowed: 0.5},
		{ClusterQueue: "idle", Flavor: "default", Resource: "cpu", Nominal: 2},
	}
	if r.End != 20 || len(r.Quota) != len(want) {
		t.Fatalf("end %v, quota %+v", r.End, r.Quota)
	}
	for i, w := range want {
		if g := r.Quota[i]; g.ClusterQueue != w.ClusterQueue || g.Flavor != w.Flavor || g.Resource != w.Resource ||
			g.Nominal != w.Nominal || math.Abs(g.Used-w.Used) > 1e-9 || math.Abs(g.Borrowed-w.Borrowed) > 1e-9 {
			t.Errorf("quota %d: %+v, want %+v", i, g, w)
		}
	}
	var out strings.Builder
	if err := whatif.WriteSummary(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2 of 2 (100 %)") {
		t.Errorf("the summary does not say cq used 2 cpu, all its nominal quota:\n%s", out.String())
	}
}

// Worked by hand: a budget of 2 cpu-hours a rolling day, in hourly
// buckets. w1 (2 cpu for 2 h) starts at 0; w2 (1 cpu for 1 h) at 30 min;
// at 3 cpu the budget is spent at 50 min (1 cpu-hour then 1 more at 3 cpu
// in 20 min), so w3, arriving at 1 h with quota free, waits. Work running
// is charged on: 2.5 cpu-hours fall in the first hour's bucket, 2.5 in the
// second's, and the budget has room again only when the second leaves the
// window, at 2 h + 24 h. Without the budget, w3 starts at once.
func TestReplayChargesBudgets(t *testing.T) {
	trace := []whatif.Workload{wl("w1", 0, 7200, "2", 0), wl("w2", 1800, 3600, "1", 0), wl("w3", 3600, 60, "1", 0)}
	budgeted := parse(t, "budget", queueYAML("4", "budget: {resource: cpu, resourceHours: \"2\", window: Rolling, period: 24h, whenSpent: Stop}"))
	r, err := whatif.Replay(budgeted, start, trace, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"team/w1": {admitted: true, wait: 0, finished: true},
		"team/w2": {admitted: true, wait: 0, finished: true},
		"team/w3": {admitted: true, wait: 26*3600 - 3600, finished: true},
	})
	if len(r.Budgets) != 1 {
		t.Fatalf("budgets %+v; want the ClusterQueue's", r.Budgets)
	}
	b := r.Budgets[0]
	if b.Queue != "cq" || b.LocalQueue || b.FirstSpent == nil || math.Abs(*b.FirstSpent-3000) > 1e-3 || math.Abs(b.SpentFor-(26*3600-3000)) > 1e-3 {
		t.Errorf("budget %+v (first spent %v); want spent at 3000 s, for %d s", b, b.FirstSpent, 26*3600-3000)
	}
	var out strings.Builder
	if err := whatif.WriteSummary(&out, r); err != nil {
		t.Fatal(err)
	}
	if want := "ClusterQueue cq  2 cpu-hours per 24h0m0s (rolling)  25h10m0s"; !strings.Contains(out.String(), want) {
		t.Errorf("summary:\n%s\nwant a line with %q", out.String(), want)
	}
	free, err := whatif.Replay(config(t, "free", "4", "Never"), start, trace, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, free, map[string]want{"team/w3": {admitted: true, wait: 0, finished: true}})
	out.Reset()
	if err := whatif.WriteComparison(&out, whatif.Compare(r, free, 3)); err != nil {
		t.Fatal(err)
	}
	if want := "ClusterQueue cq  25h10m0s     -            50m0s             -"; !strings.Contains(out.String(), want) {
		t.Errorf("comparison:\n%s\nwant a line with %q", out.String(), want)
	}
}

// A LocalQueue's budget stops it alone: 1 cpu-hour a rolling day, spent by
// w1 in its first hour; w2 waits until w1's second hour leaves the window
// (2 h + 24 h), while the ClusterQueue has quota free all along.
func TestReplayChargesLocalQueueBudgets(t *testing.T) {
	yaml := strings.Replace(queueYAML("4", ""), "spec: {clusterQueue: cq}",
		`spec: {clusterQueue: cq, budget: {resource: cpu, resourceHours: "1", window: Rolling, period: 24h, whenSpent: Stop}}`, 1)
	r, err := whatif.Replay(parse(t, "lq-budget", yaml), start, []whatif.Workload{wl("w1", 0, 7200, "1", 0), wl("w2", 5400, 60, "1", 0)}, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{"team/w2": {admitted: true, wait: 26*3600 - 5400, finished: true}})
	if len(r.Budgets) != 1 || r.Budgets[0].Queue != "team/main" || !r.Budgets[0].LocalQueue {
		t.Errorf("budgets %+v; want LocalQueue team/main's", r.Budgets)
	}
}
