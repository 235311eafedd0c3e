package integration

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// StoppedAnnotation is written on a queued object that never started in
// the admission its Workload loses, before that quota is given back
// (Fences.Release): the stop it was written for, and when.
const StoppedAnnotation = "berth.dev/stopped"

// Fences keeps a replica that led before from starting an object whose
// quota is given back. Such a replica, paused past its lease inside Start
// (after reading the Workload admitted, before its update of the object),
// resumes holding a copy of the object from then; when the object was
// never started, nothing has written it since, and that late update would
// go through, running it without quota. So before the quota of an object
// that never started is given back, the object is written once (an update,
// on the version read): its version moves on, and the late update fails
// on it. An object that started was written by its stop (suspended).
//
// The stops written are remembered per object by this replica, not read
// from the annotation: its user may write that. One whose object went
// before its quota was given back is forgotten after fenceMemory.
type Fences struct {
	mu sync.Mutex
	by map[types.UID]fence
}

type fence struct {
	stop string
	at   time.Time
}

// fenceMemory is how long a fence is remembered: longer than pods take to
// go, as a rule. A stop that outlasts it is fenced once more before its
// quota goes back: one write more, never one less.
const fenceMemory = time.Hour

// Release gives back the quota of stopping wl, whose object obj's pods are
// gone (Release), first fencing obj when it never started in that
// admission (started false). After a fence it returns without releasing:
// the write's own event brings the caller back.
func (f *Fences) Release(ctx context.Context, c client.Client, obj client.Object, wl *berthv1.Workload, started bool, now time.Time) error {
	stop := stopOf(wl)
	if !started && f.needs(obj.GetUID(), stop) {
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[StoppedAnnotation] = stop + " at " + now.UTC().Format(time.RFC3339Nano)
		obj.SetAnnotations(a)
		if err := c.Update(ctx, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		f.mark(obj.GetUID(), stop, now)
		return nil
	}
	if err := Release(ctx, c, wl, now); err != nil {
		return err
	}
	f.forget(obj.GetUID())
	return nil
}

// stopOf names a stopping Workload's stop: the Workload and when it was
// evicted.
func stopOf(wl *berthv1.Workload) string {
	at := ""
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadEvicted); c != nil {
		at = c.LastTransitionTime.UTC().Format(time.RFC3339)
	}
	return string(wl.UID) + " evicted " + at
}

func (f *Fences) needs(obj types.UID, stop string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.by[obj].stop != stop
}

// mark remembers obj's fence for stop, and forgets those older than
// fenceMemory (of objects deleted before their quota was given back).
func (f *Fences) mark(obj types.UID, stop string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = map[types.UID]fence{}
	}
	for uid, old := range f.by {
		if now.Sub(old.at) > fenceMemory {
			delete(f.by, uid)
		}
	}
	f.by[obj] = fence{stop: stop, at: now}
}

func (f *Fences) forget(obj types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.by, obj)
}
