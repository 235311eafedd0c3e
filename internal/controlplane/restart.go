package controlplane

import "time"

// RestartPolicy says how a component that exits on its own is restarted, as
// a kubelet restarts a crashed container: after a backoff that doubles with
// each recent exit, from Base up to Max, and not at all once it has exited
// Limit times within Window (a crash loop), which stops the instance with
// the component's last words in `berth status`.
type RestartPolicy struct {
	Base, Max time.Duration
	Limit     int
	Window    time.Duration
}

// DefaultRestartPolicy restarts after 1s, 2s, 4s, 8s and gives up at the
// fifth exit within five minutes.
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{Base: time.Second, Max: 30 * time.Second, Limit: 5, Window: 5 * time.Minute}
}

// next decides on a component that exited at now, having exited before at
// the times in earlier: whether to restart it, and after how long.
func (p RestartPolicy) next(earlier []time.Time, now time.Time) (delay time.Duration, restart bool) {
	recent := p.recent(earlier, now) + 1
	if recent >= p.Limit {
		return 0, false
	}
	delay = p.Base
	for i := 1; i < recent && delay < p.Max; i++ {
		delay *= 2
	}
	return min(delay, p.Max), true
}

// recent counts the exits within Window before now.
func (p RestartPolicy) recent(exits []time.Time, now time.Time) int {
	n := 0
	for _, t := range exits {
		if now.Sub(t) < p.Window {
			n++
		}
	}
	return n
}
