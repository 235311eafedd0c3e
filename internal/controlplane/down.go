package controlplane

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"
)

// DownTimeout is how long Down waits for an orderly stop before it kills what
// is left. It exceeds the sum of the components' stop grace periods.
const DownTimeout = 90 * time.Second

// Down stops the instance in dataDir and returns once its supervisor and every
// component it started have exited. It asks the supervisor to stop (SIGTERM),
// which stops the components in order; if that has not finished within
// timeout, it kills the supervisor and the components. An instance that is not
// running is not an error: ran reports whether there was anything to stop.
func Down(ctx context.Context, dataDir string, timeout time.Duration) (ran bool, err error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return false, err
	}
	l := Layout{Dir: dir}
	st, err := ReadState(l)
	if err != nil {
		return false, err
	}
	if st == nil {
		return false, nil
	}
	refs := []ProcessRef{st.Supervisor}
	for _, c := range st.Components {
		refs = append(refs, c.Process)
	}
	anyAlive := func() bool { // any process of the instance still running
		for _, r := range refs {
			if r.Alive() {
				return true
			}
		}
		return false
	}
	if !anyAlive() {
		return false, nil
	}
	if st.Supervisor.Alive() {
		_ = syscall.Kill(st.Supervisor.PID, syscall.SIGTERM)
	} else {
		// Components without their supervisor (it died before Pdeathsig could
		// act): nothing will stop them in order, so stop them here, in reverse.
		for k := len(st.Components) - 1; k >= 0; k-- {
			if r := st.Components[k].Process; r.Alive() {
				_ = syscall.Kill(r.PID, syscall.SIGTERM)
			}
		}
	}
	if err := waitGone(ctx, refs, timeout); err == errTimeout {
		for _, r := range refs {
			if r.Alive() {
				_ = syscall.Kill(r.PID, syscall.SIGKILL)
			}
		}
		if err := waitGone(ctx, refs, 10*time.Second); err != nil {
			return true, fmt.Errorf("processes of %s still alive 10s after SIGKILL: %w", dir, err)
		}
	} else if err != nil {
		return true, err
	}
	return true, nil
}

var errTimeout = errors.New("timed out")

// waitGone polls until none of refs is alive.
func waitGone(ctx context.Context, refs []ProcessRef, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		alive := false
		for _, r := range refs {
			alive = alive || r.Alive()
		}
		if !alive {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return errTimeout
		case <-time.After(50 * time.Millisecond):
		}
	}
}
