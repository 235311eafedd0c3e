package budget

import (
	"fmt"
	"math"
	"time"
)

// Slices is how many buckets a rolling window is kept in.
const Slices = 24

// Spec is a ClusterQueue's budget.
type Spec struct {
	// Resource counted, over every flavor.
	Resource string
	// Hours of Resource (in its units) the window allows.
	Hours float64
	// Rolling is the length of a rolling window; 0 for a calendar month
	// (UTC).
	Rolling time.Duration
	// Stop: when spent the queue admits nothing; with LowerTo, it admits at
	// that priority (when a workload's own is higher); otherwise only
	// within its nominal quota, without borrowing.
	Stop    bool
	LowerTo *int32
}

// Bucket is what was spent from Start to the next bucket's Start.
type Bucket struct {
	Start time.Time
	Hours float64
}

// Ledger is what a budget has spent.
type Ledger struct {
	// Buckets, oldest first, those still in the window.
	Buckets []Bucket
	// At is when it was last charged; zero before.
	At time.Time
	// InUse is the resource in use then, in its units.
	InUse float64
}

// bucketStart is the start of the bucket t falls in.
func (s Spec) bucketStart(t time.Time) time.Time {
	if s.Rolling > 0 {
		return t.Truncate(s.slice())
	}
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// slice is a rolling bucket's length, in whole seconds: the API keeps
// times to the second.
func (s Spec) slice() time.Duration {
	return max(time.Second, (s.Rolling / Slices).Truncate(time.Second))
}

// bucketEnd is when the bucket starting at b ends.
func (s Spec) bucketEnd(b time.Time) time.Time {
	if s.Rolling > 0 {
		return b.Add(s.slice())
	}
	return b.AddDate(0, 1, 0)
}

// leaves is when a bucket starting at b stops counting: a rolling window's
// once the window starts after its end; a month's at the month's end.
func (s Spec) leaves(b time.Time) time.Time {
	if s.Rolling > 0 {
		return s.bucketEnd(b).Add(s.Rolling)
	}
	return s.bucketEnd(b)
}

// Charge adds what was held from l.At to now (the larger of l.InUse and
// inUse, per second) and records inUse as in use at now. The first charge
// only records. A now before l.At charges nothing.
func (s Spec) Charge(l Ledger, inUse float64, now time.Time) Ledger {
	out := Ledger{Buckets: append([]Bucket(nil), l.Buckets...), At: l.At, InUse: max(0, inUse)}
	if !l.At.IsZero() && now.After(l.At) {
		rate := max(l.InUse, out.InUse)
		for from := l.At; from.Before(now); {
			b := s.bucketStart(from)
			to := s.bucketEnd(b)
			if to.After(now) {
				to = now
			}
			if h := rate * to.Sub(from).Hours(); h > 0 {
				out.Buckets = add(out.Buckets, b, h)
			}
			from = to
		}
	}
	if now.After(out.At) || out.At.IsZero() {
		out.At = now
	}
	out.Buckets = s.expire(out.Buckets, now)
	return out
}

func add(bs []Bucket, start time.Time, h float64) []Bucket {
	if n := len(bs); n > 0 && bs[n-1].Start.Equal(start) {
		bs[n-1].Hours += h
		return bs
	}
	return append(bs, Bucket{Start: start, Hours: h})
}

func (s Spec) expire(bs []Bucket, now time.Time) []Bucket {
	i := 0
	for i < len(bs) && !s.leaves(bs[i].Start).After(now) {
		i++
	}
	return bs[i:]
}

// Spent is what the window holds at now.
func (s Spec) Spent(l Ledger, now time.Time) float64 {
	var sum float64
	for _, b := range s.expire(l.Buckets, now) {
		sum += b.Hours
	}
	return sum
}

// Exhausted reports whether nothing is left at now.
func (s Spec) Exhausted(l Ledger, now time.Time) bool { return s.Spent(l, now) >= s.Hours }

// FreeAt is when the window has room again if nothing more is spent: the
// time the oldest buckets leave it, and how many hours are free then. Zero
// when it has room now.
func (s Spec) FreeAt(l Ledger, now time.Time) (time.Time, float64) {
	bs := s.expire(l.Buckets, now)
	spent := s.Spent(l, now)
	if spent < s.Hours {
		return time.Time{}, 0
	}
	for i, b := range bs {
		// Summed afresh, as Spent will sum then, not subtracted: the
		// same float sum, so that Exhausted agrees at that time.
		var rest float64
		for _, r := range bs[i+1:] {
			rest += r.Hours
		}
		if rest < s.Hours {
			return s.leaves(b.Start), s.Hours - rest
		}
	}
	return now, s.Hours
}

// SpentAt is the earliest time the budget can be spent when inUse stays
// in use from now on: now when it is spent, false when it never will be
// (nothing in use). Buckets leaving the window meanwhile only make it
// later, so a caller that looks again at that time never looks too late.
func (s Spec) SpentAt(l Ledger, inUse float64, now time.Time) (time.Time, bool) {
	left := s.Hours - s.Spent(l, now)
	if left <= 0 {
		return now, true
	}
	if inUse <= 0 {
		return time.Time{}, false
	}
	// Rounded up to the microsecond: a time a hair early would find it
	// not quite spent and ask again.
	d := time.Duration(math.Ceil(left / inUse * float64(time.Hour) / float64(time.Microsecond)))
	return now.Add(d*time.Microsecond + time.Microsecond), true
}

// Describe says the budget in words, as "2000 nvidia.com/gpu-hours per
// 720h0m0s (rolling)".
func (s Spec) Describe() string {
	window := "calendar month (UTC)"
	if s.Rolling > 0 {
		window = s.Rolling.String() + " (rolling)"
	}
	return fmt.Sprintf("%s %s-hours per %s", trim(s.Hours), s.Resource, window)
}

// Why says why the queue holds back when its budget is exhausted at now,
// and until when at the earliest. It leaves out what changes with every
// charge (the amount spent), so that it is said again only when it changes
// in substance.
func (s Spec) Why(l Ledger, now time.Time) string {
	at, _ := s.FreeAt(l, now)
	what := "admits only within its nominal quota, without borrowing"
	switch {
	case s.Stop:
		what = "admits nothing"
	case s.LowerTo != nil:
		what = fmt.Sprintf("admits at priority %d at most", *s.LowerTo)
	}
	return fmt.Sprintf("its budget of %s is spent: it %s until %s at the earliest",
		s.Describe(), what, at.UTC().Format(time.RFC3339))
}

func trim(v float64) string {
	return fmt.Sprint(math.Round(v*1000) / 1000)
}
