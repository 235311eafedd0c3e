package sim

import (
	"strings"
	"testing"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/stage"
)

func named(name, kind, note string) *kwokv1.Stage {
	s := &kwokv1.Stage{}
	s.Name, s.Spec.ResourceRef.Kind = name, kind
	s.Annotations = map[string]string{"note": note}
	return s
}

func TestLayerReplacesByName(t *testing.T) {
	defaults := []*kwokv1.Stage{named("pod-ready", "Pod", "default"), named("pod-delete", "Pod", "default")}
	files := []*kwokv1.Stage{named("pod-delete", "Pod", "file"), named("extra", "Pod", "file")}
	cluster := []*kwokv1.Stage{named("pod-ready", "Pod", "cluster")}
	got := Layer(defaults, files, cluster)
	var desc []string
	for _, s := range got {
		desc = append(desc, s.Name+"="+s.Annotations["note"])
	}
	if want := "pod-ready=cluster pod-delete=file extra=file"; strings.Join(desc, " ") != want {
		t.Fatalf("got %v, want %s", desc, want)
	}
	// Within one source a repeated name is kept, for CompileAll to report.
	if n := len(Layer([]*kwokv1.Stage{named("a", "Pod", "1"), named("a", "Pod", "2")})); n != 2 {
		t.Fatalf("a repeated name within one source was merged: %d stages", n)
	}
}

// Stages of any kind join the set, keyed by kind and group so that two
// groups' kinds of one name stay apart; one that does not compile is left
// out and named, and the others stay.
func TestCompileSetKeysKindsByGroup(t *testing.T) {
	defaults, err := stage.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	widget := named("widget-ready", "Widget", "")
	widget.Spec.ResourceRef.APIGroup = "example.com/v1"
	claim := named("claim-bound", "PersistentVolumeClaim", "")
	broken := named("broken", "Pod", "")
	broken.Spec.Selector = &kwokv1.StageSelector{MatchExpressions: []kwokv1.SelectorRequirement{{CEL: &kwokv1.CELExpression{Expression: "self.("}}}}
	set, err := compileSet(append(defaults, widget, claim, broken))
	if err == nil || !strings.Contains(err.Error(), `stage "broken": spec.selector.matchExpressions[0].cel.expression`) {
		t.Fatalf("got %v", err)
	}
	if len(set.byKind["Pod"]) == 0 || len(set.byKind["Node"]) == 0 || set.byKind["Widget.example.com"][0] != set.byName["widget-ready"] ||
		set.byKind["PersistentVolumeClaim"][0] != set.byName["claim-bound"] || set.byName["broken"] != nil {
		t.Fatalf("kinds in the set: %v", set.byKind)
	}
}

func TestRVLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"9", "10", true}, {"10", "9", false}, {"10", "10", false}, {"x", "10", false}, {"", "1", false}} {
		if got := rvLess(tc.a, tc.b); got != tc.want {
			t.Errorf("rvLess(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
