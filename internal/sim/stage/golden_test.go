package stage_test

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/sim/stage"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// testEnv is a fixed world: one clock reading, one address per node and pod.
type testEnv struct{}

func (testEnv) Now() time.Time            { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
func (testEnv) StartTime() time.Time      { return time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC) }
func (testEnv) NodeIP(node string) string { return "192.0.2.10" }
func (testEnv) NodePort() int             { return 10250 }
func (testEnv) Version() string           { return "v1.36.3-sim" }
func (testEnv) PodIP(node string, hostNetwork bool, uid, name, ns string) string {
	if hostNetwork {
		return "192.0.2.10"
	}
	return "10.244.0.5"
}

// lifecycleOut is what a golden file records: each stage applied in turn,
// and the object at the end (absent once deleted).
type lifecycleOut struct {
	Applied []transition   `json:"applied"`
	Final   map[string]any `json:"final,omitempty"`
}

type transition struct {
	Stage   string           `json:"stage"`
	Delay   string           `json:"delay"`
	Actions []map[string]any `json:"actions"`
	// Unchanged: the stage would write nothing, so the simulator skips it.
	Unchanged bool `json:"unchanged,omitempty"`
}

// TestGolden takes each testdata/golden/<set>/<case>.input.yaml through its
// lifecycle: the stage that matches, its delay and actions, the object it
// leaves, then the next stage matching that object, until none matches, the
// object is gone, or a stage would change nothing. A set's stages are its
// stages/ directory, else those stageDirs names, else berth's defaults.
func TestGolden(t *testing.T) {
	sets, err := filepath.Glob("testdata/golden/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range sets {
		stages := loadSet(t, set)
		inputs, _ := filepath.Glob(filepath.Join(set, "*.input.yaml"))
		if len(inputs) == 0 {
			t.Fatalf("%s has no *.input.yaml", set)
		}
		for _, in := range inputs {
			name := strings.TrimSuffix(filepath.Base(in), ".input.yaml")
			t.Run(filepath.Base(set)+"/"+name, func(t *testing.T) {
				got := lifecycle(t, stages, readObject(t, in))
				compareGolden(t, strings.TrimSuffix(in, ".input.yaml")+".golden.yaml", got)
			})
		}
	}
}

// stageDirs are stage files kept elsewhere: KWOK-format examples users may
// copy, proven here to do what their comments say.
var stageDirs = map[string]string{"kwok": "../../../examples/stages/kwok", "volume": "../../../examples/stages/volume"}

func loadSet(t *testing.T, set string) []*stage.Stage {
	t.Helper()
	dir := filepath.Join(set, "stages")
	if d, ok := stageDirs[filepath.Base(set)]; ok {
		dir = d
	}
	var err error
	var raw = must(stage.Defaults())
	if _, statErr := os.Stat(dir); statErr == nil {
		raw, _, err = stage.LoadFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
	}
	compiled, err := stage.CompileAll(raw)
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

func lifecycle(t *testing.T, stages []*stage.Stage, obj map[string]any) lifecycleOut {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	env := testEnv{}
	out := lifecycleOut{Applied: []transition{}, Final: obj}
	for range 10 {
		s := stage.Select(ofKind(stages, obj), obj, rng)
		if s == nil {
			return out
		}
		actions, err := s.Render(obj, env)
		if err != nil {
			t.Fatal(err)
		}
		next, err := stage.Apply(obj, s.Kind, actions)
		if err != nil {
			t.Fatalf("stage %s: %v", s.Name, err)
		}
		tr := transition{Stage: s.Name, Delay: s.Delay(obj, env.Now(), rng).String()}
		for _, a := range actions {
			tr.Actions = append(tr.Actions, describe(t, a))
		}
		same := next != nil && reflect.DeepEqual(next, obj)
		elsewhere := false
		for _, a := range actions {
			elsewhere = elsewhere || a.Apply != nil
		}
		// A stage that writes other objects is made even when it leaves this
		// one as it is; either way this object's lifecycle ends there.
		tr.Unchanged = same && !elsewhere
		out.Applied = append(out.Applied, tr)
		out.Final = next
		if next == nil || same {
			return out
		}
		obj = next
	}
	t.Fatal("more than 10 transitions: a stage loop?")
	return out
}

func ofKind(stages []*stage.Stage, obj map[string]any) []*stage.Stage {
	var out []*stage.Stage
	for _, s := range stages {
		if s.Kind.Kind == obj["kind"] {
			out = append(out, s)
		}
	}
	return out
}

func describe(t *testing.T, a stage.Action) map[string]any {
	switch {
	case a.Patch != nil:
		var data any
		if err := yaml.Unmarshal(a.Patch.Data, &data); err != nil {
			t.Fatal(err)
		}
		p := map[string]any{"data": data}
		if a.Patch.Subresource != "" {
			p["subresource"] = a.Patch.Subresource
		}
		if a.Patch.Type != "" {
			p["type"] = string(a.Patch.Type)
		}
		if a.Patch.As != "" {
			p["as"] = a.Patch.As
		}
		return map[string]any{"patch": p}
	case a.Apply != nil:
		p := map[string]any{"object": a.Apply.Object}
		if a.Apply.Subresource != "" {
			p["subresource"] = a.Apply.Subresource
		}
		if a.Apply.Type != "" {
			p["type"] = string(a.Apply.Type)
		}
		return map[string]any{"apply": p}
	case a.Finalizers != nil:
		return map[string]any{"finalizers": a.Finalizers}
	case a.Event != nil:
		return map[string]any{"event": a.Event}
	default:
		return map[string]any{"delete": a.Delete}
	}
}

func readObject(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

func compareGolden(t *testing.T, path string, got any) {
	t.Helper()
	data, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/sim/stage -update to create it)", err)
	}
	if string(want) != string(data) {
		t.Errorf("%s differs (go test ./internal/sim/stage -update rewrites it; review the diff):\n--- want\n%s\n--- got\n%s", path, want, data)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
