package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWatchdogFailsOnlyAfterAnUnbrokenOutage(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var down error
	w := &watchdog{alive: func(context.Context) error { return down }, after: 30 * time.Second, now: func() time.Time { return now }}
	step := func(d time.Duration) error {
		now = now.Add(d)
		return w.check(context.Background())
	}
	down = errors.New("connection refused")
	if err := step(0); err != nil {
		t.Fatalf("failed at the first failed check: %v", err)
	}
	if err := step(20 * time.Second); err != nil {
		t.Fatalf("failed after 20s: %v", err)
	}
	down = nil // it came back: the outage starts over
	if err := step(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	down = errors.New("connection refused")
	if err := step(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := step(29 * time.Second); err != nil {
		t.Fatalf("failed 29s into a new outage: %v", err)
	}
	err := step(2 * time.Second)
	if err == nil || !strings.Contains(err.Error(), "not been reachable for 30s") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("after 31s: %v, want the outage named", err)
	}
}
