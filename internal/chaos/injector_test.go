package chaos_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/chaos"
)

// fakeInstance restarts a killed component after a delay, and admits a
// workload a while after the controller is back.
type fakeInstance struct {
	mu       sync.Mutex
	restarts map[string]int
	downTill map[string]time.Time
	admitted int
	killed   []string
}

func (f *fakeInstance) kill(c string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, c)
	f.restarts[c]++
	f.downTill[c] = time.Now().Add(30 * time.Millisecond)
	go func() {
		time.Sleep(60 * time.Millisecond) // the fake's own workload being admitted, not synchronisation
		f.mu.Lock()
		f.admitted++
		f.mu.Unlock()
	}()
	return nil
}

func (f *fakeInstance) up(c string) (int, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restarts[c], time.Now().After(f.downTill[c]), nil
}

func (f *fakeInstance) progress() chaos.Progress {
	f.mu.Lock()
	defer f.mu.Unlock()
	return chaos.Progress{Admitted: f.admitted, Waiting: 5}
}

func TestInjectorKillsInOrderAndMeasuresRecovery(t *testing.T) {
	f := &fakeInstance{restarts: map[string]int{}, downTill: map[string]time.Time{}}
	plan := []chaos.Fault{{At: 0, Component: "etcd"}, {At: 10 * time.Millisecond, Component: "berth-sim"}}
	var log strings.Builder
	in := chaos.Injector{Plan: plan, Kill: f.kill, Up: f.up, Progress: f.progress, Log: &log, Poll: 5 * time.Millisecond}
	results := in.Run(context.Background(), time.Now())
	if len(results) != 2 || strings.Join(f.killed, ",") != "etcd,berth-sim" {
		t.Fatalf("results %+v, killed %v", results, f.killed)
	}
	for _, r := range results {
		if r.Error != "" || r.Back < 30*time.Millisecond || r.Recovered < r.Back || r.Recovered < 60*time.Millisecond {
			t.Errorf("%+v: want back after its downtime, recovered after the next admission", r)
		}
	}
	s := chaos.Summarize(results)
	if len(s) != 2 || s[0].Component != "etcd" || s[0].Faults != 1 || s[0].Max == 0 {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(log.String(), "chaos: killed etcd") {
		t.Errorf("log:\n%s", log.String())
	}
}

func TestInjectorReportsAComponentThatDoesNotComeBack(t *testing.T) {
	killed := false
	in := chaos.Injector{Plan: []chaos.Fault{{Component: "etcd"}},
		Kill:        func(string) error { killed = true; return nil },
		Up:          func(string) (int, bool, error) { return 0, !killed, nil },
		Progress:    func() chaos.Progress { return chaos.Progress{} },
		Poll:        time.Millisecond,
		BackTimeout: 20 * time.Millisecond}
	r := in.Run(context.Background(), time.Now())
	if len(r) != 1 || !strings.Contains(r[0].Error, "not back") {
		t.Errorf("%+v", r)
	}
	if s := chaos.Summarize(r); s[0].Failed != 1 {
		t.Errorf("summary %+v", s)
	}
}

// A victim that is not up (a paused leader starting again, say) is waited
// for, not hit while it is down.
func TestInjectorWaitsForItsVictimToBeUp(t *testing.T) {
	up, kills := false, 0
	in := chaos.Injector{Plan: []chaos.Fault{{Component: "etcd"}},
		Kill: func(string) error { kills++; return nil },
		Up: func(string) (int, bool, error) {
			was := up
			up = true // up from the second look on
			return kills, was, nil
		},
		Progress: func() chaos.Progress { return chaos.Progress{} },
		Poll:     time.Millisecond, BackTimeout: time.Second}
	r := in.Run(context.Background(), time.Now())
	if len(r) != 1 || r[0].Error != "" || kills != 1 {
		t.Fatalf("results %+v after %d kills", r, kills)
	}
}
