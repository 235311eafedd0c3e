package integration

import (
	"testing"
	"time"
)

// A fence is needed once per stop, and one left behind by an object that
// went before its quota was given back is forgotten after fenceMemory.
func TestFencesAreRememberedPerStopAndForgottenLater(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	var f Fences
	if !f.needs("a", "stop-1") {
		t.Fatal("an object never fenced does not need one")
	}
	f.mark("a", "stop-1", now)
	if f.needs("a", "stop-1") || !f.needs("a", "stop-2") {
		t.Error("a fenced stop is fenced again, or another stop is not")
	}
	f.mark("b", "stop-9", now.Add(fenceMemory+time.Second))
	if _, kept := f.by["a"]; kept || len(f.by) != 1 {
		t.Errorf("fences after an hour and more: %v; want a's forgotten", f.by)
	}
}
