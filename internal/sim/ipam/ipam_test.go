package ipam

import (
	"fmt"
	"testing"
)

func TestStableAndUnique(t *testing.T) {
	a := New()
	seen := map[string]string{}
	for n := range 300 {
		node := fmt.Sprintf("n%d", n)
		ip := a.NodeIP(node)
		if prev, dup := seen[ip]; dup {
			t.Fatalf("%s given to %s and %s", ip, prev, node)
		}
		seen[ip] = node
		for p := range 3 {
			uid := fmt.Sprintf("%s-p%d", node, p)
			pip := a.PodIP(node, uid)
			if prev, dup := seen[pip]; dup {
				t.Fatalf("%s given to %s and %s", pip, prev, uid)
			}
			seen[pip] = uid
			if again := a.PodIP(node, uid); again != pip {
				t.Fatalf("pod %s got %s then %s", uid, pip, again)
			}
		}
		if again := a.NodeIP(node); again != ip {
			t.Fatalf("node %s got %s then %s", node, ip, again)
		}
	}
	if got := a.NodeIP("n0"); got != "172.16.0.1" {
		t.Errorf("first node got %s, want 172.16.0.1", got)
	}
	if got := a.PodIP("n1", "n1-p0"); got != "100.64.1.1" {
		t.Errorf("second node's first pod got %s, want 100.64.1.1", got)
	}
	if got := a.NodeIP("n299"); got != "172.16.1.44" {
		t.Errorf("node 300 got %s, want 172.16.1.44", got)
	}
}

func TestRangeFullAndReuseAfterRelease(t *testing.T) {
	a := New()
	for p := range podsPerRange {
		if a.PodIP("n", fmt.Sprint(p)) == "" {
			t.Fatalf("pod %d got no address", p)
		}
	}
	if ip := a.PodIP("n", "one-too-many"); ip != "" {
		t.Fatalf("a full range handed out %s", ip)
	}
	freed := a.PodIP("n", "7")
	a.ReleasePod("n", "7")
	if ip := a.PodIP("n", "late"); ip != freed {
		t.Fatalf("after release got %s, want the freed %s", ip, freed)
	}
}

func TestReserveKeepsExistingAddresses(t *testing.T) {
	a := New()
	// On a restart, existing nodes and pods are reserved before new ones ask.
	if err := a.ReserveNode("old", "172.16.0.1"); err != nil {
		t.Fatal(err)
	}
	if err := a.ReservePod("old", "u1", "100.64.0.1"); err != nil {
		t.Fatal(err)
	}
	if ip := a.NodeIP("new"); ip == "172.16.0.1" {
		t.Fatal("a reserved node address was handed out again")
	}
	if ip := a.PodIP("old", "u2"); ip == "100.64.0.1" {
		t.Fatal("a reserved pod address was handed out again")
	}
	if ip := a.PodIP("old", "u1"); ip != "100.64.0.1" {
		t.Fatalf("pod u1 got %s, want its reserved 100.64.0.1", ip)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"taken node address", a.ReserveNode("other", "172.16.0.1")},
		{"outside the node range", a.ReserveNode("other", "10.0.0.1")},
		{"not an address", a.ReserveNode("other", "nope")},
		{"taken pod address", a.ReservePod("old", "u3", "100.64.0.1")},
		{"outside the node's pod range", a.ReservePod("old", "u3", "100.64.9.1")},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if err := a.ReserveNode("old", "172.16.0.1"); err != nil {
		t.Errorf("reserving the same address again: %v", err)
	}
}

// Pods are released as the simulator first sees them finished, which can be
// before any pod on their node was given an address.
func TestReleaseBeforeAnyPodAddress(t *testing.T) {
	a := New()
	a.NodeIP("n1")
	a.ReleasePod("n1", "never-had-one")
	a.ReleasePod("unknown-node", "p")
	if ip := a.PodIP("n1", "p1"); ip == "" {
		t.Error("no address after releasing unknown pods")
	}
}
