package queue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

func keys(ws []*core.Workload) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Key)
	}
	return out
}

// setup returns a manager with ClusterQueue cq (strategy s) and LocalQueue default/lq pointing at it.
func setup(s core.QueueingStrategy) *Manager {
	m := NewManager(clock.RealClock{})
	m.SetClusterQueue("cq", s, nil)
	m.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq"})
	return m
}

func noFit(w *core.Workload) core.Decision {
	return core.Decision{Workload: w, Pending: &core.Pending{Reason: core.NoFit, Message: "needs more"}}
}

func admit(w *core.Workload) core.Decision {
	return core.Decision{Workload: w, Admit: &core.Assignment{ClusterQueue: w.ClusterQueue}}
}

// popAll hands out heads one at a time and returns the order, admitting each.
func popAll(m *Manager) []string {
	var order []string
	for {
		hs := m.Heads()
		if len(hs) == 0 {
			return order
		}
		for _, w := range hs {
			order = append(order, w.Key)
			m.Done(admit(w))
		}
	}
}

func TestOrderIsPriorityThenAge(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	m.AddOrUpdate(MakeWorkload("old-low", "").Priority(1).Created(time.Second).Obj(), "default/lq")
	m.AddOrUpdate(MakeWorkload("new-high", "").Priority(5).Created(time.Hour).Obj(), "default/lq")
	m.AddOrUpdate(MakeWorkload("old-high", "").Priority(5).Created(time.Minute).Obj(), "default/lq")
	want := []string{"default/old-high", "default/new-high", "default/old-low"}
	if got := popAll(m); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// A head says whether more of its queue waits behind it, in line (the core
// lets that queue go first where it would take back what another borrows).
func TestHeadsSayWhatWaitsBehind(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	m.AddOrUpdate(MakeWorkload("first", "").Priority(5).Obj(), "default/lq")
	m.AddOrUpdate(MakeWorkload("second", "").Priority(1).Obj(), "default/lq")
	for _, want := range []bool{true, false} {
		hs := m.Heads()
		if len(hs) != 1 || hs[0].Behind != want {
			t.Fatalf("heads %v: behind %v, want %v", keys(hs), len(hs) == 1 && hs[0].Behind, want)
		}
		m.Done(admit(hs[0]))
	}
}

func TestBestEffortFIFOStepsAside(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	big := MakeWorkload("big", "").Priority(5).Obj()
	small := MakeWorkload("small", "").Priority(1).Obj()
	m.AddOrUpdate(big, "default/lq")
	m.AddOrUpdate(small, "default/lq")

	hs := m.Heads()
	if !slices.Equal(keys(hs), []string{"default/big"}) {
		t.Fatalf("heads %v", keys(hs))
	}
	m.Done(noFit(big))
	// The next one gets its turn; big waits aside.
	if hs := m.Heads(); !slices.Equal(keys(hs), []string{"default/small"}) {
		t.Fatalf("after big stepped aside, heads %v", keys(hs))
	}
	m.Done(admit(small))
	if m.Ready() {
		t.Fatal("ready with only a set-aside workload: it would be retried in a loop")
	}
	if a, i := m.Counts("cq"); a != 0 || i != 1 {
		t.Errorf("counts active=%d inadmissible=%d, want 0 and 1", a, i)
	}
	// Something changed (quota released): big gets another look.
	m.QueueInadmissible("cq")
	if hs := m.Heads(); !slices.Equal(keys(hs), []string{"default/big"}) {
		t.Fatalf("after QueueInadmissible, heads %v", keys(hs))
	}
}

// small is a workload of 1 cpu at priority 1, created at.
func small(name string, at time.Duration) *core.Workload {
	return MakeWorkload(name, "").Priority(1).Created(at).PodSet("main", 1).Request("cpu", "1").Obj()
}

// A head that does not fit sets aside with it the equal workloads behind it,
// with its reason, but not the first one that asks for something else, nor
// any after that: the line keeps its order. The next release of quota gives
// them all another look.
func TestEqualWorkloadsStepAsideTogether(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	m.AddOrUpdate(small("s1", 1*time.Second), "default/lq")
	m.AddOrUpdate(small("s2", 2*time.Second), "default/lq")
	m.AddOrUpdate(small("s3", 3*time.Second), "default/lq")
	m.AddOrUpdate(MakeWorkload("m4", "").Priority(1).Created(4*time.Second).PodSet("main", 1).Request("cpu", "5").Obj(), "default/lq")
	m.AddOrUpdate(small("s5", 5*time.Second), "default/lq")

	s1 := m.Heads()
	if !slices.Equal(keys(s1), []string{"default/s1"}) {
		t.Fatalf("heads %v", keys(s1))
	}
	m.Done(noFit(s1[0]))
	if a, i := m.Counts("cq"); a != 2 || i != 3 {
		t.Errorf("counts active=%d inadmissible=%d, want s1..s3 aside and m4, s5 in line", a, i)
	}
	assertReason(t, m, "default/s3", "needs more")
	m4 := m.Heads()
	if !slices.Equal(keys(m4), []string{"default/m4"}) {
		t.Fatalf("after s1 stepped aside, heads %v, want m4, which asks for more", keys(m4))
	}
	m.Done(admit(m4[0]))
	s5 := m.Heads()
	if !slices.Equal(keys(s5), []string{"default/s5"}) {
		t.Fatalf("heads %v, want s5: it was behind a different workload", keys(s5))
	}
	m.Done(noFit(s5[0]))
	// A release of quota brings back the first of the equal ones only
	// (and s5, which was set aside alone); s2 and s3 follow s1.
	m.QueueInadmissible("cq")
	if a, i := m.Counts("cq"); a != 2 || i != 2 {
		t.Errorf("after a release, counts active=%d inadmissible=%d, want s1 and s5 in line, s2 and s3 following s1", a, i)
	}
	again := m.Heads()
	if !slices.Equal(keys(again), []string{"default/s1"}) {
		t.Fatalf("heads %v, want s1", keys(again))
	}
	m.Done(noFit(again[0]))
	if a, i := m.Counts("cq"); a != 0 || i != 4 {
		t.Errorf("s1 set aside again: counts active=%d inadmissible=%d, want all four aside (s5, equal, with them now)", a, i)
	}
	// Once s1 fits, its followers get their turn at once, with no other release.
	m.QueueInadmissible("cq")
	if got := popAll(m); !slices.Equal(got, []string{"default/s1", "default/s2", "default/s3", "default/s5"}) {
		t.Errorf("after quota was released, the line is %v", got)
	}
}

// A new version of a leader (its status was written) still leads: its
// followers come back when it is admitted.
func TestFollowersFollowALeadersNewVersion(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	m.AddOrUpdate(small("s1", time.Second), "default/lq")
	m.AddOrUpdate(small("s2", 2*time.Second), "default/lq")
	hs := m.Heads()
	m.Done(noFit(hs[0]))
	m.AddOrUpdate(small("s1", time.Second), "default/lq") // its pending reason written
	m.QueueInadmissible("cq")
	hs = m.Heads()
	if !slices.Equal(keys(hs), []string{"default/s1"}) {
		t.Fatalf("heads %v, want the new s1 only", keys(hs))
	}
	m.Done(admit(hs[0]))
	if hs := m.Heads(); !slices.Equal(keys(hs), []string{"default/s2"}) {
		t.Fatalf("after s1 was admitted, heads %v, want s2", keys(hs))
	}
}

func TestStrictFIFOHeadBlocks(t *testing.T) {
	m := setup(core.StrictFIFO)
	head := MakeWorkload("head", "").Priority(5).Obj()
	m.AddOrUpdate(head, "default/lq")
	m.AddOrUpdate(MakeWorkload("later", "").Priority(5).Created(time.Hour).Obj(), "default/lq")

	m.Done(noFit(m.Heads()[0]))
	if m.Ready() || len(m.Heads()) != 0 {
		t.Fatal("a StrictFIFO queue whose head does not fit handed out another workload")
	}
	// A lower-priority arrival does not change the head: still blocked.
	m.AddOrUpdate(MakeWorkload("low", "").Priority(1).Obj(), "default/lq")
	if m.Ready() {
		t.Fatal("a lower-priority arrival unblocked the queue")
	}
	if a, i := m.Counts("cq"); a != 2 || i != 1 {
		t.Errorf("counts active=%d inadmissible=%d, want 2 and 1", a, i)
	}
	// A higher-priority arrival becomes the head and deserves a look.
	m.AddOrUpdate(MakeWorkload("urgent", "").Priority(9).Obj(), "default/lq")
	if hs := m.Heads(); !slices.Equal(keys(hs), []string{"default/urgent"}) {
		t.Fatalf("heads %v, want the new head", keys(hs))
	}
	m.Done(admit(m.entries["default/urgent"].w))
	// Blocked again behind head until something changes.
	if hs := m.Heads(); !slices.Equal(keys(hs), []string{"default/head"}) {
		t.Fatalf("heads %v, want the old head again", keys(hs))
	}
	m.Done(noFit(head))
	m.QueueInadmissible("cq")
	want := []string{"default/head", "default/later", "default/low"}
	if got := popAll(m); !slices.Equal(got, want) {
		t.Errorf("after unblocking, order %v, want %v", got, want)
	}
}

func TestContentionRetriesAtOnce(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	w := MakeWorkload("w", "").Obj()
	m.AddOrUpdate(w, "default/lq")
	m.Done(core.Decision{Workload: m.Heads()[0], Pending: &core.Pending{Reason: core.Contention}})
	if !m.Ready() {
		t.Fatal("a workload that lost to others in the same cycle is not retried")
	}
}

// Lesson 3: workloads that arrive before their queues wait, with a reason, and
// are queued the moment the missing object appears.
func TestOutOfOrderArrival(t *testing.T) {
	m := NewManager(clock.RealClock{})
	w := MakeWorkload("early", "").Obj()
	m.AddOrUpdate(w, "default/lq")
	if m.Ready() {
		t.Fatal("ready without a LocalQueue")
	}
	assertReason(t, m, "default/early", "LocalQueue default/lq does not exist")

	m.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq"})
	if m.Ready() {
		t.Fatal("ready without a ClusterQueue")
	}
	assertReason(t, m, "default/early", "ClusterQueue cq does not exist")

	m.SetClusterQueue("cq", core.BestEffortFIFO, nil)
	hs := m.Heads()
	if !slices.Equal(keys(hs), []string{"default/early"}) || hs[0].ClusterQueue != "cq" {
		t.Fatalf("heads after both queues appeared: %v", keys(hs))
	}
	m.Done(noFit(hs[0]))

	// Losing the ClusterQueue parks it again; getting it back queues it.
	m.DeleteClusterQueue("cq")
	assertReason(t, m, "default/early", "ClusterQueue cq does not exist")
	m.SetClusterQueue("cq", core.BestEffortFIFO, nil)
	if !m.Ready() {
		t.Fatal("not ready once the ClusterQueue came back")
	}
	m.DeleteLocalQueue("default/lq")
	if m.Ready() {
		t.Fatal("ready after the LocalQueue went away")
	}
	m.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq", Stopped: true})
	assertReason(t, m, "default/early", "stopped")
	if m.Ready() {
		t.Fatal("a stopped LocalQueue's workload is handed out")
	}
}

func assertReason(t *testing.T, m *Manager, key, want string) {
	t.Helper()
	p := m.Pending(key)
	if p == nil || !strings.Contains(p.Message, want) {
		t.Fatalf("pending reason of %s = %+v, want %q", key, p, want)
	}
	if ch := m.TakeChanged(); !strings.Contains(ch[key].Message, want) {
		t.Fatalf("changed reasons %v do not report %q", ch, want)
	}
	if ch := m.TakeChanged(); len(ch) != 0 {
		t.Fatalf("changes reported twice: %v", ch)
	}
}

func TestChangesDuringACycle(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	v1 := MakeWorkload("w", "").Priority(1).Obj()
	m.AddOrUpdate(v1, "default/lq")
	hs := m.Heads()

	// Updated while being decided on: the decision on v1 is void, v2 queues.
	v2 := MakeWorkload("w", "").Priority(2).Obj()
	m.AddOrUpdate(v2, "default/lq")
	m.Done(admit(hs[0]))
	hs = m.Heads()
	if len(hs) != 1 || hs[0] != v2 {
		t.Fatalf("after an update during the cycle, heads %v, want the new version", keys(hs))
	}
	// Deleted while being decided on: gone for good.
	m.Delete("default/w")
	m.Done(noFit(hs[0]))
	if m.Has("default/w") || m.Ready() {
		t.Fatal("a workload deleted during the cycle came back")
	}
	if n := m.PendingInLocalQueue("default/lq"); n != 0 {
		t.Errorf("pending in lq = %d, want 0", n)
	}
}

func TestLocalQueueCounts(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	m.SetLocalQueue(LocalQueue{Key: "other/lq", ClusterQueue: "cq"})
	m.AddOrUpdate(MakeWorkload("a", "").Obj(), "default/lq")
	m.AddOrUpdate(MakeWorkload("b", "").Obj(), "default/lq")
	m.AddOrUpdate(MakeWorkload("c", "").Obj(), "other/lq")
	if n := m.PendingInLocalQueue("default/lq"); n != 2 {
		t.Errorf("pending in default/lq = %d, want 2", n)
	}
	// Moving a workload to another LocalQueue moves its count.
	m.AddOrUpdate(MakeWorkload("b", "").Obj(), "other/lq")
	if a, b := m.PendingInLocalQueue("default/lq"), m.PendingInLocalQueue("other/lq"); a != 1 || b != 2 {
		t.Errorf("pending after move: default/lq %d, other/lq %d", a, b)
	}
	m.Delete("default/a")
	if n := m.PendingInLocalQueue("default/lq"); n != 0 {
		t.Errorf("pending after delete = %d", n)
	}
}

// Only a reason that differs in more than drifting amounts is reported as a
// change: otherwise each release of quota would rewrite every pending
// workload's status.
func TestDriftingAmountsAreNotChanges(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	w := MakeWorkload("w", "").Obj()
	m.AddOrUpdate(w, "default/lq")
	decide := func(msg, stable string) {
		hs := m.Heads()
		m.Done(core.Decision{Workload: hs[0], Pending: &core.Pending{Reason: core.NoFit, Message: msg, Stable: stable}})
		m.QueueInadmissible("cq")
	}
	decide("needs 5 cpu in flavor a, 2 free", "needs 5 cpu in flavor a")
	if ch := m.TakeChanged(); len(ch) != 1 {
		t.Fatalf("first reason not reported: %v", ch)
	}
	decide("needs 5 cpu in flavor a, 3 free", "needs 5 cpu in flavor a")
	if ch := m.TakeChanged(); len(ch) != 0 {
		t.Fatalf("a changed free amount was reported as a change: %v", ch)
	}
	if p := m.Pending("default/w"); p.Message != "needs 5 cpu in flavor a, 3 free" {
		t.Errorf("latest message not kept: %q", p.Message)
	}
	decide("needs 6 cpu in flavor a, 3 free", "needs 6 cpu in flavor a")
	if ch := m.TakeChanged(); len(ch) != 1 {
		t.Fatalf("a different shortfall was not reported: %v", ch)
	}
}

// A preemptor keeps its place while its victims release their quota, even
// when it is updated meanwhile, and goes first once they have.
func TestPreemptorStaysNominated(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	older := MakeWorkload("older", "").Priority(5).Obj()
	m.AddOrUpdate(older, "default/lq")
	m.Done(noFit(m.Heads()[0])) // steps aside
	p := MakeWorkload("preemptor", "").Priority(1).Obj()
	m.AddOrUpdate(p, "default/lq")
	hs := m.Heads()
	m.Done(core.Decision{Workload: hs[0], Pending: &core.Pending{Reason: core.Preempting, Message: "waiting"}})
	if m.Ready() {
		t.Fatal("the queue hands out work while its preemptor waits for its victims")
	}
	// A new version (its pending reason was written) keeps the nomination.
	m.AddOrUpdate(MakeWorkload("preemptor", "").Priority(1).Obj(), "default/lq")
	m.QueueInadmissible("cq") // the victims' quota is back
	hs = m.Heads()
	if len(hs) != 1 || hs[0].Key != "default/preemptor" || !hs[0].Nominated {
		t.Fatalf("heads %v: want the nominated preemptor ahead of the older workload", keys(hs))
	}
}

// Aging: a low-priority workload that waits long enough overtakes a stream
// of newer higher-priority work, up to the cap; without aging it never does.
func TestAgingLetsOldWorkRise(t *testing.T) {
	clk := clocktesting.NewFakeClock(Epoch)
	m := NewManager(clk)
	m.SetClusterQueue("cq", core.BestEffortFIFO, &core.Aging{Step: 1, Interval: time.Minute, Cap: 5})
	m.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq"})
	m.AddOrUpdate(MakeWorkload("old-low", "").Priority(0).Obj(), "default/lq")

	clk.Step(3 * time.Minute) // aged by 3
	m.AddOrUpdate(MakeWorkload("new-high", "").Priority(2).Created(3*time.Minute).Obj(), "default/lq")
	if hs := m.Heads(); hs[0].Key != "default/old-low" || hs[0].Aged != 3 {
		t.Fatalf("after 3 minutes, head %s aged %d; want old-low aged 3", hs[0].Key, hs[0].Aged)
	}

	m2 := NewManager(clk)
	m2.SetClusterQueue("cq", core.BestEffortFIFO, &core.Aging{Step: 1, Interval: time.Minute, Cap: 1})
	m2.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq"})
	m2.AddOrUpdate(MakeWorkload("old-low", "").Priority(0).Obj(), "default/lq")
	m2.AddOrUpdate(MakeWorkload("new-high", "").Priority(2).Created(3*time.Minute).Obj(), "default/lq")
	if hs := m2.Heads(); hs[0].Key != "default/new-high" {
		t.Fatalf("the cap of 1 must keep old-low (0+1) behind new-high (2), head is %s", hs[0].Key)
	}

	m3 := NewManager(clk)
	m3.SetClusterQueue("cq", core.BestEffortFIFO, nil)
	m3.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq"})
	m3.AddOrUpdate(MakeWorkload("old-low", "").Priority(0).Obj(), "default/lq")
	m3.AddOrUpdate(MakeWorkload("new-high", "").Priority(2).Created(3*time.Minute).Obj(), "default/lq")
	if hs := m3.Heads(); hs[0].Key != "default/new-high" || hs[0].Aged != 0 {
		t.Fatalf("without aging, head %s aged %d", hs[0].Key, hs[0].Aged)
	}
}

// An evicted workload waits out its backoff before it is looked at again.
func TestBackoffHoldsEvictedWorkloads(t *testing.T) {
	clk := clocktesting.NewFakeClock(Epoch)
	m := NewManager(clk)
	m.SetClusterQueue("cq", core.BestEffortFIFO, nil)
	m.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq"})
	w := MakeWorkload("evicted", "").Obj()
	w.NotBefore = Epoch.Add(4 * time.Second)
	m.AddOrUpdate(w, "default/lq")
	if m.Ready() {
		t.Fatal("a workload in backoff is handed out")
	}
	if at, ok := m.NextRelease(); !ok || !at.Equal(w.NotBefore) {
		t.Fatalf("NextRelease = %v, %v", at, ok)
	}
	clk.Step(4 * time.Second)
	if hs := m.Heads(); len(hs) != 1 || hs[0].Key != "default/evicted" {
		t.Fatalf("after its backoff, heads %v", keys(hs))
	}
}

func lineKeys(line []Waiting) []string {
	var out []string
	for _, w := range line {
		out = append(out, w.Key)
	}
	return out
}

// The line a visibility snapshot shows is the order the queue hands
// workloads out in, whatever the strategy.
func TestLineIsTheOrderOfAdmission(t *testing.T) {
	for _, s := range []core.QueueingStrategy{core.BestEffortFIFO, core.StrictFIFO} {
		m := setup(s)
		for i, p := range []int32{3, 1, 3, 7, 1, 0, 7, 2} {
			m.AddOrUpdate(MakeWorkload(string(rune('a'+i)), "").Priority(p).Created(time.Duration(i%3)*time.Minute).Obj(), "default/lq")
		}
		line, ok := m.Line("cq")
		if !ok {
			t.Fatal("no line for cq")
		}
		SortLine(line)
		if got, want := lineKeys(line), popAll(m); !slices.Equal(got, want) {
			t.Errorf("%s: line %v, admitted in %v", s, got, want)
		}
	}
	// Many ties of priority and age: the key decides, the same way.
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		m := setup(core.BestEffortFIFO)
		for i := range 200 {
			m.AddOrUpdate(MakeWorkload(fmt.Sprintf("w%d", i), "").Priority(rng.Int32N(4)).
				Created(time.Duration(rng.IntN(5))*time.Second).Obj(), "default/lq")
		}
		line, _ := m.Line("cq")
		SortLine(line)
		if got, want := lineKeys(line), popAll(m); !slices.Equal(got, want) {
			t.Fatalf("round %d: line %v, admitted in %v", round, got, want)
		}
	}
}

// Set aside and in flight still count as waiting in line; parked and held
// back by a backoff do not.
func TestLineHoldsEveryoneWaitingInTheQueue(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := NewManager(clk)
	m.SetClusterQueue("cq", core.BestEffortFIFO, nil)
	m.SetLocalQueue(LocalQueue{Key: "default/lq", ClusterQueue: "cq"})
	aside := MakeWorkload("aside", "").Priority(9).Obj()
	m.AddOrUpdate(aside, "default/lq")
	m.Done(noFit(m.Heads()[0]))
	m.AddOrUpdate(MakeWorkload("deciding", "").Priority(5).Obj(), "default/lq")
	m.AddOrUpdate(MakeWorkload("next", "").Priority(1).Obj(), "default/lq")
	deciding := m.Heads()
	if !slices.Equal(keys(deciding), []string{"default/deciding"}) {
		t.Fatalf("heads %v", keys(deciding))
	}
	m.AddOrUpdate(MakeWorkload("parked", "").Obj(), "default/missing")
	held := MakeWorkload("held", "").Obj()
	held.NotBefore = clk.Now().Add(time.Minute)
	m.AddOrUpdate(held, "default/lq")

	line, _ := m.Line("cq")
	SortLine(line)
	if got, want := lineKeys(line), []string{"default/aside", "default/deciding", "default/next"}; !slices.Equal(got, want) {
		t.Errorf("line %v, want %v", got, want)
	}
	if line[0].Pending == nil || line[0].Pending.Reason != core.NoFit {
		t.Errorf("the set-aside workload's reason is %+v, want %s", line[0].Pending, core.NoFit)
	}
	if _, ok := m.Line("nope"); ok {
		t.Error("a line for a ClusterQueue that does not exist")
	}
}

// A StrictFIFO queue that orders by LocalQueue score stays blocked behind a
// head that does not fit only while that head's queue scores lowest: once
// another scores lower, its head is looked at.
func TestFairQueueReordersWhenScoresChange(t *testing.T) {
	m := NewManager(clock.RealClock{})
	m.SetClusterQueue("cq", core.StrictFIFO, nil)
	m.SetFair("cq", true)
	m.SetLocalQueue(LocalQueue{Key: "default/a", ClusterQueue: "cq"})
	m.SetLocalQueue(LocalQueue{Key: "default/b", ClusterQueue: "cq"})
	m.SetScore("default/b", 5)
	m.AddOrUpdate(MakeWorkload("b-old", "").Obj(), "default/b")
	m.AddOrUpdate(MakeWorkload("a-new", "").Created(time.Hour).Obj(), "default/a")
	if got := keys(m.Heads()); !slices.Equal(got, []string{"default/a-new"}) {
		t.Fatalf("heads %v; want the lower-scored LocalQueue's a-new before the older b-old", got)
	}
	m.Done(noFit(m.entries["default/a-new"].w))
	if got := m.Heads(); len(got) != 0 {
		t.Fatalf("heads %v of a blocked StrictFIFO queue", keys(got))
	}
	m.SetScore("default/a", 10)
	if got := keys(m.Heads()); !slices.Equal(got, []string{"default/b-old"}) {
		t.Fatalf("heads %v after a's score rose above b's; want b-old", got)
	}
	line, _ := m.Line("cq")
	SortLine(line)
	if len(line) != 2 || line[0].Key != "default/b-old" || line[0].Score != 5 || line[1].Score != 10 {
		t.Fatalf("line %+v; want b-old (score 5) before a-new (score 10)", line)
	}
}

// A workload that cannot be admitted as it is (devices that cannot be
// counted) waits out of line, saying why, in a queue that exists; offered
// again as it can be, it is in line.
func TestInadmissibleWaitsOutOfLine(t *testing.T) {
	m := setup(core.BestEffortFIFO)
	w := MakeWorkload("gpus", "").Obj()
	w.Inadmissible = "pod set main: DeviceClass x is not mapped"
	m.AddOrUpdate(w, "default/lq")
	if m.Ready() {
		t.Fatal("an inadmissible workload is handed out")
	}
	assertReason(t, m, "default/gpus", "DeviceClass x is not mapped")
	m.SetClusterQueue("cq", core.BestEffortFIFO, nil) // a queue change does not let it in
	if m.Ready() {
		t.Fatal("an inadmissible workload is handed out after its ClusterQueue changed")
	}
	m.AddOrUpdate(MakeWorkload("gpus", "").Obj(), "default/lq")
	if got := keys(m.Heads()); !slices.Equal(got, []string{"default/gpus"}) {
		t.Fatalf("heads once it can be admitted: %v", got)
	}
}
