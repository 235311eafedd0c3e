// Package delayqueue holds the simulator's pending stages: at most one per
// object, each due at a time, handed to workers once due and never to two
// workers for the same object at once.
//
// The rules are what keep delayed stages from being lost when many objects
// change at once (lesson 5 of the design):
//
//   - A queued stage is replaced only by a match from a newer version of the
//     same object, and only when that match is a different stage. The same
//     stage matching again keeps its place and its due time, so a stream of
//     unrelated updates cannot postpone it forever.
//   - A match from an older or equal version (a stale or reordered watch
//     event) changes nothing.
//   - Only the object's deletion cancels. An event on which no stage matches
//     cancels nothing: whoever runs the stage checks it against the newest
//     copy of the object first.
//   - The per-object index, the time-ordered heap and the ready list change
//     together under one lock; Check verifies they agree.
package delayqueue

import (
	"container/heap"
	"container/list"
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Item is a stage due to run on an object.
type Item struct {
	// Key names the object: kind, namespace and name.
	Key string
	// UID and ResourceVersion are those of the object version that matched.
	UID             string
	ResourceVersion string
	Stage           string
	Due             time.Time
}

// Outcome is what Offer did.
type Outcome int

const (
	Added    Outcome = iota // nothing was queued for the object
	Replaced                // a newer version matched a different stage
	Kept                    // the same stage is already queued; its due time stands
	Stale                   // the offer came from an older version: ignored
)

func (o Outcome) String() string {
	return [...]string{"added", "replaced", "kept", "stale"}[o]
}

type entry struct {
	Item
	heapIndex int           // position in the heap while waiting, else -1
	readyElem *list.Element // position in the ready list once due, else nil
}

// Queue is safe for concurrent use.
type Queue struct {
	clock clock.Clock

	mu         sync.Mutex
	byKey      map[string]*entry // every queued entry: waiting or ready
	waiting    entryHeap         // not yet due, earliest first
	ready      *list.List        // due, in the order they became due
	processing map[string]bool   // keys handed out and not yet Done
	changed    chan struct{}     // closed and replaced on every change
	shutdown   bool
}

// New returns an empty queue.
func New(clk clock.Clock) *Queue {
	return &Queue{clock: clk, byKey: map[string]*entry{}, ready: list.New(),
		processing: map[string]bool{}, changed: make(chan struct{})}
}

// Offer queues a match of it.Stage for a version of the object.
func (q *Queue) Offer(it Item) Outcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	old, ok := q.byKey[it.Key]
	switch {
	case !ok:
		q.add(&entry{Item: it, heapIndex: -1})
		return Added
	case !newer(it.ResourceVersion, old.ResourceVersion):
		return Stale
	case old.UID == it.UID && old.Stage == it.Stage:
		old.ResourceVersion = it.ResourceVersion
		return Kept
	default:
		q.remove(old)
		q.add(&entry{Item: it, heapIndex: -1})
		return Replaced
	}
}

// Cancel drops what is queued for the object once it is deleted. uid, when
// not empty, must match: a deletion of an earlier object of the same name
// does not cancel work for its successor.
func (q *Queue) Cancel(key, uid string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.byKey[key]
	if !ok || (uid != "" && e.UID != uid) {
		return false
	}
	q.remove(e)
	return true
}

// Get waits until an item is due whose object no worker holds, hands it out
// and removes it from the queue; the caller must call Done with its key.
// It returns false once ctx ends or the queue shuts down.
func (q *Queue) Get(ctx context.Context) (Item, bool) {
	for {
		q.mu.Lock()
		if q.shutdown {
			q.mu.Unlock()
			return Item{}, false
		}
		now := q.clock.Now()
		for len(q.waiting) > 0 && !q.waiting[0].Due.After(now) {
			e := heap.Pop(&q.waiting).(*entry)
			e.heapIndex = -1
			e.readyElem = q.ready.PushBack(e)
		}
		for el := q.ready.Front(); el != nil; el = el.Next() {
			e := el.Value.(*entry)
			if q.processing[e.Key] {
				continue
			}
			q.remove(e)
			q.processing[e.Key] = true
			q.mu.Unlock()
			return e.Item, true
		}
		changed := q.changed
		var timer clock.Timer
		var fire <-chan time.Time
		if len(q.waiting) > 0 {
			timer = q.clock.NewTimer(q.waiting[0].Due.Sub(now))
			fire = timer.C()
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return Item{}, false
		case <-changed:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// Done releases the object: items queued for it meanwhile may be handed out.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	q.notify()
}

// ShutDown wakes every Get and makes them return false.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.notify()
}

// Len is the number of queued items, due or not.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.byKey)
}

// Queued returns what is queued for the object, if anything.
func (q *Queue) Queued(key string) (Item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.byKey[key]
	if !ok {
		return Item{}, false
	}
	return e.Item, true
}

// Check verifies that the index, the heap and the ready list hold the same
// entries; tests call it after every operation.
func (q *Queue) Check() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.waiting) + q.ready.Len(); n != len(q.byKey) {
		return fmt.Errorf("%d waiting + %d ready != %d indexed", len(q.waiting), q.ready.Len(), len(q.byKey))
	}
	for i, e := range q.waiting {
		if e.heapIndex != i || e.readyElem != nil || q.byKey[e.Key] != e {
			return fmt.Errorf("waiting entry %s at %d is not indexed as such", e.Key, i)
		}
		if i > 0 && q.waiting[(i-1)/2].Due.After(e.Due) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	for el := q.ready.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		if e.readyElem != el || e.heapIndex != -1 || q.byKey[e.Key] != e {
			return fmt.Errorf("ready entry %s is not indexed as such", e.Key)
		}
	}
	return nil
}

func (q *Queue) add(e *entry) {
	q.byKey[e.Key] = e
	heap.Push(&q.waiting, e)
	q.notify()
}

// remove takes an entry out of the index and whichever of the heap or the
// ready list holds it.
func (q *Queue) remove(e *entry) {
	delete(q.byKey, e.Key)
	if e.readyElem != nil {
		q.ready.Remove(e.readyElem)
		e.readyElem = nil
	} else if e.heapIndex >= 0 {
		heap.Remove(&q.waiting, e.heapIndex)
		e.heapIndex = -1
	}
	q.notify()
}

func (q *Queue) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// newer reports whether resource version a is later than b. Versions are
// etcd revisions in practice; one that is not a number counts as newer, so
// that an unknown scheme never blocks progress.
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}

type entryHeap []*entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if !h[i].Due.Equal(h[j].Due) {
		return h[i].Due.Before(h[j].Due)
	}
	return h[i].Key < h[j].Key
}
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.heapIndex = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
