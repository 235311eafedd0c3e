package placement

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

var assignment = &berthv1.TopologyAssignment{Levels: []string{"rack", "host"}, Domains: []berthv1.TopologyDomainAssignment{
	{Values: []string{"r1", "h1"}, Count: 2}, {Values: []string{"r1", "h2"}, Count: 1}}}

func makePods(n int, sel map[string]string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{NodeSelector: sel}})
	}
	return out
}

func TestEachDomainGetsItsCount(t *testing.T) {
	got := Assign(assignment, nil, makePods(4, nil))
	if len(got) != 3 {
		t.Fatalf("%d pods let go for 3 places", len(got))
	}
	count := map[string]int{}
	for _, u := range got {
		count[u.NodeSelector["rack"]+"/"+u.NodeSelector["host"]]++
	}
	if count["r1/h1"] != 2 || count["r1/h2"] != 1 {
		t.Errorf("per domain %v, want r1/h1: 2, r1/h2: 1", count)
	}
}

// A pod that went is replaced in the domain it left.
func TestReplacementGoesWhereThePodLeft(t *testing.T) {
	placed := append(makePods(2, map[string]string{"rack": "r1", "host": "h1"}), makePods(0, nil)...)
	got := Assign(assignment, placed, makePods(2, nil))
	if len(got) != 1 || got[0].NodeSelector["host"] != "h2" {
		t.Errorf("got %+v; want one pod, to h2", got)
	}
}

func TestLift(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "a"},
		SchedulingGates: []corev1.PodSchedulingGate{{Name: berthv1.TopologyGate}, {Name: "other"}}}}
	Lift(p, map[string]string{"rack": "r1"})
	if Gated(p) || len(p.Spec.SchedulingGates) != 1 || p.Spec.NodeSelector["pool"] != "a" || p.Spec.NodeSelector["rack"] != "r1" {
		t.Errorf("lifted pod %+v", p.Spec)
	}
}

// The last conversion of the placement path: an assignment becomes pods'
// node selectors, each domain's values on exactly its count of pods, however
// many are already placed.
func FuzzAssign(f *testing.F) {
	f.Add(uint8(3), uint8(2), uint8(1), uint8(9))
	f.Fuzz(func(t *testing.T, domains, perDomain, placedPerDomain, gatedCount uint8) {
		a := &berthv1.TopologyAssignment{Levels: []string{"block", "rack"}}
		for d := range int(domains%8) + 1 {
			a.Domains = append(a.Domains, berthv1.TopologyDomainAssignment{
				Values: []string{fmt.Sprintf("b%d", d/2), fmt.Sprintf("r%d", d)}, Count: int32(perDomain%5) + 1})
		}
		var placed []*corev1.Pod
		want := map[string]int{}
		for _, d := range a.Domains {
			already := min(int(placedPerDomain%4), int(d.Count))
			placed = append(placed, makePods(already, map[string]string{"block": d.Values[0], "rack": d.Values[1]})...)
			want[d.Values[0]+"/"+d.Values[1]] = int(d.Count) - already
		}
		gated := makePods(int(gatedCount%40), nil)
		got := map[string]int{}
		for _, u := range Assign(a, placed, gated) {
			got[u.NodeSelector["block"]+"/"+u.NodeSelector["rack"]]++
		}
		total, room := 0, 0
		for k, n := range got {
			if n > want[k] {
				t.Fatalf("domain %s given %d pods, has room for %d", k, n, want[k])
			}
			total += n
		}
		for _, n := range want {
			room += n
		}
		if total != min(room, len(gated)) {
			t.Fatalf("%d pods let go, want %d (room %d, gated %d)", total, min(room, len(gated)), room, len(gated))
		}
	})
}

// After a repair moved h0's pods to h2, the pods still placed on h0 are
// stray; those on kept domains, and pods berth gave no full domain, are not.
func TestStrayPodsAreThoseOfLostDomains(t *testing.T) {
	onH0 := makePods(2, map[string]string{"rack": "r1", "host": "h0"})
	onH1 := makePods(1, map[string]string{"rack": "r1", "host": "h1"})
	ownSelector := makePods(1, map[string]string{"rack": "r1"})
	got := Stray(assignment, append(append(onH0, onH1...), ownSelector...))
	if len(got) != 2 || got[0] != onH0[0] || got[1] != onH0[1] {
		t.Errorf("stray %v; want the two pods on h0", got)
	}
	if Stray(nil, onH0) != nil {
		t.Error("pods of a pod set without an assignment taken for stray")
	}
}
