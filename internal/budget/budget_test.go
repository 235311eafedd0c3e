package budget

import (
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

// Two GPUs held for three hours spend six GPU-hours; a rolling day forgets
// them a day after (and at most one slice later).
func TestRollingWindowSpendsAndForgets(t *testing.T) {
	s := Spec{Resource: "nvidia.com/gpu", Hours: 10, Rolling: 24 * time.Hour}
	l := s.Charge(Ledger{}, 2, t0)
	l = s.Charge(l, 2, t0.Add(time.Hour))
	l = s.Charge(l, 0, t0.Add(3*time.Hour))
	if got := s.Spent(l, t0.Add(3*time.Hour)); !near(got, 6) {
		t.Fatalf("spent %v after two GPUs for three hours; want 6", got)
	}
	// Nothing held: nothing more is spent.
	l = s.Charge(l, 0, t0.Add(10*time.Hour))
	if got := s.Spent(l, t0.Add(10*time.Hour)); !near(got, 6) {
		t.Fatalf("spent %v with nothing held; want still 6", got)
	}
	if got := s.Spent(l, t0.Add(28*time.Hour)); got != 0 {
		t.Fatalf("spent %v more than a day and a slice later; want 0", got)
	}
	if l = s.Charge(l, 0, t0.Add(28*time.Hour)); len(l.Buckets) != 0 {
		t.Fatalf("buckets %v kept after they left the window", l.Buckets)
	}
}

// A charge counts the larger of what was held at the last charge and now:
// an admission just made, or a release, between two charges is never
// counted short.
func TestChargeNeverCountsShort(t *testing.T) {
	s := Spec{Resource: "cpu", Hours: 100, Rolling: 24 * time.Hour}
	l := s.Charge(Ledger{}, 0, t0)
	l = s.Charge(l, 4, t0.Add(time.Hour)) // admitted some time in that hour
	if got := s.Spent(l, t0.Add(time.Hour)); !near(got, 4) {
		t.Fatalf("spent %v; want 4 (4 cpu for the whole hour, at most)", got)
	}
	// A restart: the controller was away for two hours; the ledger it takes
	// up says 4 cpu were in use, and nothing could be admitted meanwhile.
	l = s.Charge(l, 1, t0.Add(3*time.Hour))
	if got := s.Spent(l, t0.Add(3*time.Hour)); !near(got, 12) {
		t.Fatalf("spent %v after a two-hour gap at 4 cpu; want 12", got)
	}
}

// A calendar month counts from its first day, and a charge across the
// month's end goes half to each.
func TestCalendarMonth(t *testing.T) {
	s := Spec{Resource: "cpu", Hours: 5}
	end := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	l := s.Charge(Ledger{}, 2, end)
	l = s.Charge(l, 2, end.Add(2*time.Hour))
	if got := s.Spent(l, end.Add(2*time.Hour)); !near(got, 2) {
		t.Fatalf("spent %v in December; want 2 (November's 2 gone)", got)
	}
	if len(l.Buckets) != 1 || !l.Buckets[0].Start.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("buckets %+v; want December's alone", l.Buckets)
	}
	l = s.Charge(l, 0, end.Add(4*time.Hour))
	if !(Spec{Resource: "cpu", Hours: 3}).Exhausted(l, end.Add(4*time.Hour)) {
		t.Fatal("6 cpu-hours of 3 is not exhausted")
	}
	at, free := Spec{Resource: "cpu", Hours: 3}.FreeAt(l, end.Add(4*time.Hour))
	if !at.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || !near(free, 3) {
		t.Fatalf("free again at %v (%v); want all 3 on January 1st", at, free)
	}
}

// Spent, the queue says when and how much is free again.
func TestWhySaysWhenItIsFreeAgain(t *testing.T) {
	s := Spec{Resource: "nvidia.com/gpu", Hours: 3, Rolling: 24 * time.Hour, Stop: true}
	l := s.Charge(Ledger{}, 2, t0)
	l = s.Charge(l, 2, t0.Add(2*time.Hour))
	now := t0.Add(2 * time.Hour)
	if !s.Exhausted(l, now) {
		t.Fatal("4 of 3 GPU-hours is not exhausted")
	}
	at, free := s.FreeAt(l, now)
	// 2 GPU-hours in each of the first two hourly slices: the first leaves
	// at 1h+24h, leaving 2 of 3 spent.
	if !at.Equal(t0.Add(25*time.Hour)) || !near(free, 1) {
		t.Fatalf("free at %v (%v hours); want %v with 1 free", at, free, t0.Add(25*time.Hour))
	}
	want := "its budget of 3 nvidia.com/gpu-hours per 24h0m0s (rolling) is spent: it admits nothing until 2026-11-29T01:00:00Z at the earliest"
	if got := s.Why(l, now); got != want {
		t.Fatalf("why:\n%s\nwant\n%s", got, want)
	}
	if s.Stop = false; !strings.Contains(s.Why(l, now), "admits only within its nominal quota, without borrowing") {
		t.Fatal(s.Why(l, now))
	}
	low := int32(-5)
	if s.LowerTo = &low; !strings.Contains(s.Why(l, now), "admits at priority -5 at most until") {
		t.Fatal(s.Why(l, now))
	}
}

// Whatever is held when, a window longer than the trace has spent exactly
// the larger of each interval's two ends times its length: never less than
// what was held; and once FreeAt comes, the window has room.
func FuzzChargeCountsAllThatWasHeld(f *testing.F) {
	f.Add([]byte{3, 0, 9, 1, 200}, []byte{10, 60, 1, 250, 3})
	f.Fuzz(func(t *testing.T, held, gaps []byte) {
		long := Spec{Resource: "cpu", Hours: 1e18, Rolling: 1e6 * time.Hour}
		short := Spec{Resource: "cpu", Hours: 50, Rolling: time.Hour}
		var l, ls Ledger
		now := t0
		want, prev := 0.0, 0.0
		for i, h := range held {
			if i > 0 && len(gaps) > 0 {
				d := time.Duration(gaps[i%len(gaps)]) * time.Minute
				now = now.Add(d)
				want += max(prev, float64(h)) * d.Hours()
			}
			l = long.Charge(l, float64(h), now)
			ls = short.Charge(ls, float64(h), now)
			prev = float64(h)
		}
		if got := long.Spent(l, now); !near(got, want) {
			t.Fatalf("spent %v; want %v", got, want)
		}
		if at, _ := short.FreeAt(ls, now); !at.IsZero() && short.Exhausted(ls, at) {
			t.Fatalf("still exhausted at FreeAt %v: spent %v of %v", at, short.Spent(ls, at), short.Hours)
		}
	})
}

// With 6 of 10 cpu-hours spent, four cpu in use spend the rest in an
// hour; at that time it is spent.
func TestSpentAtIsWhenWhatIsLeftRunsOut(t *testing.T) {
	s := Spec{Resource: "cpu", Hours: 10, Rolling: 24 * time.Hour}
	l := s.Charge(Ledger{}, 2, t0)
	l = s.Charge(l, 2, t0.Add(3*time.Hour)) // 6 spent
	at, ok := s.SpentAt(l, 4, t0.Add(3*time.Hour))
	if !ok || at.Sub(t0.Add(4*time.Hour)).Abs() > time.Millisecond {
		t.Fatalf("SpentAt = %v, %v; want about %v", at, ok, t0.Add(4*time.Hour))
	}
	if l = s.Charge(l, 4, at); !s.Exhausted(l, at) {
		t.Fatalf("at %v, spent %v of 10: not exhausted", at, s.Spent(l, at))
	}
	if _, ok := s.SpentAt(l, 0, t0.Add(3*time.Hour)); !ok {
		t.Fatal("a spent budget says it never will be")
	}
	if _, ok := s.SpentAt(Ledger{}, 0, t0); ok {
		t.Fatal("nothing in use, yet SpentAt names a time")
	}
}
