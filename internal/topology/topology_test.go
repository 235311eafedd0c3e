package topology

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const (
	blockLabel = "topology.berth.dev/block"
	rackLabel  = "topology.berth.dev/rack"
	hostLabel  = "kubernetes.io/hostname"
)

var levels = []string{blockLabel, rackLabel, hostLabel}

// makeNodes makes blocks x racks x hosts Ready nodes with cpu cores free
// each, named b<i>-r<j>-h<k>, in racks r<i*racks+j>.
func makeNodes(blocks, racks, hosts int, cpu int64) []Node {
	var out []Node
	for b := range blocks {
		for r := range racks {
			for h := range hosts {
				name := fmt.Sprintf("b%d-r%d-h%d", b, r, h)
				out = append(out, Node{Name: name, Ready: true,
					Labels: map[string]string{blockLabel: fmt.Sprintf("b%d", b), rackLabel: fmt.Sprintf("r%d", b*racks+r), hostLabel: name},
					Free:   map[string]int64{"cpu": cpu * 1000, PodsResource: 110_000}})
			}
		}
	}
	return out
}

func build(t testing.TB, nodes []Node) *Tree {
	t.Helper()
	tr, err := Build(levels, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func gang(count int32, cpu int64) PodSet {
	return PodSet{Count: count, Requests: map[string]int64{"cpu": cpu * 1000}, Shape: fmt.Sprintf("%d cpu", cpu)}
}

// check asserts what every placement must be: its pods add up to the pod
// set's count, no node is given more than it holds, and domains agree with
// nodes.
func check(t *testing.T, tr *Tree, a *Assignment, ps PodSet) {
	t.Helper()
	var sum int32
	for name, k := range a.Nodes {
		if f := fit(&tr.nodes[name].Node, ps); int64(k) > f {
			t.Errorf("node %s given %d pods, holds %d", name, k, f)
		}
		sum += k
	}
	var dsum int32
	for _, d := range a.Domains {
		dsum += d.Count
	}
	if sum != ps.Count || dsum != ps.Count {
		t.Errorf("nodes hold %d pods, domains %d; want %d", sum, dsum, ps.Count)
	}
}

// spanOf lists the distinct values of level i among a's domains.
func spanOf(a *Assignment, i int) []string {
	var out []string
	for _, d := range a.Domains {
		if !slices.Contains(out, d.Values[i]) {
			out = append(out, d.Values[i])
		}
	}
	slices.Sort(out)
	return out
}

func TestRequiredRack(t *testing.T) {
	// 2 blocks x 4 racks x 4 hosts of 8 cpu: a rack holds 8 pods of 4 cpu.
	tr := build(t, makeNodes(2, 4, 4, 8))
	ps := gang(8, 4)
	a, err := tr.Place(ps, Request{Mode: Required, Level: rackLabel})
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, a, ps)
	if racks := spanOf(a, 1); len(racks) != 1 {
		t.Errorf("required rack: placed over racks %v", racks)
	}
	if len(a.Domains) != 4 || a.Domains[0].Count != 2 {
		t.Errorf("domains %+v; want 4 hosts of 2 pods", a.Domains)
	}
	// A second such gang cannot share the rack: it lands in another.
	tr.Take(a, ps)
	b, err := tr.Place(ps, Request{Mode: Required, Level: rackLabel})
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, b, ps)
	if spanOf(b, 1)[0] == spanOf(a, 1)[0] {
		t.Errorf("both gangs in rack %s", spanOf(a, 1)[0])
	}
}

func TestBestFitKeepsLargeDomainsWhole(t *testing.T) {
	nodes := makeNodes(1, 3, 4, 8)
	// Rack r1 has 2 busy hosts: room for 8 pods of 2 cpu, where r0 and r2
	// have room for 16.
	for i := range nodes {
		if strings.HasPrefix(nodes[i].Name, "b0-r1-h0") || strings.HasPrefix(nodes[i].Name, "b0-r1-h1") {
			nodes[i].Free["cpu"] = 0
		}
	}
	tr := build(t, nodes)
	a, err := tr.Place(gang(6, 2), Request{Mode: Required, Level: rackLabel})
	if err != nil {
		t.Fatal(err)
	}
	if got := spanOf(a, 1); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("6 pods of 2 cpu in racks %v; want the tightest, r1", got)
	}
	// Within the rack, one host if one holds them: 4 pods of 2 cpu.
	a, err = tr.Place(gang(4, 2), Request{Mode: Required, Level: rackLabel})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Domains) != 1 {
		t.Errorf("4 pods that one host holds spread over %+v", a.Domains)
	}
}

func TestPodsFitNodeByNodeNotBySums(t *testing.T) {
	// Rack of 4 hosts with 3 cpu free each: 12 cpu, but not one 4-cpu pod.
	tr := build(t, makeNodes(1, 1, 4, 3))
	_, err := tr.Place(gang(3, 4), Request{Mode: Required, Level: rackLabel})
	var nf *NoFit
	if !errors.As(err, &nf) || nf.Message != "needs 3 pods of 4 cpu in one topology.berth.dev/rack; the best topology.berth.dev/rack, r0, has room for 0 pods" {
		t.Errorf("3 pods of 4 cpu on hosts of 3: %v", err)
	}
}

func TestNoFitNamesTheBestDomain(t *testing.T) {
	nodes := makeNodes(1, 4, 4, 8)
	for i := range nodes {
		if !strings.HasPrefix(nodes[i].Name, "b0-r3-") {
			nodes[i].Free["cpu"] = 4000 // one pod of 4 cpu a host
		}
	}
	// r3: 4 hosts of 2 pods of 4 cpu; the others 4 of 1. Take 3 from r3.
	nodes[12].Free["cpu"] = 4000
	nodes[13].Free["cpu"] = 4000
	nodes[14].Free["cpu"] = 4000
	tr := build(t, nodes)
	_, err := tr.Place(gang(8, 4), Request{Mode: Required, Level: rackLabel})
	want := "needs 8 pods of 4 cpu in one topology.berth.dev/rack; the best topology.berth.dev/rack, r3, has room for 5 pods"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestPreferredSpreadsOverTheFewestRacksOfOneBlock(t *testing.T) {
	// 2 blocks x 4 racks x 4 hosts of 8 cpu; 12 pods of 4 cpu: a rack holds
	// 8, so 2 racks of one block.
	tr := build(t, makeNodes(2, 4, 4, 8))
	ps := gang(12, 4)
	a, err := tr.Place(ps, Request{Mode: Preferred, Level: rackLabel})
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, a, ps)
	if blocks, racks := spanOf(a, 0), spanOf(a, 1); len(blocks) != 1 || len(racks) != 2 {
		t.Errorf("preferred rack, too big for one: blocks %v racks %v; want 1 block, 2 racks", blocks, racks)
	}
	// Too big for a block too: over the fewest blocks.
	ps = gang(40, 4) // a block holds 32
	a, err = tr.Place(ps, Request{Mode: Preferred, Level: rackLabel})
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, a, ps)
	if blocks, racks := spanOf(a, 0), spanOf(a, 1); len(blocks) != 2 || len(racks) != 5 {
		t.Errorf("40 pods: blocks %v racks %v; want 2 blocks, 5 racks", blocks, racks)
	}
	// Required, it does not fit.
	if _, err := tr.Place(gang(12, 4), Request{Mode: Required, Level: rackLabel}); err == nil {
		t.Error("12 pods of 4 cpu fitted one rack of 32 cpu")
	}
	// More than everything: no fit, saying how much there is.
	_, err = tr.Place(gang(65, 4), Request{Mode: Unconstrained})
	if err == nil || err.Error() != "needs 65 pods of 4 cpu; the topology's nodes have room for 64 pods" {
		t.Errorf("65 pods on room for 64: %v", err)
	}
}

func TestSlices(t *testing.T) {
	// 1 block x 4 racks x 2 hosts of 8 cpu: a rack holds 4 pods of 4 cpu.
	nodes := makeNodes(1, 4, 2, 8)
	// Rack r0 has one busy host: room for 2 pods, so no slice of 4.
	nodes[0].Free["cpu"] = 0
	tr := build(t, nodes)
	ps := gang(12, 4)
	a, err := tr.Place(ps, Request{Mode: Required, Level: blockLabel, SliceLevel: rackLabel, SliceSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	check(t, tr, a, ps)
	perRack := map[string]int32{}
	for _, d := range a.Domains {
		perRack[d.Values[1]] += d.Count
	}
	for rack, n := range perRack {
		if n%4 != 0 {
			t.Errorf("rack %s holds %d pods: not whole slices of 4", rack, n)
		}
	}
	if _, ok := perRack["r0"]; ok {
		t.Errorf("a slice placed in r0, which holds 2 pods: %v", perRack)
	}
	// 16 pods need 4 slices; the block holds 3.
	_, err = tr.Place(gang(16, 4), Request{Mode: Required, Level: blockLabel, SliceLevel: rackLabel, SliceSize: 4})
	if err == nil || !strings.Contains(err.Error(), "in slices of 4, each in one topology.berth.dev/rack") ||
		!strings.Contains(err.Error(), "has room for 3 slices") {
		t.Errorf("16 pods in slices of 4 on room for 3: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	tr := build(t, makeNodes(1, 1, 2, 8))
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Mode: Required, Level: "zone"}, `level "zone" is not one of the topology's levels`},
		{Request{Mode: Required, Level: hostLabel, SliceLevel: rackLabel, SliceSize: 2}, "slice level topology.berth.dev/rack is above the required level"},
		{Request{Mode: Required, Level: rackLabel, SliceLevel: hostLabel, SliceSize: 3}, "slice size 3 does not divide the pod count 4"},
		{Request{Mode: "Somewhere"}, `unknown topology mode "Somewhere"`},
	} {
		_, err := tr.Place(gang(4, 1), tc.req)
		var nf *NoFit
		if err == nil || errors.As(err, &nf) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.req, err, tc.want)
		}
	}
}

// Lesson 1: a topology without levels is an error, never an index out of
// range, whether it reaches Build or a zero Tree.
func TestNoLevelsIsAnErrorNotAPanic(t *testing.T) {
	if _, err := Build(nil, makeNodes(1, 1, 1, 8)); !errors.Is(err, ErrNoLevels) {
		t.Errorf("Build without levels: %v", err)
	}
	var zero Tree
	if _, err := zero.Place(gang(1, 1), Request{Mode: Unconstrained}); !errors.Is(err, ErrNoLevels) {
		t.Errorf("Place on a zero Tree: %v", err)
	}
}

func TestNodesLeftOut(t *testing.T) {
	nodes := makeNodes(1, 1, 4, 8)
	nodes[0].Ready = false
	nodes[1].Unschedulable = true
	delete(nodes[2].Labels, rackLabel)
	nodes[3].Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	tr := build(t, nodes)
	want := []string{"b0-r0-h0 (not Ready)", "b0-r0-h1 (cordoned)", "b0-r0-h2 (no label topology.berth.dev/rack)"}
	if !slices.Equal(tr.Left, want) {
		t.Errorf("left out %v, want %v", tr.Left, want)
	}
	// The tainted node holds pods that tolerate its taint, and only those.
	if _, err := tr.Place(gang(1, 1), Request{Mode: Unconstrained}); err == nil {
		t.Error("placed on a tainted node without a toleration")
	}
	ps := gang(1, 1)
	ps.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	if _, err := tr.Place(ps, Request{Mode: Unconstrained}); err != nil {
		t.Errorf("with the toleration: %v", err)
	}
	// A node the pods may not run on (their node selector) holds none.
	ps.Allows = func(l map[string]string) bool { return l[hostLabel] == "elsewhere" }
	if _, err := tr.Place(ps, Request{Mode: Unconstrained}); err == nil {
		t.Error("placed on a node the pod set's selector excludes")
	}
}

func TestNodePodLimit(t *testing.T) {
	nodes := makeNodes(1, 1, 1, 64)
	nodes[0].Free[PodsResource] = 3000
	tr := build(t, nodes)
	if _, err := tr.Place(gang(4, 1), Request{Mode: Unconstrained}); err == nil {
		t.Error("4 pods on a node with room for 3 pods")
	}
}

// An admission read back from the API names domains: taking them leaves the
// same room as taking the placement did.
func TestTakeDomainsMatchesTake(t *testing.T) {
	ps := gang(12, 4)
	req := Request{Mode: Preferred, Level: rackLabel}
	placed := build(t, makeNodes(2, 4, 4, 8))
	a, err := placed.Place(ps, req)
	if err != nil {
		t.Fatal(err)
	}
	placed.Take(a, ps)
	readBack := build(t, makeNodes(2, 4, 4, 8))
	readBack.TakeDomains(a.Domains, ps)
	for name, n := range placed.nodes {
		if got := readBack.nodes[name].Free["cpu"]; got != n.Free["cpu"] {
			t.Errorf("node %s: %d milli-cpu free after TakeDomains, %d after Take", name, got, n.Free["cpu"])
		}
	}
	// What TakeDomains took, all 12 pods, given back leaves every node as
	// it was.
	again, untouched := build(t, makeNodes(2, 4, 4, 8)), build(t, makeNodes(2, 4, 4, 8))
	took := again.TakeDomains(a.Domains, ps)
	var pods int32
	for _, k := range took {
		pods += k
	}
	if pods != 12 {
		t.Errorf("TakeDomains took %d pods, want 12", pods)
	}
	again.Give(took, ps)
	for name, n := range untouched.nodes {
		if got := again.nodes[name].Free; !maps.Equal(got, n.Free) {
			t.Errorf("node %s: %v free after a take given back, want %v", name, got, n.Free)
		}
	}
}

func TestRoomsShowWhatTakingLeft(t *testing.T) {
	tr := build(t, makeNodes(1, 2, 2, 4))
	tr.TakeDomains([]Domain{{Values: []string{"b0", "r1", "b0-r1-h0"}, Count: 3}}, gang(3, 1))
	rooms := tr.Rooms()
	if len(rooms) != 1 || rooms[0].Values[0] != "b0" || len(rooms[0].Children) != 2 || rooms[0].Nodes != nil {
		t.Fatalf("rooms: %+v; want block b0 with its two racks", rooms)
	}
	rack := rooms[0].Children[1]
	if got := strings.Join(rack.Values, "/"); got != "b0/r1" || len(rack.Children) != 2 {
		t.Fatalf("second rack: %s with %d hosts; want b0/r1 with 2", got, len(rack.Children))
	}
	host := rack.Children[0]
	if host.Children != nil || len(host.Nodes) != 1 || host.Nodes[0].Name != "b0-r1-h0" {
		t.Fatalf("host domain: %+v; want node b0-r1-h0 and no children", host)
	}
	if got := host.Nodes[0].Free["cpu"]; got != 1000 {
		t.Errorf("b0-r1-h0 has %d mcpu free; want 1000 (4 cores less 3 pods of 1)", got)
	}
	if got := rooms[0].Children[0].Children[0].Nodes[0].Free["cpu"]; got != 4000 {
		t.Errorf("b0-r0-h0 has %d mcpu free; want 4000, untouched", got)
	}
	// A copy: changing it changes nothing in the tree.
	host.Nodes[0].Free["cpu"] = 0
	if got := tr.Rooms()[0].Children[1].Children[0].Nodes[0].Free["cpu"]; got != 1000 {
		t.Errorf("after changing a room's copy, the tree has %d mcpu; want 1000", got)
	}
}
