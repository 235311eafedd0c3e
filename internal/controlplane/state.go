package controlplane

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Phase is where an instance is in its life.
type Phase string

const (
	PhaseStarting Phase = "Starting"
	PhaseRunning  Phase = "Running"
	PhaseStopping Phase = "Stopping"
	PhaseStopped  Phase = "Stopped"
	PhaseFailed   Phase = "Failed"
)

// State is what the supervisor records in instance.json, for `berth status`
// and `berth down` running in other processes.
type State struct {
	Name       string           `json:"name"`
	Phase      Phase            `json:"phase"`
	Supervisor ProcessRef       `json:"supervisor"`
	StartedAt  time.Time        `json:"startedAt"`
	StoppedAt  *time.Time       `json:"stoppedAt,omitempty"`
	Kubeconfig string           `json:"kubeconfig"`
	Ports      Ports            `json:"ports"`
	Components []ComponentState `json:"components"`
	Failure    *Failure         `json:"failure,omitempty"`
	// AuditWrites says kube-apiserver logs its writes (Layout.WritesLog).
	AuditWrites bool `json:"auditWrites,omitempty"`
}

// ProcessRef names one process for good: a pid plus its start time, so a pid
// the kernel has since reused is recognised as someone else's.
type ProcessRef struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

// Alive reports whether the referenced process still runs.
func (r ProcessRef) Alive() bool { return sameProcessAlive(r.PID, r.StartTime) }

// ComponentState is one component as last started.
type ComponentState struct {
	Name      string     `json:"name"`
	Process   ProcessRef `json:"process"`
	Port      int        `json:"port"`
	HealthURL string     `json:"healthURL"`
	Log       string     `json:"log"`
	// Started is when its process was started.
	Started time.Time `json:"started"`
	// Restarts counts the times it was restarted after exiting on its own.
	Restarts int `json:"restarts,omitempty"`
	// LastExit is how it ended the last time it exited on its own.
	LastExit *Exit `json:"lastExit,omitempty"`
}

// Exit is how a component's process ended.
type Exit struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Failure records why an instance stopped on its own.
type Failure struct {
	Component string    `json:"component"`
	Message   string    `json:"message"`
	Log       string    `json:"log,omitempty"`
	LogTail   []string  `json:"logTail,omitempty"`
	At        time.Time `json:"at"`
}

// ComponentError is a component that failed to start or stopped on its own. Its
// message names the component and quotes the end of its log, which is almost
// always where the reason is.
type ComponentError struct {
	Component string
	Problem   string
	Log       string
	LogTail   []string
}

func (e *ComponentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Component, e.Problem)
	if len(e.LogTail) > 0 {
		fmt.Fprintf(&b, "\nlast lines of %s:", e.Log)
		for _, l := range e.LogTail {
			b.WriteString("\n    ")
			b.WriteString(l)
		}
	}
	return b.String()
}

// ReadState loads instance.json. A missing file gives (nil, nil).
func ReadState(l Layout) (*State, error) {
	data, err := os.ReadFile(l.StateFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s is corrupt (%v); it holds only runtime state, so deleting it is safe once no berth runs on this directory", l.StateFile(), err)
	}
	return &s, nil
}

func writeState(l Layout, s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(l.StateFile(), append(data, '\n'), 0o600)
}
