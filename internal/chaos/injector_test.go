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
	upSince  map[string]time.Time
	settle   time.Duration
	admitted int
	killed   []string
}

func (f *fakeInstance) kill(c string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, c)
	f.restarts[c]++
	f.downTill[c] = time.Now().Add(30 * time.Millisecond)
	f.upSince[c] = f.downTill[c]
	go func() {
		time.Sleep(60 * time.Millisecond) // the fake's own workload being admitted, not synchronisation
		f.mu.Lock()
		f.admitted++
		f.mu.Unlock()
	}()
	return nil
}

func (f *fakeInstance) up(c string) (chaos.Victim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return chaos.Victim{Restarts: f.restarts[c], Healthy: time.Now().After(f.downTill[c]),
		Settled: time.Since(f.upSince[c]) >= f.settle}, nil
}

func newFake() *fakeInstance {
	return &fakeInstance{restarts: map[string]int{}, downTill: map[string]time.Time{}, upSince: map[string]time.Time{}}
}

func (f *fakeInstance) progress() chaos.Progress {
	f.mu.Lock()
	defer f.mu.Unlock()
	return chaos.Progress{Admitted: f.admitted, Waiting: 5}
}

func TestInjectorKillsInOrderAndMeasuresRecovery(t *testing.T) {
	f := newFake()
	plan := []chaos.Fault{{At: 0, Component: "etcd"}, {At: 10 * time.Millisecond, Component: "berth-sim"}}
	var log strings.Builder
	in := chaos.Injector{Plan: plan, Kill: f.kill, Up: f.up, Progress: f.progress, Log: &log, Poll: 5 * time.Millisecond}
	results := in.Run(context.Background(), time.Now())
	if len(results) != 2 || strings.Join(f.killed, ",") != "etcd,berth-sim" {
		t.Fatalf("results %+v, killed %v", results, f.killed)
	}
	for _, r := range results {
		if r.Error != "" || r.Back < 30*time.Millisecond || r.Recovered < r.Back {
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
		Up:          func(string) (chaos.Victim, error) { return chaos.Victim{Healthy: !killed, Settled: true}, nil },
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
		Up: func(string) (chaos.Victim, error) {
			was := up
			up = true // up from the second look on
			return chaos.Victim{Restarts: kills, Healthy: was, Settled: true}, nil
		},
		Progress: func() chaos.Progress { return chaos.Progress{} },
		Poll:     time.Millisecond, BackTimeout: time.Second}
	r := in.Run(context.Background(), time.Now())
	if len(r) != 1 || r[0].Error != "" || kills != 1 {
		t.Fatalf("results %+v after %d kills", r, kills)
	}
}

// Kinds run side by side: a victim slow to come back holds up only its own
// kind. A victim is hit again only once it is settled.
func TestInjectorRunsKindsSideBySideAndLetsVictimsSettle(t *testing.T) {
	f := newFake()
	settle := 80 * time.Millisecond
	f.settle = settle
	slow := "kube-apiserver"
	in := chaos.Injector{
		Plan: []chaos.Fault{{Component: slow}, {Component: "etcd"}, {Component: "etcd", At: time.Millisecond}},
		Kill: func(c string) error {
			if err := f.kill(c); err != nil || c != slow {
				return err
			}
			f.mu.Lock()
			f.downTill[c] = time.Now().Add(time.Second) // back long after etcd's two kills
			f.upSince[c] = f.downTill[c]
			f.mu.Unlock()
			return nil
		},
		Up: f.up, Progress: f.progress, Poll: 2 * time.Millisecond}
	results := in.Run(context.Background(), time.Now())
	if len(results) != 3 {
		t.Fatalf("results %+v", results)
	}
	var etcd []chaos.Result
	var slowBack time.Duration
	for _, r := range results {
		if r.Error != "" {
			t.Errorf("%+v", r)
		}
		switch r.Component {
		case "etcd":
			etcd = append(etcd, r)
		case slow:
			slowBack = r.KilledAt + r.Back
		}
	}
	if etcd[1].KilledAt > slowBack {
		t.Errorf("etcd waited for the slow kind: %+v", results)
	}
	// etcd came back 30ms after its first kill, then settled.
	if gap := etcd[1].KilledAt - etcd[0].KilledAt; gap < 30*time.Millisecond+settle {
		t.Errorf("etcd hit again %v after the first kill; want at least its downtime and %v", gap, settle)
	}
}

// A victim hit just before the run ends is still followed until it is
// back: a run never ends with a component down that it took down.
func TestInjectorFollowsItsLastVictimBackAfterTheRunEnds(t *testing.T) {
	f := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	in := chaos.Injector{Plan: []chaos.Fault{{Component: "etcd"}},
		Kill: func(c string) error { cancel(); return f.kill(c) },
		Up:   f.up, Progress: f.progress, Poll: 2 * time.Millisecond}
	r := in.Run(ctx, time.Now())
	if len(r) != 1 || r[0].Error != "" || r[0].Back < 30*time.Millisecond {
		t.Fatalf("results %+v: want etcd followed back after its 30ms down, though the run ended", r)
	}
}
