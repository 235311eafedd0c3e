package chaos

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// Result is how one fault went; durations count from the run's start
// (KilledAt) or from the kill (the others).
type Result struct {
	Fault
	KilledAt time.Duration `json:"killedAt"`
	// Back: the component was restarted and healthy again.
	Back time.Duration `json:"back"`
	// Recovered: back, and admissions went on (a workload was admitted
	// after the kill), or nothing was waiting to be admitted.
	Recovered time.Duration `json:"recovered"`
	Error     string        `json:"error,omitempty"`
}

// Progress is what the run has done so far.
type Progress struct {
	Admitted int // admissions so far
	Waiting  int // workloads created and waiting for quota
}

// Injector carries out a plan against an instance, through the functions it
// is given.
type Injector struct {
	Plan []Fault
	// Kill kills a component (SIGKILL); Up reports how often it was
	// restarted and whether it answers its health check.
	Kill func(component string) error
	Up   func(component string) (restarts int, healthy bool, err error)
	// Progress reads the run's progress.
	Progress func() Progress
	Log      io.Writer
	// Poll is how often it looks (default 100ms); BackTimeout bounds the
	// wait for a component to come back (default 2 minutes).
	Poll, BackTimeout time.Duration
}

// Run kills each planned component at its moment (after start), once the
// previous victim is back, and follows its recovery. It returns the
// results so far when ctx ends (the run is over).
func (in *Injector) Run(ctx context.Context, start time.Time) []Result {
	poll := in.Poll
	if poll == 0 {
		poll = 100 * time.Millisecond
	}
	backTimeout := in.BackTimeout
	if backTimeout == 0 {
		backTimeout = 2 * time.Minute
	}
	log := in.Log
	if log == nil {
		log = io.Discard
	}
	var out []Result
	wait := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for _, f := range in.Plan {
		if d := time.Until(start.Add(f.At)); d > 0 && !wait(d) {
			return out
		}
		restarts, err := in.healthy(ctx, f.Component, poll, backTimeout)
		r := Result{Fault: f}
		if err == nil {
			before := in.Progress()
			killed := time.Now()
			r.KilledAt = killed.Sub(start)
			err = in.Kill(f.Component)
			if err == nil {
				what := "killed " + f.Component
				if f.Component == LeaderPause {
					what = "paused the leading controller replica"
				}
				fmt.Fprintf(log, "chaos: %s at %.1fs\n", what, r.KilledAt.Seconds())
				err = in.follow(ctx, &r, killed, restarts, before, poll, backTimeout)
			}
		}
		if err != nil {
			r.Error = err.Error()
			fmt.Fprintf(log, "chaos: %s: %v\n", f.Component, err)
		} else if r.Recovered > 0 {
			fmt.Fprintf(log, "chaos: %s back after %.1fs, admitting again after %.1fs\n", f.Component,
				r.Back.Seconds(), r.Recovered.Seconds())
		}
		out = append(out, r)
		if ctx.Err() != nil {
			return out
		}
	}
	return out
}

// healthy waits until a victim is up (a paused leader's process may be
// starting again, say) and gives its restart count then.
func (in *Injector) healthy(ctx context.Context, component string, poll, timeout time.Duration) (int, error) {
	began := time.Now()
	for {
		n, ok, err := in.Up(component)
		if err == nil && ok {
			return n, nil
		}
		if time.Since(began) > timeout {
			if err == nil {
				err = fmt.Errorf("not healthy within %s, so not hit again", timeout)
			}
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// follow waits until the killed component is back (restarted and healthy),
// then until admissions go on.
func (in *Injector) follow(ctx context.Context, r *Result, killed time.Time, restarts int, before Progress, poll, backTimeout time.Duration) error {
	for r.Back == 0 {
		n, healthy, err := in.Up(r.Component)
		if err == nil && n > restarts && healthy {
			r.Back = time.Since(killed)
			break
		}
		if time.Since(killed) > backTimeout {
			return fmt.Errorf("not back %s after it was killed", backTimeout)
		}
		select {
		case <-ctx.Done():
			return nil // the run ended first
		case <-time.After(poll):
		}
	}
	for {
		p := in.Progress()
		if p.Admitted > before.Admitted || p.Waiting == 0 {
			r.Recovered = time.Since(killed)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// Summary is the recovery of one kind of fault.
type Summary struct {
	Component string        `json:"component"`
	Faults    int           `json:"faults"`
	Failed    int           `json:"failed"`
	Median    time.Duration `json:"medianRecovery"`
	Max       time.Duration `json:"maxRecovery"`
}

// Summarize gives each kind's count and recovery times, in the order of
// Kinds.
func Summarize(results []Result) []Summary {
	var out []Summary
	for _, c := range Kinds(true) {
		s := Summary{Component: c}
		var rec []time.Duration
		for _, r := range results {
			if r.Component != c {
				continue
			}
			s.Faults++
			switch {
			case r.Error != "":
				s.Failed++
			case r.Recovered > 0:
				rec = append(rec, r.Recovered)
			}
		}
		if s.Faults == 0 {
			continue
		}
		slices.Sort(rec)
		if len(rec) > 0 {
			s.Median, s.Max = rec[len(rec)/2], rec[len(rec)-1]
		}
		out = append(out, s)
	}
	return out
}
