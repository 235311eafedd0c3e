package dashboard_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/internal/dashboard"
	"github.com/berth-dev/berth/internal/top"
)

func cqNode(name string, pending, admitted int32, cpu string) top.Node {
	return top.Node{Kind: "ClusterQueue", Name: name, Pending: pending, Admitted: admitted,
		Resources: []top.Resource{{Flavor: "rf", Resource: "cpu", Used: resource.MustParse(cpu)}}}
}

func floats(vs []*float64) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		if v != nil {
			out[i] = *v
		}
	}
	return out
}

func same(a []*float64, want ...any) bool {
	got := floats(a)
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		w, ok := want[i].(int)
		if want[i] == nil && got[i] != nil || ok && got[i] != float64(w) {
			return false
		}
		if want[i] != nil && got[i] == nil {
			return false
		}
	}
	return true
}

// Samples line up with their times; a queue seen late has nulls before;
// admissions are per step; after the span, the oldest go; a queue gone is
// forgotten.
func TestHistoryKeepsTheLastSpanOfEachQueue(t *testing.T) {
	h := dashboard.NewHistory(10*time.Second, 30*time.Second)
	t0 := time.Unix(1000, 0)
	cohort := func(cqs ...top.Node) []top.Node {
		return []top.Node{{Kind: "Cohort", Name: "team", Children: cqs}}
	}
	h.Record(t0, cohort(cqNode("a", 5, 0, "0")), nil)
	h.Record(t0.Add(10*time.Second), cohort(cqNode("a", 3, 2, "2"), cqNode("b", 1, 0, "0")), map[string]int{"a": 2})
	h.Record(t0.Add(20*time.Second), cohort(cqNode("a", 3, 1, "1500m"), cqNode("b", 0, 1, "1")), map[string]int{"b": 1})

	a, ok := h.Of("a")
	if !ok || a.Step != 10 || len(a.At) != 3 || a.At[0] != 1000 || a.At[2] != 1020 {
		t.Fatalf("a: %+v", a)
	}
	if !same(a.Pending, 5, 3, 3) || !same(a.Admitted, 0, 2, 1) || !same(a.Admissions, 0, 2, 0) {
		t.Errorf("a: pending %v admitted %v admissions %v", floats(a.Pending), floats(a.Admitted), floats(a.Admissions))
	}
	if u := floats(a.Usage["rf/cpu"]); len(u) != 3 || u[2] != 1.5 {
		t.Errorf("a's cpu used: %v; want 1.5 last", u)
	}
	b, _ := h.Of("b")
	if !same(b.Pending, nil, 1, 0) || !same(b.Admissions, nil, 0, 1) {
		t.Errorf("b, seen from the second sample: pending %v admissions %v", floats(b.Pending), floats(b.Admissions))
	}

	h.Record(t0.Add(30*time.Second), cohort(cqNode("b", 0, 0, "0")), nil)
	if _, ok := h.Of("a"); ok {
		t.Error("a, gone from the tree, is still kept")
	}
	b, _ = h.Of("b")
	if len(b.At) != 3 || b.At[0] != 1010 || !same(b.Pending, 1, 0, 0) {
		t.Errorf("after the span: at %v pending %v; want the oldest sample gone", b.At, floats(b.Pending))
	}
	if _, ok := h.Of("nowhere"); ok {
		t.Error("a queue never seen has a history")
	}
}
