package why_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/budget"
	"github.com/berth-dev/berth/internal/controller/queues"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/why"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// using gives w quota: cpu in flavor rf of ClusterQueue cq.
func using(w *berthv1.Workload, cq, cpu string) berthv1.Workload {
	workload.SetAdmitted(w, &berthv1.Admission{ClusterQueue: cq, PodSetAssignments: []berthv1.PodSetAssignment{{
		Name: "main", Count: 1, Flavors: map[corev1.ResourceName]string{"cpu": "rf"},
		ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse(cpu)}}}}, nil, now)
	return *w
}

func created(w *berthv1.Workload, ago time.Duration) *berthv1.Workload {
	w.CreationTimestamp = metav1.NewTime(now.Add(-ago))
	return w
}

// One ClusterQueue of 4 cpu: 3 held by a low-priority workload; "first"
// (priority 10, older) and "me" (priority 5) each need 2 cpu.
func input(preemption bool, myPriority int32) why.Input {
	cq := MakeClusterQueue("cq").Guarded().ResourceGroup(MakeFlavorQuotas("rf").Resource("cpu", "4").Obj()).Obj()
	if preemption {
		cq.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: berthv1.PreemptionLowerPriority}
	}
	me := created(MakeWorkload("me", "ns").Queue("main").Priority(myPriority).Request("cpu", "2").Obj(), time.Minute)
	return why.Input{
		Workload:      me,
		LocalQueues:   []berthv1.LocalQueue{*MakeLocalQueue("main", "ns", "cq").Obj()},
		ClusterQueues: []berthv1.ClusterQueue{*cq},
		Flavors:       []berthv1.ResourceFlavor{*MakeResourceFlavor("rf").Guarded().Obj()},
		Workloads: []berthv1.Workload{
			using(created(MakeWorkload("running", "ns").Queue("main").Priority(1).Request("cpu", "3").Obj(), time.Hour), "cq", "3"),
			*created(MakeWorkload("first", "ns").Queue("main").Priority(10).Request("cpu", "2").Obj(), 2*time.Minute),
			*me,
		},
		NamespaceLabel: map[string]labels.Set{"ns": {"kubernetes.io/metadata.name": "ns"}},
		Now:            now,
	}
}

func TestExplainAWaitingWorkload(t *testing.T) {
	r := why.Explain(input(false, 5))
	if r.State != "Pending" || r.ClusterQueue != "cq" || r.Position != 2 || r.Waiting != 2 ||
		!slices.Equal(r.Ahead, []string{"ns/first (priority 10)"}) {
		t.Errorf("%+v", r)
	}
	if !strings.HasPrefix(r.Now, "it waits: ") || !strings.Contains(r.Now, "1 free") || len(r.Victims) != 0 {
		t.Errorf("now: %q, victims %v", r.Now, r.Victims)
	}
	if len(r.Room) != 1 || r.Room[0].Used != "3" || r.Room[0].Nominal != "4" || r.Room[0].Available != "1" {
		t.Errorf("room %+v", r.Room)
	}
	out := why.Render(r)
	for _, want := range []string{"position:  2 of 2 waiting in ClusterQueue cq", "ahead:   ns/first (priority 10)",
		"quota:     rf/cpu: 3 used of 4, 1 available now", "needs:     main: 1 pod of 2 cpu"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// With preemption on, a higher-priority workload is told whom it evicts.
func TestExplainPreemption(t *testing.T) {
	r := why.Explain(input(true, 100))
	if r.Position != 1 || len(r.Victims) != 1 || !strings.HasPrefix(r.Victims[0], "ns/running in ClusterQueue cq (InClusterQueue)") {
		t.Errorf("%+v", r)
	}
}

// A workload whose LocalQueue does not exist is told so, and nothing more
// is guessed.
func TestExplainMissingLocalQueue(t *testing.T) {
	in := input(false, 5)
	in.LocalQueues = nil
	r := why.Explain(in)
	if len(r.Notes) != 1 || r.Notes[0] != "LocalQueue ns/main does not exist: the workload waits for it" || r.Now != "" {
		t.Errorf("%+v", r)
	}
}

// A workload that holds quota and waits for a check says which.
func TestExplainWaitingForChecks(t *testing.T) {
	in := input(false, 5)
	in.Workload = MakeWorkload("me", "ns").Queue("main").Request("cpu", "2").Reserved("cq", "budget").Obj()
	r := why.Explain(in)
	if r.State != "WaitingForChecks" || !slices.Equal(r.Checks, []string{"budget: Pending"}) || r.Now != "" {
		t.Errorf("%+v", r)
	}
}

// A workload dispatched to a worker cluster says which.
func TestExplainDispatched(t *testing.T) {
	in := input(false, 5)
	in.Workload = MakeWorkload("me", "ns").Queue("main").Request("cpu", "2").Reserved("cq", "mc").
		Check("mc", berthv1.CheckReady, "admitted on worker cluster east").RunsOn("east").Obj()
	r := why.Explain(in)
	if r.RunsOn != "east" || !strings.Contains(why.Render(r), "runs on:   worker cluster east") ||
		!slices.Equal(r.Checks, []string{"mc: Ready (admitted on worker cluster east)"}) {
		t.Errorf("%+v\n%s", r, why.Render(r))
	}
}

// Its pods' readiness (--wait-for-pods-ready) is shown: Ready, or why it
// cost the workload its admission.
func TestExplainPodsReady(t *testing.T) {
	in := input(false, 5)
	in.Workload = MakeWorkload("me", "ns").Queue("main").Request("cpu", "2").Reserved("cq").Obj()
	workload.SetPodsReady(in.Workload, "1 of 1 pods Ready or succeeded", now)
	if r := why.Explain(in); !strings.Contains(why.Render(r), "pods:      1 of 1 pods Ready or succeeded") {
		t.Errorf("Ready:\n%s", why.Render(r))
	}
	workload.SetPodsNotReady(in.Workload, workload.PodsReadyTimeout, "its pods were not all Ready within 5m0s", now)
	if r := why.Explain(in); !strings.Contains(why.Render(r), "pods:      not Ready: its pods were not all Ready within 5m0s") {
		t.Errorf("timed out:\n%s", why.Render(r))
	}
}

// A queue blocked until the pods of what it admitted are Ready
// (--pods-ready-block-admission) is named, though quota would fit; a
// workload admitted with fewer pods says so.
func TestExplainBlockedAndPartial(t *testing.T) {
	in := input(false, 5)
	in.Workloads = in.Workloads[:1] // only "running": "me" fits
	msg := "ClusterQueue cq admits nothing until the pods of the 1 workload(s) it admitted are all Ready"
	workload.SetPending(in.Workload, string(core.WaitingForPodsReady), msg, now)
	if r := why.Explain(in); r.Now != "it waits: "+msg {
		t.Errorf("blocked: right now %q", r.Now)
	}
	in.Workload = MakeWorkload("me", "ns").Queue("main").Count(4).Request("cpu", "1").Obj()
	workload.SetAdmitted(in.Workload, &berthv1.Admission{ClusterQueue: "cq", PodSetAssignments: []berthv1.PodSetAssignment{{
		Name: "main", Count: 1, Flavors: map[corev1.ResourceName]string{"cpu": "rf"},
		ResourceUsage: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}, nil, now)
	if r := why.Explain(in); !slices.Contains(r.Notes, "pod set main was admitted with 1 of its 4 pods (partial admission)") {
		t.Errorf("partial: notes %q", r.Notes)
	}
	in.Workload.Spec.Priority = ptrTo(int32(100))
	in.Workload.Status.Admission.Priority = ptrTo(int32(-5))
	if r := why.Explain(in); !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.HasPrefix(n, "admitted at priority -5, not its own 100: its ClusterQueue's budget was spent")
	}) {
		t.Errorf("lowered by a budget: notes %q", r.Notes)
	}
}

// A stopped ClusterQueue is named as the blocker.
func TestExplainStoppedQueue(t *testing.T) {
	in := input(false, 100)
	in.ClusterQueues[0].Spec.StopPolicy = berthv1.Hold
	r := why.Explain(in)
	if !strings.Contains(r.Now, "ClusterQueue cq is inactive: stopped by its stopPolicy") {
		t.Errorf("now: %q", r.Now)
	}
}

// berth why and the controller's own line (which berth pending shows) put a
// workload in the same place, aging included: an old low-priority workload
// aged past a newer higher-priority one is ahead of it in both.
func TestWhyAndTheQueueAgreeOnPositions(t *testing.T) {
	cq := MakeClusterQueue("cq").Guarded().ResourceGroup(MakeFlavorQuotas("rf").Resource("cpu", "1").Obj()).Obj()
	cq.Spec.PriorityAging = &berthv1.PriorityAging{Step: 1, Interval: metav1.Duration{Duration: time.Minute}, Cap: 5}
	pending := []*berthv1.Workload{
		created(MakeWorkload("old-low", "ns").Queue("main").Priority(0).Request("cpu", "2").Obj(), 3*time.Minute),
		created(MakeWorkload("new-high", "ns").Queue("main").Priority(2).Request("cpu", "2").Obj(), time.Minute),
		created(MakeWorkload("newest", "ns").Queue("main").Priority(1).Request("cpu", "2").Obj(), 0),
	}
	in := why.Input{
		LocalQueues:    []berthv1.LocalQueue{*MakeLocalQueue("main", "ns", "cq").Obj()},
		ClusterQueues:  []berthv1.ClusterQueue{*cq},
		Flavors:        []berthv1.ResourceFlavor{*MakeResourceFlavor("rf").Guarded().Obj()},
		NamespaceLabel: map[string]labels.Set{"ns": {"kubernetes.io/metadata.name": "ns"}},
		Now:            now,
	}
	m := queue.NewManager(clocktesting.NewFakePassiveClock(now))
	m.SetClusterQueue("cq", core.BestEffortFIFO, queues.ClusterQueueOf(cq).Aging)
	m.SetLocalQueue(queue.LocalQueue{Key: "ns/main", ClusterQueue: "cq"})
	for _, w := range pending {
		in.Workloads = append(in.Workloads, *w)
		m.AddOrUpdate(workload.ToCore(w, nil), "ns/main")
	}
	line, _ := m.Line("cq")
	queue.SortLine(line)
	if line[0].Key != "ns/old-low" {
		t.Fatalf("the queue's line %v: want old-low first, aged past new-high", line)
	}
	for i, w := range line {
		in.Workload = pending[slices.IndexFunc(pending, func(p *berthv1.Workload) bool { return workload.Key(p) == w.Key })]
		if r := why.Explain(in); r.Position != i+1 {
			t.Errorf("%s: berth why says position %d, the queue %d", w.Key, r.Position, i+1)
		}
	}
}

// A workload with a run-time limit says how much it used, and while it
// runs when it will be stopped; its ClusterQueue's maximum caps its own.
func TestExplainRunTime(t *testing.T) {
	in := input(false, 5)
	in.ClusterQueues[0].Spec.RunTime = &berthv1.RunTimePolicy{MaximumSeconds: ptrTo(int32(3600))}
	w := MakeWorkload("me", "ns").Queue("main").Request("cpu", "2").MaxRunTime(7200).Obj()
	using(w, "cq", "2") // admitted at now
	in.Workload = w
	in.Now = now.Add(20 * time.Minute)
	r := why.Explain(in)
	if want := "run time:  ran 20m0s of its maximum 1h0m0s; stopped in 40m0s unless it ends first"; !strings.Contains(why.Render(r), want) {
		t.Errorf("want %q in:\n%s", want, why.Render(r))
	}
	in.Workload = MakeWorkload("me", "ns").Queue("main").Request("cpu", "2").Obj()
	if r := why.Explain(in); r.RunTime != "ran 0s of its maximum 1h0m0s" {
		t.Errorf("waiting, the ClusterQueue's maximum its own: %q", r.RunTime)
	}
	in.ClusterQueues[0].Spec.RunTime = nil
	if r := why.Explain(in); r.RunTime != "" {
		t.Errorf("without a limit: %q, want nothing said", r.RunTime)
	}
}

func ptrTo[T any](v T) *T { return &v }

// In a ClusterQueue that orders by LocalQueue usage, berth why counts
// positions as the queue does, from the usage the LocalQueues' status
// says, and says why a newer workload of a quieter queue is ahead.
func TestWhyAndTheQueueAgreeUnderAdmissionFairSharing(t *testing.T) {
	cq := MakeClusterQueue("cq").Guarded().AdmissionFairSharing().ResourceGroup(MakeFlavorQuotas("rf").Resource("cpu", "1").Obj()).Obj()
	busy, quiet := MakeLocalQueue("busy", "ns", "cq").Obj(), MakeLocalQueue("quiet", "ns", "cq").Weight("2").Obj()
	five := resource.MustParse("5")
	busy.Status.FairSharing = &berthv1.LocalQueueFairSharingStatus{AdmissionFairSharingStatus: &berthv1.AdmissionFairSharingStatus{
		ConsumedResources: corev1.ResourceList{"cpu": five}, LastUpdate: metav1.NewTime(now), WeightedUsage: &five}}
	older := created(MakeWorkload("older", "ns").Queue("busy").Request("cpu", "2").Obj(), time.Minute)
	newer := created(MakeWorkload("newer", "ns").Queue("quiet").Request("cpu", "2").Obj(), 0)
	in := why.Input{
		LocalQueues:    []berthv1.LocalQueue{*busy, *quiet},
		ClusterQueues:  []berthv1.ClusterQueue{*cq},
		Flavors:        []berthv1.ResourceFlavor{*MakeResourceFlavor("rf").Guarded().Obj()},
		NamespaceLabel: map[string]labels.Set{"ns": {"kubernetes.io/metadata.name": "ns"}},
		Workloads:      []berthv1.Workload{*older, *newer},
		Now:            now,
	}
	m := queue.NewManager(clocktesting.NewFakePassiveClock(now))
	m.SetClusterQueue("cq", core.BestEffortFIFO, nil)
	m.SetFair("cq", true)
	m.SetLocalQueue(queue.LocalQueue{Key: "ns/busy", ClusterQueue: "cq"})
	m.SetLocalQueue(queue.LocalQueue{Key: "ns/quiet", ClusterQueue: "cq"})
	m.SetScore("ns/busy", queues.ScoreOf(busy))
	m.SetScore("ns/quiet", queues.ScoreOf(quiet))
	m.AddOrUpdate(workload.ToCore(older, nil), "ns/busy")
	m.AddOrUpdate(workload.ToCore(newer, nil), "ns/quiet")
	line, _ := m.Line("cq")
	queue.SortLine(line)
	if line[0].Key != "ns/newer" {
		t.Fatalf("the queue's line %v: want the quiet queue's newer first", line)
	}
	in.Workload = older
	r := why.Explain(in)
	if r.Position != 2 {
		t.Errorf("berth why puts the busy queue's older workload at %d; the queue at 2", r.Position)
	}
	for _, want := range []string{"ns/newer (LocalQueue ns/quiet, usage 0; priority 0)",
		"ClusterQueue cq admits the LocalQueues that used least lately first (admission fair sharing); ns/busy has usage 5 (weight 1)"} {
		if !strings.Contains(why.Render(r), want) {
			t.Errorf("want %q in:\n%s", want, why.Render(r))
		}
	}
}

// A workload of a ClusterQueue whose budget is spent waits for it, and
// berth why says how much was spent and when how much is free again.
func TestExplainSpentBudget(t *testing.T) {
	in := input(false, 5)
	cq := &in.ClusterQueues[0]
	cq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("2"), Window: berthv1.RollingBudget,
		Period: &metav1.Duration{Duration: time.Hour}, WhenSpent: berthv1.StopAdmitting}
	spec, _ := queues.BudgetOf(cq.Spec.Budget)
	l := spec.Charge(budget.Ledger{}, 3, now.Add(-time.Hour))
	l = spec.Charge(l, 3, now)
	var cond metav1.Condition
	cq.Status.Budget, cond = queues.BudgetStatusOf(*spec, l, cq.Generation, now)
	meta.SetStatusCondition(&cq.Status.Conditions, cond)
	in.Workloads = in.Workloads[1:] // nothing else holds quota: it would fit
	out := why.Render(why.Explain(in))
	for _, want := range []string{"its budget of 2 cpu-hours per 1h0m0s (rolling) is spent: it admits nothing until",
		"budget of ClusterQueue cq: 3.000 spent of 2 cpu-hours per 1h0m0s (rolling); 0.125 cpu-hours free again at 2026-11-23T12:22:30Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
}

// A workload of a LocalQueue whose budget is spent waits for it, as the
// LocalQueue's status says, though its ClusterQueue has room.
func TestExplainSpentLocalQueueBudget(t *testing.T) {
	in := input(false, 5)
	lq := &in.LocalQueues[0]
	lq.Spec.Budget = &berthv1.Budget{Resource: "cpu", ResourceHours: resource.MustParse("1"), Window: berthv1.CalendarMonthBudget,
		WhenSpent: berthv1.StopAdmitting}
	spec, _ := queues.BudgetOf(lq.Spec.Budget)
	l := spec.Charge(budget.Ledger{}, 2, now.Add(-time.Hour))
	l = spec.Charge(l, 2, now)
	var cond metav1.Condition
	lq.Status.Budget, cond = queues.BudgetStatusOf(*spec, l, lq.Generation, now)
	meta.SetStatusCondition(&lq.Status.Conditions, cond)
	in.Workloads = in.Workloads[1:]
	out := why.Render(why.Explain(in))
	for _, want := range []string{"right now: it waits: LocalQueue ns/main: its budget of 1 cpu-hours per calendar month (UTC) is spent: it admits nothing until",
		"budget of LocalQueue ns/main: 2.000 spent of 1 cpu-hours per calendar month (UTC)"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
}
