package delayqueue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func item(key, uid, rv, stage string, due time.Duration) Item {
	return Item{Key: key, UID: uid, ResourceVersion: rv, Stage: stage, Due: t0.Add(due)}
}

// tryGet returns a due item without waiting.
func tryGet(q *Queue) (Item, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return q.Get(ctx)
}

func mustCheck(t *testing.T, q *Queue) {
	t.Helper()
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestOfferRules(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(clk)
	steps := []struct {
		offer Item
		want  Outcome
		queue Item
	}{
		{item("p", "u1", "10", "delete", 5*time.Second), Added, item("p", "u1", "10", "delete", 5*time.Second)},
		// The same stage again from a newer version: the due time stands.
		{item("p", "u1", "12", "delete", 9*time.Second), Kept, item("p", "u1", "12", "delete", 5*time.Second)},
		// A stale event, even for another stage, changes nothing.
		{item("p", "u1", "11", "ready", 0), Stale, item("p", "u1", "12", "delete", 5*time.Second)},
		{item("p", "u1", "12", "ready", 0), Stale, item("p", "u1", "12", "delete", 5*time.Second)},
		// A newer version matching another stage replaces it.
		{item("p", "u1", "13", "finish", 2*time.Second), Replaced, item("p", "u1", "13", "finish", 2*time.Second)},
		// A successor object of the same name, seen later, replaces it too.
		{item("p", "u2", "20", "finish", time.Second), Replaced, item("p", "u2", "20", "finish", time.Second)},
	}
	for i, s := range steps {
		if got := q.Offer(s.offer); got != s.want {
			t.Fatalf("step %d: Offer = %v, want %v", i, got, s.want)
		}
		mustCheck(t, q)
		if got, _ := q.Queued("p"); got != s.queue {
			t.Fatalf("step %d: queued %+v, want %+v", i, got, s.queue)
		}
	}
	if q.Len() != 1 {
		t.Fatalf("Len = %d, want 1", q.Len())
	}
}

func TestOnlyDeletionCancels(t *testing.T) {
	q := New(clocktesting.NewFakeClock(t0))
	q.Offer(item("p", "u2", "20", "delete", time.Second))
	if q.Cancel("p", "u1") {
		t.Fatal("the deletion of an earlier object of the same name cancelled its successor's stage")
	}
	if q.Cancel("other", "") {
		t.Fatal("cancelled something for an object with nothing queued")
	}
	if !q.Cancel("p", "u2") || q.Len() != 0 {
		t.Fatal("deletion did not cancel")
	}
	mustCheck(t, q)
}

func TestDueOrderAndOneWorkerPerObject(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(clk)
	q.Offer(item("b", "", "1", "s", 2*time.Second))
	q.Offer(item("a", "", "1", "s", 3*time.Second))
	q.Offer(item("c", "", "1", "s", 10*time.Second))
	if _, ok := tryGet(q); ok {
		t.Fatal("handed out an item before it was due")
	}
	clk.Step(3 * time.Second)
	first, _ := tryGet(q)
	// While b is held, a newer b queued meanwhile waits for Done.
	q.Offer(item("b", "", "2", "s2", 0))
	second, _ := tryGet(q)
	if first.Key != "b" || second.Key != "a" {
		t.Fatalf("got %s then %s, want b then a (earliest due first)", first.Key, second.Key)
	}
	if it, ok := tryGet(q); ok {
		t.Fatalf("handed out %s while b is being worked on", it.Key)
	}
	q.Done("b")
	if it, ok := tryGet(q); !ok || it.Key != "b" || it.Stage != "s2" {
		t.Fatalf("after Done got %+v %v, want b/s2", it, ok)
	}
	mustCheck(t, q)
}

func TestGetWaitsForTheDueTime(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := New(clk)
	q.Offer(item("a", "", "1", "s", 5*time.Second))
	got := make(chan Item)
	go func() {
		it, _ := q.Get(context.Background())
		got <- it
	}()
	waitFor(t, clk.HasWaiters)
	clk.Step(4 * time.Second)
	select {
	case it := <-got:
		t.Fatalf("got %+v a second early", it)
	default:
	}
	clk.Step(time.Second)
	select {
	case it := <-got:
		if it.Key != "a" {
			t.Fatalf("got %+v", it)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get did not return once the item was due")
	}
}

func TestShutDownReleasesWaiters(t *testing.T) {
	q := New(clock.RealClock{})
	done := make(chan bool)
	go func() {
		_, ok := q.Get(context.Background())
		done <- ok
	}()
	q.ShutDown()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("Get returned an item from an empty queue")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get still waiting after ShutDown")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAgainstModel runs random sequences of offers (fresh, stale and
// reordered versions), deletions, clock steps and hand-outs, and compares
// the queue with a plain map following the rules, checking the queue's
// structures agree after every operation. At the end everything still
// queued must come out: nothing is lost.
func TestAgainstModel(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	clk := clocktesting.NewFakeClock(t0)
	q := New(clk)
	model := map[string]Item{}
	held := map[string]bool{}
	rv := 0
	keys := []string{"a", "b", "c", "d"}
	stages := []string{"ready", "finish", "delete"}
	for op := range 300 {
		key := keys[rng.IntN(len(keys))]
		switch r := rng.IntN(10); {
		case r < 5:
			rv++
			v := rv
			if rng.IntN(4) == 0 { // a stale or reordered event
				v = max(1, rv-rng.IntN(5))
			}
			it := Item{Key: key, UID: "u" + strconv.Itoa(rng.IntN(2)), ResourceVersion: strconv.Itoa(v),
				Stage: stages[rng.IntN(len(stages))], Due: clk.Now().Add(time.Duration(rng.IntN(5)) * time.Second)}
			want := Added
			if old, ok := model[key]; ok {
				oldV, _ := strconv.Atoi(old.ResourceVersion)
				switch {
				case v <= oldV:
					want = Stale
				case old.UID == it.UID && old.Stage == it.Stage:
					want = Kept
					old.ResourceVersion = it.ResourceVersion
					model[key] = old
				default:
					want = Replaced
				}
			}
			if want == Added || want == Replaced {
				model[key] = it
			}
			if got := q.Offer(it); got != want {
				t.Fatalf("op %d: Offer(%+v) = %v, want %v", op, it, got, want)
			}
		case r < 6:
			uid := "u" + strconv.Itoa(rng.IntN(2))
			_, want := model[key]
			want = want && model[key].UID == uid
			if want {
				delete(model, key)
			}
			if got := q.Cancel(key, uid); got != want {
				t.Fatalf("op %d: Cancel = %v, want %v", op, got, want)
			}
		case r < 7:
			clk.Step(time.Duration(rng.IntN(3)) * time.Second)
		case r < 9:
			it, ok := tryGet(q)
			if ok {
				m, inModel := model[it.Key]
				if !inModel || m != it || it.Due.After(clk.Now()) || held[it.Key] {
					t.Fatalf("op %d: handed out %+v; model has %+v (present %v), held %v", op, it, m, inModel, held[it.Key])
				}
				delete(model, it.Key)
				held[it.Key] = true
			} else {
				for k, m := range model {
					if !m.Due.After(clk.Now()) && !held[k] {
						t.Fatalf("op %d: %+v is due and free but was not handed out", op, m)
					}
				}
			}
		default:
			if held[key] {
				q.Done(key)
				delete(held, key)
			}
		}
		mustCheck(t, q)
		if q.Len() != len(model) {
			t.Fatalf("op %d: Len %d, model %d", op, q.Len(), len(model))
		}
	}
	for k := range held {
		q.Done(k)
	}
	clk.Step(time.Hour)
	for len(model) > 0 {
		it, ok := tryGet(q)
		if !ok {
			t.Fatalf("lost: %v", model)
		}
		if model[it.Key] != it {
			t.Fatalf("drained %+v, model has %+v", it, model[it.Key])
		}
		delete(model, it.Key)
		q.Done(it.Key)
	}
}

// TestConcurrentWorkers: many workers and producers at once; no object is
// ever worked on by two workers, and every offered stage that was not
// replaced comes out.
func TestConcurrentWorkers(t *testing.T) {
	q := New(clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inFlight sync.Map
	var handed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, ok := q.Get(ctx)
				if !ok {
					return
				}
				if _, dup := inFlight.LoadOrStore(it.Key, true); dup {
					t.Errorf("%s handed to two workers at once", it.Key)
				}
				handed.Add(1)
				inFlight.Delete(it.Key)
				q.Done(it.Key)
			}
		}()
	}
	const objects = 2000
	// Due after every offer is in, so the second version always finds the first queued.
	now := time.Now().Add(time.Second)
	for i := range objects {
		// Two versions of each object, the same stage: one item each.
		for v := 1; v <= 2; v++ {
			q.Offer(Item{Key: fmt.Sprintf("pod-%d", i), ResourceVersion: strconv.Itoa(v), Stage: "delete",
				Due: now.Add(time.Duration(i%50) * time.Millisecond)})
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for handed.Load() < objects && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if n := handed.Load(); n != objects {
		t.Fatalf("handed out %d items, want %d", n, objects)
	}
	mustCheck(t, q)
}
