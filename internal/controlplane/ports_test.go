package controlplane

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestAllocatePorts(t *testing.T) {
	p, err := allocatePorts(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, port := range []int{p.APIServer, p.EtcdClient, p.EtcdPeer, p.ControllerManager, p.Scheduler} {
		if port <= 0 || seen[port] {
			t.Fatalf("ports not distinct and positive: %+v", p)
		}
		seen[port] = true
	}

	// The previous run's API port is reused when free, so kubeconfigs keep working.
	free, err := freePort(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := allocatePorts(0, free); p.APIServer != free {
		t.Errorf("previous port %d not reused: got %d", free, p.APIServer)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	// A busy previous port is quietly replaced...
	if p, err := allocatePorts(0, busy); err != nil || p.APIServer == busy {
		t.Errorf("busy previous port: %+v, %v", p, err)
	}
	// ...but a busy port the user asked for is an error naming the component and port.
	_, err = allocatePorts(busy, 0)
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver") || !strings.Contains(err.Error(), strconv.Itoa(busy)) {
		t.Errorf("allocatePorts(busy) = %v", err)
	}
}
