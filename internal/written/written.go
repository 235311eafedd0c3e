package written

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TTL is how long a write is remembered: a cache lags its API server by
// seconds, and a write it never shows (the object deleted meanwhile) must
// not be kept for ever.
const TTL = time.Minute

// Versions remembers the last resourceVersion written per object. A nil
// *Versions remembers nothing: nothing is stale.
type Versions struct {
	now       func() time.Time
	mu        sync.Mutex
	last      map[key]entry
	lastPrune time.Time
}

type key struct {
	kind reflect.Type // the object's Go type: one Versions serves several kinds
	types.NamespacedName
}

type entry struct {
	rv uint64
	at time.Time
}

// New returns an empty Versions; now is the clock.
func New(now func() time.Time) *Versions {
	return &Versions{now: now, last: map[key]entry{}}
}

func keyOf(obj client.Object) key {
	return key{kind: reflect.TypeOf(obj), NamespacedName: client.ObjectKeyFromObject(obj)}
}

// rv reads a resourceVersion as the etcd revision it is; ok is false for
// one that is not a number (never compared).
func rv(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// Record notes obj's resourceVersion as returned by a write.
func (v *Versions) Record(obj client.Object) {
	n, ok := rv(obj.GetResourceVersion())
	if v == nil || !ok {
		return
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	k := keyOf(obj)
	if e, had := v.last[k]; !had || e.rv < n {
		v.last[k] = entry{rv: n, at: now}
	}
	if now.Sub(v.lastPrune) > TTL {
		v.lastPrune = now
		for k, e := range v.last {
			if now.Sub(e.at) > TTL {
				delete(v.last, k)
			}
		}
	}
}

// Stale says whether obj, as read from a cache, is older than the last
// write recorded for it. Once the cache has caught up, the record is
// dropped.
func (v *Versions) Stale(obj client.Object) bool {
	n, ok := rv(obj.GetResourceVersion())
	if v == nil || !ok {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	k := keyOf(obj)
	e, had := v.last[k]
	switch {
	case !had:
		return false
	case n < e.rv && v.now().Sub(e.at) <= TTL:
		return true
	default:
		delete(v.last, k)
		return false
	}
}

// Client returns c with every successful create, update and patch (of
// objects and of their status) recorded in v.
func (v *Versions) Client(c client.Client) client.Client {
	return &recording{Client: c, v: v}
}

type recording struct {
	client.Client
	v *Versions
}

func (r *recording) done(obj client.Object, err error) error {
	if err == nil {
		r.v.Record(obj)
	}
	return err
}

func (r *recording) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return r.done(obj, r.Client.Create(ctx, obj, opts...))
}

func (r *recording) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return r.done(obj, r.Client.Update(ctx, obj, opts...))
}

func (r *recording) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return r.done(obj, r.Client.Patch(ctx, obj, patch, opts...))
}

func (r *recording) Status() client.SubResourceWriter {
	return &recordingStatus{SubResourceWriter: r.Client.Status(), r: r}
}

type recordingStatus struct {
	client.SubResourceWriter
	r *recording
}

func (s *recordingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.r.done(obj, s.SubResourceWriter.Update(ctx, obj, opts...))
}

func (s *recordingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.r.done(obj, s.SubResourceWriter.Patch(ctx, obj, patch, opts...))
}
