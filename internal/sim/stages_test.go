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

func TestCompileSetRefusesKindsItDoesNotSimulate(t *testing.T) {
	defaults, err := stage.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	widget := named("widget-ready", "Widget", "")
	widget.Spec.ResourceRef.APIGroup = "example.com/v1"
	set, err := compileSet(append(defaults, widget))
	if err == nil || !strings.Contains(err.Error(), `stage "widget-ready": spec.resourceRef: example.com/v1, Kind=Widget is not simulated`) {
		t.Fatalf("got %v", err)
	}
	if len(set.byKind["Pod"]) == 0 || len(set.byKind["Node"]) == 0 || set.byName["widget-ready"] != nil {
		t.Fatalf("the valid stages should stay in the set: %v", set.byName)
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
