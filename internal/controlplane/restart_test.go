package controlplane

import (
	"testing"
	"time"
)

func TestRestartPolicy(t *testing.T) {
	p := RestartPolicy{Base: time.Second, Max: 5 * time.Second, Limit: 4, Window: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s ...int) []time.Time {
		var out []time.Time
		for _, v := range s {
			out = append(out, t0.Add(time.Duration(v)*time.Second))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		earlier   []time.Time
		now       time.Time
		wantDelay time.Duration
		restart   bool
	}{
		{"first exit", nil, t0, time.Second, true},
		{"second within the window", at(0), t0.Add(10 * time.Second), 2 * time.Second, true},
		{"third within the window", at(0, 10), t0.Add(20 * time.Second), 4 * time.Second, true},
		{"fourth within the window: a crash loop", at(0, 10, 20), t0.Add(30 * time.Second), 0, false},
		{"old exits no longer count", at(0, 10, 20), t0.Add(75 * time.Second), 2 * time.Second, true},
		{"backoff stops at Max", at(0, 1, 2), t0.Add(3 * time.Second), 0, false},
	} {
		d, ok := p.next(tc.earlier, tc.now)
		if d != tc.wantDelay || ok != tc.restart {
			t.Errorf("%s: delay %s restart %v, want %s %v", tc.name, d, ok, tc.wantDelay, tc.restart)
		}
	}
	long := RestartPolicy{Base: time.Second, Max: 3 * time.Second, Limit: 10, Window: time.Minute}
	if d, _ := long.next(at(0, 1, 2, 3, 4), t0.Add(5*time.Second)); d != 3*time.Second {
		t.Errorf("backoff %s, want it capped at 3s", d)
	}
}
