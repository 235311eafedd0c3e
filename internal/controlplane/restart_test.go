package controlplane

import (
	"testing"
	"time"
)

func TestRestartPolicy(t *testing.T) {
	p := RestartPolicy{Base: time.Second, Max: 5 * time.Second, Limit: 4, Window: time.Minute, Stable: 10 * time.Second}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s ...int) []time.Time {
		var out []time.Time
		for _, v := range s {
			out = append(out, t0.Add(time.Duration(v)*time.Second))
		}
		return out
	}
	quick, long := time.Second, 10*time.Second
	for _, tc := range []struct {
		name      string
		crashes   []time.Time
		now       time.Time
		ran       time.Duration
		wantDelay time.Duration
		restart   bool
		crash     bool
	}{
		{"first crash", nil, t0, quick, time.Second, true, true},
		{"second within the window", at(0), t0.Add(10 * time.Second), quick, 2 * time.Second, true, true},
		{"third within the window", at(0, 10), t0.Add(20 * time.Second), quick, 4 * time.Second, true, true},
		{"fourth within the window: a crash loop", at(0, 10, 20), t0.Add(30 * time.Second), quick, 0, false, true},
		{"old crashes no longer count", at(0, 10, 20), t0.Add(75 * time.Second), quick, 2 * time.Second, true, true},
		{"backoff stops at Max", at(0, 1, 2), t0.Add(3 * time.Second), quick, 0, false, true},
		// Killed after it had run a while: no crash, however many came
		// before, and no backoff.
		{"ran Stable: not a crash", at(0, 10, 20), t0.Add(30 * time.Second), long, time.Second, true, false},
		{"ran longer: not a crash", nil, t0, time.Hour, time.Second, true, false},
	} {
		d, ok, crash := p.next(tc.crashes, tc.now, tc.ran)
		if d != tc.wantDelay || ok != tc.restart || crash != tc.crash {
			t.Errorf("%s: delay %s restart %v crash %v, want %s %v %v", tc.name, d, ok, crash, tc.wantDelay, tc.restart, tc.crash)
		}
	}
	capped := RestartPolicy{Base: time.Second, Max: 3 * time.Second, Limit: 10, Window: time.Minute, Stable: time.Minute}
	if d, _, _ := capped.next(at(0, 1, 2, 3, 4), t0.Add(5*time.Second), quick); d != 3*time.Second {
		t.Errorf("backoff %s, want it capped at 3s", d)
	}
}
