package nodepool

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/sim/devices"
)

func TestTopologyLabels(t *testing.T) {
	p := Pool{Count: 8, Prefix: "n-", NodesPerRack: 2, RacksPerBlock: 2, Labels: map[string]string{OwnerLabel: "true", "team": "a"}}
	var got []string
	for i := range p.Count {
		n := p.Node(i)
		got = append(got, n.Labels[BlockLabel]+"/"+n.Labels[RackLabel]+"/"+n.Labels[HostnameLabel])
		if n.Labels[OwnerLabel] != "true" || n.Labels["team"] != "a" || !p.Owns(n) {
			t.Fatalf("node %d labels %v", i, n.Labels)
		}
	}
	want := []string{
		"block-0/rack-0/n-0", "block-0/rack-0/n-1", "block-0/rack-1/n-2", "block-0/rack-1/n-3",
		"block-1/rack-2/n-4", "block-1/rack-2/n-5", "block-1/rack-3/n-6", "block-1/rack-3/n-7",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if _, ok := (Pool{Count: 1, Prefix: "n-"}).Node(0).Labels[RackLabel]; ok {
		t.Fatal("rack label without nodes-per-rack")
	}
}

func TestCapacityAnnotation(t *testing.T) {
	p := Pool{Count: 1, Prefix: "n-", Capacity: DefaultCapacity()}
	got := p.Node(0).Annotations[CapacityAnnotation]
	if got != `{"cpu":"32","memory":"256Gi","pods":"110"}` {
		t.Fatalf("annotation %s", got)
	}
	if _, ok := p.Node(0).Annotations[devices.Annotation]; ok {
		t.Error("a pool without devices annotates its nodes with some")
	}
	p.Devices = devices.Devices{"gpu.example.com": 4}
	if got := p.Node(0).Annotations[devices.Annotation]; got != `{"gpu.example.com":4}` {
		t.Errorf("devices annotation %s", got)
	}
}

func TestReconcile(t *testing.T) {
	p := Pool{Count: 3, Prefix: "sim-"}
	create, remove := p.Reconcile([]string{"sim-1", "sim-3", "sim-10", "sim-01", "sim-x"})
	var names []string
	for _, n := range create {
		names = append(names, n.Name)
	}
	if !reflect.DeepEqual(names, []string{"sim-0", "sim-2"}) {
		t.Errorf("create %v, want sim-0 sim-2", names)
	}
	if !reflect.DeepEqual(remove, []string{"sim-01", "sim-10", "sim-3", "sim-x"}) {
		t.Errorf("remove %v", remove)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Pool
		want string
	}{
		{Pool{Count: -1, Prefix: "n-"}, "nodes: -1 is negative"},
		{Pool{Prefix: "N_"}, `node name prefix "N_"`},
		{Pool{Prefix: "n-", RacksPerBlock: 2}, "racks-per-block needs nodes-per-rack"},
		{Pool{Prefix: "n-", Labels: map[string]string{"bad key!": "x"}}, `node label "bad key!"`},
		{Pool{Prefix: "n-", Labels: map[string]string{"k": "bad value!"}}, `node label k="bad value!"`},
		{Pool{Prefix: "n-", Taints: []corev1.Taint{{Key: "k", Effect: "Never"}}}, `node taint k: effect "Never"`},
		{Pool{Prefix: "n-", Devices: devices.Devices{"gpu.example.com": 500}}, "gpu.example.com=500: a node offers 0 to 128 devices"},
	} {
		if err := tc.p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.p, err, tc.want)
		}
	}
	if err := (Pool{Count: 5, Prefix: "sim-node-", NodesPerRack: 2}).Validate(); err != nil {
		t.Error(err)
	}
}
