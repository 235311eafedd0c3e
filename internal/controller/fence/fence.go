package fence

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
)

// Fence is one replica's record of its lease.
type Fence struct {
	clock clock.PassiveClock
	// deadline is how long after a renewal this replica still writes.
	deadline time.Duration

	mu      sync.Mutex
	renewed time.Time // when the last successful renewal was sent; zero: never led

	refused atomic.Int64
}

// New returns a fence that allows writes for deadline after each renewal.
func New(c clock.PassiveClock, deadline time.Duration) *Fence {
	return &Fence{clock: c, deadline: deadline}
}

// Allows says whether this replica may write now: it never led (writes
// before leadership are its start-up's, such as its webhook certificate), or
// its last renewal is recent enough that no other replica can lead yet.
func Allows(now, renewed time.Time, deadline time.Duration) error {
	if renewed.IsZero() {
		return nil
	}
	if age := now.Sub(renewed); age > deadline {
		return fmt.Errorf("not the leader any more: the lease was last renewed %s ago (more than %s), so another replica may lead; write refused",
			age.Round(time.Millisecond), deadline)
	}
	return nil
}

func (f *Fence) allows() error {
	f.mu.Lock()
	renewed := f.renewed
	f.mu.Unlock()
	return Allows(f.clock.Now(), renewed, f.deadline)
}

// Refused is how many writes the fence has refused.
func (f *Fence) Refused() int64 { return f.refused.Load() }

// Lock wraps a leader-election lock so that each acquisition or renewal
// that succeeds is recorded, as of when it was sent.
func (f *Fence) Lock(inner resourcelock.Interface) resourcelock.Interface {
	return &lock{Interface: inner, f: f}
}

type lock struct {
	resourcelock.Interface
	f *Fence
}

func (l *lock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.record(r, func() error { return l.Interface.Create(ctx, r) })
}

func (l *lock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.record(r, func() error { return l.Interface.Update(ctx, r) })
}

// record notes a write of the lease that names this replica its holder; a
// replica releasing the lease writes an empty holder.
func (l *lock) record(r resourcelock.LeaderElectionRecord, write func() error) error {
	sent := l.f.clock.Now()
	err := write()
	if err == nil && r.HolderIdentity == l.Identity() {
		l.f.mu.Lock()
		if sent.After(l.f.renewed) {
			l.f.renewed = sent
		}
		l.f.mu.Unlock()
	}
	return err
}

// Wrap guards a client's transport: its writes go out only while the fence
// allows them. Reads always do.
func (f *Fence) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{rt: rt, f: f}
}

type roundTripper struct {
	rt http.RoundTripper
	f  *Fence
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := r.f.allows(); err != nil {
			r.f.refused.Add(1)
			return nil, err
		}
	}
	return r.rt.RoundTrip(req)
}
