// Package ipam hands out addresses to simulated nodes and pods: each of up
// to 16,384 nodes an address from 172.16.0.0/12 and a /24 for its pods from 100.64.0.0/10, each
// pod the lowest free address of its node's range. The same node or pod gets
// the same address every time it asks, and addresses already in use in the
// cluster (seen on a restart) are reserved first so they are never handed
// out twice.
package ipam

import (
	"fmt"
	"net/netip"
	"sync"
)

var (
	nodeBase = netip.MustParseAddr("172.16.0.1")
	podBase  = netip.MustParseAddr("100.64.0.0")
)

const (
	maxNodes     = 1<<20 - 2 // 172.16.0.1 .. 172.31.255.254
	maxPodRanges = 1 << 14   // /24s in 100.64.0.0/10
	podsPerRange = 254       // .1 .. .254
)

// Allocator is safe for concurrent use.
type Allocator struct {
	mu        sync.Mutex
	nodeIndex map[string]int // node name -> index of its address and pod range
	usedNode  map[int]bool
	nextNode  int
	nodes     map[int]*podRange // by node index
}

type podRange struct {
	byPod map[string]int // pod uid -> host part
	used  [podsPerRange + 1]bool
	next  int
}

// New returns an empty allocator.
func New() *Allocator {
	return &Allocator{nodeIndex: map[string]int{}, usedNode: map[int]bool{}, nodes: map[int]*podRange{}}
}

// NodeIP returns the node's address, allocating one on first use.
func (a *Allocator) NodeIP(node string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, err := a.node(node)
	if err != nil {
		return ""
	}
	return addrAt(nodeBase, i).String()
}

// PodIP returns the pod's address in its node's range, allocating one on
// first use; "" once the range is full.
func (a *Allocator) PodIP(node, uid string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, err := a.node(node)
	if err != nil {
		return ""
	}
	r := a.rangeOf(i)
	if host, ok := r.byPod[uid]; ok {
		return podAddr(i, host)
	}
	for n := 0; n < podsPerRange; n++ {
		host := (r.next+n)%podsPerRange + 1
		if !r.used[host] {
			r.used[host], r.byPod[uid] = true, host
			r.next = host % podsPerRange
			return podAddr(i, host)
		}
	}
	return ""
}

// ReleasePod frees the pod's address once it is gone.
func (a *Allocator) ReleasePod(node, uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, ok := a.nodeIndex[node]
	if !ok {
		return
	}
	r, ok := a.nodes[i]
	if !ok {
		return // the node has an address but no pod has had one yet
	}
	if host, ok := r.byPod[uid]; ok {
		r.used[host] = false
		delete(r.byPod, uid)
	}
}

// ReleaseNode frees the node's address and range once it is gone.
func (a *Allocator) ReleaseNode(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i, ok := a.nodeIndex[node]; ok {
		delete(a.nodeIndex, node)
		delete(a.usedNode, i)
		delete(a.nodes, i)
	}
}

// ReserveNode records an address a node already has. An address outside
// berth's node range, or taken by another node, is refused: the node then
// gets a fresh one if it ever asks.
func (a *Allocator) ReserveNode(node, ip string) error {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	i := offset(nodeBase, addr)
	if i < 0 || i >= maxNodes {
		return fmt.Errorf("%s is outside the simulated node range", ip)
	}
	if cur, ok := a.nodeIndex[node]; ok {
		if cur == i {
			return nil
		}
		return fmt.Errorf("node %s already has %s", node, addrAt(nodeBase, cur))
	}
	if a.usedNode[i] {
		return fmt.Errorf("%s is taken", ip)
	}
	a.nodeIndex[node], a.usedNode[i] = i, true
	return nil
}

// ReservePod records an address a pod already has.
func (a *Allocator) ReservePod(node, uid, ip string) error {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	i, err := a.node(node)
	if err != nil {
		return err
	}
	host := offset(addrAt(podBase, i*256), addr)
	if host < 1 || host > podsPerRange {
		return fmt.Errorf("%s is outside node %s's pod range", ip, node)
	}
	r := a.rangeOf(i)
	if cur, ok := r.byPod[uid]; ok && cur != host {
		return fmt.Errorf("pod %s already has %s", uid, podAddr(i, cur))
	}
	if r.used[host] && r.byPod[uid] != host {
		return fmt.Errorf("%s is taken", ip)
	}
	r.used[host], r.byPod[uid] = true, host
	return nil
}

func (a *Allocator) node(name string) (int, error) {
	if i, ok := a.nodeIndex[name]; ok {
		return i, nil
	}
	for n := 0; n < maxNodes; n++ {
		i := (a.nextNode + n) % maxNodes
		if !a.usedNode[i] {
			a.nodeIndex[name], a.usedNode[i] = i, true
			a.nextNode = i + 1
			return i, nil
		}
	}
	return 0, fmt.Errorf("no address left for node %s", name)
}

func (a *Allocator) rangeOf(i int) *podRange {
	r, ok := a.nodes[i]
	if !ok {
		r = &podRange{byPod: map[string]int{}}
		a.nodes[i] = r
	}
	return r
}

func podAddr(node, host int) string { return addrAt(podBase, node*256+host).String() }

func addrAt(base netip.Addr, n int) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func offset(base, addr netip.Addr) int {
	if !addr.Is4() {
		return -1
	}
	b, x := base.As4(), addr.As4()
	bv := int64(b[0])<<24 | int64(b[1])<<16 | int64(b[2])<<8 | int64(b[3])
	xv := int64(x[0])<<24 | int64(x[1])<<16 | int64(x[2])<<8 | int64(x[3])
	d := xv - bv
	if d < 0 || d > 1<<30 {
		return -1
	}
	return int(d)
}
