package controlplane

import (
	"time"

	"context"
	"fmt"
	"path/filepath"
	"sync"
)

// Status is an instance as seen from outside its supervisor.
type Status struct {
	Name       string            `json:"name"`
	DataDir    string            `json:"dataDir"`
	Running    bool              `json:"running"`
	Phase      Phase             `json:"phase"`
	Kubeconfig string            `json:"kubeconfig,omitempty"`
	Supervisor ProcessRef        `json:"supervisor"`
	Components []ComponentStatus `json:"components"`
	Failure    *Failure          `json:"failure,omitempty"`
}

// ComponentStatus is one component's process and health.
type ComponentStatus struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Port    int    `json:"port"`
	Running bool   `json:"running"`
	// Health is "ok", the failing check's error, or "-" when not running.
	Health string `json:"health"`
	Log    string `json:"log"`
	// Started is when its process was started.
	Started time.Time `json:"started"`
	// Restarts after exiting on its own, and how it ended the last time.
	Restarts int   `json:"restarts"`
	LastExit *Exit `json:"lastExit,omitempty"`
}

// Healthy reports whether the instance runs with every component healthy.
func (s *Status) Healthy() bool {
	if !s.Running || s.Phase != PhaseRunning {
		return false
	}
	for _, c := range s.Components {
		if !c.Running || c.Health != "ok" {
			return false
		}
	}
	return true
}

// ErrNoInstance is returned for a data directory where berth never ran.
type ErrNoInstance struct{ DataDir string }

func (e *ErrNoInstance) Error() string {
	return fmt.Sprintf("no berth instance in %s (start one with: berth up --data-dir %s)", e.DataDir, e.DataDir)
}

// ReadStatus reports on the instance in dataDir: whether its supervisor runs
// (it holds the directory lock), each component's process and health, and the
// failure that stopped it last, if one did.
func ReadStatus(ctx context.Context, dataDir string) (*Status, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	l := Layout{Dir: dir}
	st, err := ReadState(l)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, &ErrNoInstance{DataDir: dir}
	}
	s := &Status{Name: st.Name, DataDir: dir, Phase: st.Phase, Kubeconfig: st.Kubeconfig,
		Supervisor: st.Supervisor, Failure: st.Failure}
	s.Running = locked(l) && st.Supervisor.Alive()
	if !s.Running && (st.Phase == PhaseRunning || st.Phase == PhaseStarting || st.Phase == PhaseStopping) {
		// The supervisor died without recording it (SIGKILL, OOM, power loss).
		s.Phase = PhaseFailed
		if s.Failure == nil {
			s.Failure = &Failure{Message: fmt.Sprintf("the supervisor (pid %d) exited without stopping cleanly; see %s",
				st.Supervisor.PID, l.LogFile("berth"))}
		}
	}
	hc, herr := healthClient(l)
	s.Components = make([]ComponentStatus, len(st.Components))
	var wg sync.WaitGroup
	for k, c := range st.Components {
		cs := ComponentStatus{Name: c.Name, PID: c.Process.PID, Port: c.Port, Log: c.Log, Started: c.Started,
			Running: c.Process.Alive(), Health: "-", Restarts: c.Restarts, LastExit: c.LastExit}
		s.Components[k] = cs
		if cs.Running {
			if herr != nil {
				s.Components[k].Health = herr.Error()
			} else {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := checkHealth(ctx, hc, c.HealthURL); err != nil {
						s.Components[k].Health = err.Error()
					} else {
						s.Components[k].Health = "ok"
					}
				}()
			}
		}
	}
	wg.Wait()
	return s, nil
}
