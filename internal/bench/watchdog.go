package bench

import (
	"context"
	"fmt"
	"time"
)

// watchdog fails a run whose cluster stopped answering: a bench against an
// instance that died must say so within a bounded time, not print the same
// progress line until its timeout. It is checked at each progress line.
type watchdog struct {
	alive func(context.Context) error // nil: no check
	after time.Duration
	now   func() time.Time
	since time.Time // when the checks started failing; zero while they pass
}

func newWatchdog(o Options) *watchdog {
	return &watchdog{alive: o.Alive, after: o.UnreachableAfter, now: time.Now}
}

// check returns an error once alive has failed for w.after without a pass.
func (w *watchdog) check(ctx context.Context) error {
	if w.alive == nil {
		return nil
	}
	err := w.alive(ctx)
	if err == nil || ctx.Err() != nil {
		w.since = time.Time{}
		return nil
	}
	now := w.now()
	if w.since.IsZero() {
		w.since = now
	}
	if now.Sub(w.since) >= w.after {
		return fmt.Errorf("the cluster has not been reachable for %s, giving up: %w", w.after, err)
	}
	return nil
}
