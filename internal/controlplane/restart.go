package controlplane

import "time"

// RestartPolicy says how a component that exits on its own is restarted, as
// a kubelet restarts a crashed container. What counts is how long the
// process had run: one that exits within Stable of starting is crashing
// (a bad flag, a port taken, data it cannot read), and is restarted after a
// backoff that doubles with each such exit within Window, from Base up to
// Max, and not at all at the Limit-th within Window (a crash loop), which
// stops the instance with the component's last words in `berth status`.
// One that had run for Stable or more was working and died (killed, say):
// it is restarted after Base, however often that happens.
type RestartPolicy struct {
	Base, Max time.Duration
	Limit     int
	Window    time.Duration
	Stable    time.Duration
}

// DefaultRestartPolicy restarts a component that crashed within 10s of
// starting after 1s, 2s, 4s, 8s, and gives up at the fifth such crash
// within five minutes.
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{Base: time.Second, Max: 30 * time.Second, Limit: 5, Window: 5 * time.Minute, Stable: 10 * time.Second}
}

// next decides on a component that exited at now after running for ran,
// having crashed (exited within Stable of starting) before at the times in
// crashes: whether to restart it, after how long, and whether this exit is
// a crash too.
func (p RestartPolicy) next(crashes []time.Time, now time.Time, ran time.Duration) (delay time.Duration, restart, crash bool) {
	if ran >= p.Stable {
		return p.Base, true, false
	}
	recent := p.recent(crashes, now) + 1
	if recent >= p.Limit {
		return 0, false, true
	}
	delay = p.Base
	for i := 1; i < recent && delay < p.Max; i++ {
		delay *= 2
	}
	return min(delay, p.Max), true, true
}

// recent counts the crashes within Window before now.
func (p RestartPolicy) recent(crashes []time.Time, now time.Time) int {
	n := 0
	for _, t := range crashes {
		if now.Sub(t) < p.Window {
			n++
		}
	}
	return n
}
