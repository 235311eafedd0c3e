package cli

import (
	"reflect"
	"testing"
	"time"
)

func TestElectionIsReadFromTheControllersCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want election
	}{
		{"none", []string{"controller", "--kubeconfig=k"}, election{lease: 15 * time.Second}},
		{"the last --leader-elect wins", []string{"--leader-elect=false", "--leader-elect"}, election{on: true, lease: 15 * time.Second}},
		{"off again", []string{"--leader-elect", "--leader-elect=false"}, election{lease: 15 * time.Second}},
		{"timings kept for the second replica, in either form",
			[]string{"--leader-elect", "--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period=1s"},
			election{on: true, lease: 6 * time.Second, flags: []string{
				"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}}},
	} {
		got, err := electionOf(tc.args)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v %v, want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := electionOf([]string{"--leader-elect-lease-duration=soon"}); err == nil {
		t.Error("a lease duration that is no duration: want an error")
	}
	// A pause outlasts the lease, and is never taken for a crash.
	if d := pauseFor(15 * time.Second); d != 20*time.Second {
		t.Errorf("pause for a 15s lease: %s", d)
	}
	if d := pauseFor(2 * time.Second); d != 11*time.Second {
		t.Errorf("pause for a 2s lease: %s, want past the 10s a process must run not to count as a crash", d)
	}
}
