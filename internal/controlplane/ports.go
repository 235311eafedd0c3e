package controlplane

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreePorts returns n free loopback ports for extra components.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := freePort(nil)
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// freePort returns a loopback port that is free now and lies below the
// kernel's ephemeral range. Ports from ":0" would come from that range, where
// any outgoing connection may take them before the component binds them;
// below it, only another explicit bind can.
//
// A port is handed out once per process: control planes started at once in
// one process (the tests start several) would otherwise pick a port another
// has picked and not yet bound.
func freePort(avoid map[int]bool) (int, error) {
	lo := ephemeralLow()
	const floor = 10000
	if lo-floor > 1000 {
		handedOut.Lock()
		defer handedOut.Unlock()
		for range 200 {
			p := floor + rand.IntN(lo-floor)
			if !avoid[p] && !handedOut.ports[p] && portFree(p) {
				handedOut.ports[p] = true
				return p, nil
			}
		}
	}
	// Unusual kernel settings: fall back to whatever the kernel hands out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

func portFree(p int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

// allocatePorts picks the ports of an instance. apiServer, when non-zero, is
// used as given and must be free; previous, when non-zero and free, is reused
// so that kubeconfigs handed out earlier keep working.
func allocatePorts(apiServer, previous int) (Ports, error) {
	var p Ports
	taken := map[int]bool{}
	switch {
	case apiServer != 0:
		if !portFree(apiServer) {
			return p, fmt.Errorf("kube-apiserver: port %d on 127.0.0.1 is already in use; choose another with --port, or 0 for any free port", apiServer)
		}
		p.APIServer = apiServer
	case previous != 0 && portFree(previous):
		p.APIServer = previous
	}
	if p.APIServer != 0 {
		taken[p.APIServer] = true
	}
	for _, dst := range []*int{&p.APIServer, &p.EtcdClient, &p.EtcdPeer, &p.ControllerManager, &p.Scheduler} {
		if *dst != 0 {
			continue
		}
		port, err := freePort(taken)
		if err != nil {
			return p, fmt.Errorf("finding a free loopback port: %w", err)
		}
		taken[port] = true
		*dst = port
	}
	return p, nil
}
