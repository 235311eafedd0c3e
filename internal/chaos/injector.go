package chaos

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
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

// Victim is what Up reports of a fault's victim.
type Victim struct {
	// Restarts counts how often it came back (for a leader pause: how
	// often a replica led again).
	Restarts int
	// Healthy: it answers its health check (a replica leads).
	Healthy bool
	// Settled: it may be hit now. `berth up` counts a component that exits
	// soon after it started as crashing, and gives up on it after a few
	// such crashes; a process that has not run that long yet is not
	// settled.
	Settled bool
}

// Injector carries out a plan against an instance, through the functions it
// is given. Faults of different kinds run side by side, each kind in its
// own lane: a kind's next fault waits for its moment, and for its victim
// to be healthy and settled; faults of other kinds may come meanwhile, as
// they would in production.
type Injector struct {
	Plan []Fault
	// Kill kills a component (SIGKILL), or pauses the leader; Up reports on
	// the victim.
	Kill func(component string) error
	Up   func(component string) (Victim, error)
	// Progress reads the run's progress.
	Progress func() Progress
	Log      io.Writer
	// Poll is how often it looks (default 100ms); BackTimeout bounds the
	// wait for a victim to come back, and to settle (default 2 minutes).
	Poll, BackTimeout time.Duration
}

// Run carries out the plan from start, each kind's faults in turn, and
// follows each recovery. It returns the results, in the order of the faults,
// once every fault was injected and recovered from, or when ctx ends (the
// run is over) and every victim hit is back.
func (in *Injector) Run(ctx context.Context, start time.Time) []Result {
	if in.Poll == 0 {
		in.Poll = 100 * time.Millisecond
	}
	if in.BackTimeout == 0 {
		in.BackTimeout = 2 * time.Minute
	}
	log := &lockedWriter{w: in.Log}
	if in.Log == nil {
		log.w = io.Discard
	}
	lanes := map[string][]Fault{}
	for _, f := range in.Plan {
		lanes[f.Component] = append(lanes[f.Component], f)
	}
	var (
		mu  sync.Mutex
		out []*Result
		wg  sync.WaitGroup
	)
	for _, faults := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, f := range faults {
				r := &Result{Fault: f}
				recovered, ok := in.one(ctx, start, r, log)
				if !ok {
					return
				}
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
				if recovered != nil {
					wg.Add(1)
					go func() { defer wg.Done(); recovered() }()
				}
			}
		}()
	}
	wg.Wait()
	results := make([]Result, len(out))
	for i, r := range out {
		results[i] = *r
	}
	slices.SortFunc(results, func(a, b Result) int { return int(a.KilledAt - b.KilledAt) })
	return results
}

// one injects f (into r) at its moment, once its victim is up and settled,
// and waits until the victim is back; false when the run ended before f was
// injected. What it returns, when not nil, follows the recovery until
// admissions go on, while the lane's next fault may come meanwhile.
func (in *Injector) one(ctx context.Context, start time.Time, r *Result, log io.Writer) (recovered func(), ok bool) {
	if !sleep(ctx, time.Until(start.Add(r.At))) {
		return nil, false
	}
	v, err := in.settled(ctx, r.Component)
	if ctx.Err() != nil {
		return nil, false
	}
	var before Progress
	var killed time.Time
	if err == nil {
		before = in.Progress()
		killed = time.Now()
		r.KilledAt = killed.Sub(start)
		if err = in.Kill(r.Component); err == nil {
			what := "killed " + r.Component
			if r.Component == LeaderPause {
				what = "paused the leading controller replica"
			}
			fmt.Fprintf(log, "chaos: %s at %.1fs\n", what, r.KilledAt.Seconds())
			// Once hit, a victim must come back, even if the work ends
			// meanwhile: BackTimeout bounds the wait.
			err = in.back(context.WithoutCancel(ctx), r, killed, v.Restarts)
		}
	}
	if err != nil {
		r.Error = err.Error()
		fmt.Fprintf(log, "chaos: %s: %v\n", r.Component, err)
		return nil, true
	}
	return func() {
		if in.recovered(ctx, r, killed, before) {
			fmt.Fprintf(log, "chaos: %s at %.1fs: back after %.1fs, admitting again after %.1fs\n", r.Component,
				r.KilledAt.Seconds(), r.Back.Seconds(), r.Recovered.Seconds())
		}
	}, true
}

// settled waits until a victim is healthy (a paused leader's process may
// be starting again, say) and settled, and reports on it then.
func (in *Injector) settled(ctx context.Context, component string) (Victim, error) {
	began := time.Now()
	for {
		v, err := in.Up(component)
		if err == nil && v.Healthy && v.Settled {
			return v, nil
		}
		if time.Since(began) > in.BackTimeout {
			if err == nil {
				err = fmt.Errorf("not healthy and settled within %s, so not hit again", in.BackTimeout)
			}
			return v, err
		}
		if !sleep(ctx, in.Poll) {
			return v, ctx.Err()
		}
	}
}

// back waits until the victim is back (restarted and healthy).
func (in *Injector) back(ctx context.Context, r *Result, killed time.Time, restarts int) error {
	for {
		v, err := in.Up(r.Component)
		if err == nil && v.Restarts > restarts && v.Healthy {
			r.Back = time.Since(killed)
			return nil
		}
		if time.Since(killed) > in.BackTimeout {
			return fmt.Errorf("not back %s after it was hit", in.BackTimeout)
		}
		sleep(ctx, in.Poll)
	}
}

// recovered waits until admissions go on after the fault; false when the
// run ended first.
func (in *Injector) recovered(ctx context.Context, r *Result, killed time.Time, before Progress) bool {
	for {
		p := in.Progress()
		if p.Admitted > before.Admitted || p.Waiting == 0 {
			r.Recovered = time.Since(killed)
			return true
		}
		if !sleep(ctx, in.Poll) {
			return false
		}
	}
}

// sleep waits d, or less if ctx ends first; false then.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lockedWriter lets the lanes log side by side.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
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
