package stage_test

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/stage"
)

func compile(t *testing.T, doc string) *stage.Stage {
	t.Helper()
	stages, _, err := stage.Parse([]byte(doc), "test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := stage.Compile(stages[0])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func obj(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const head = "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\nmetadata: {name: s}\nspec:\n  resourceRef: {kind: Pod}\n"

func TestCompileErrorsNameStageAndField(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"  selector:\n    matchExpressions: [{key: '.a[', operator: Exists}]\n  next: {}",
			`stage "s": spec.selector.matchExpressions[0].key: invalid JQ expression`},
		{"  selector:\n    matchExpressions: [{key: .a, operator: Equals, values: [x]}]\n  next: {}",
			`spec.selector.matchExpressions[0].operator: "Equals" is not In, NotIn, Exists or DoesNotExist`},
		{"  selector:\n    matchExpressions: [{key: .a, operator: In}]\n  next: {}",
			`spec.selector.matchExpressions[0].values: required with operator In`},
		{"  selector:\n    matchExpressions: [{key: .a, operator: Exists, values: [x]}]\n  next: {}",
			`spec.selector.matchExpressions[0].values: must be empty with operator Exists`},
		{"  next:\n    statusTemplate: '{{ .a'",
			`stage "s": spec.next.statusTemplate: template:`},
		{"  next:\n    patches: [{template: x, type: xml}]",
			`spec.next.patches[0].type: "xml" is not json, merge or strategic`},
		{"  next:\n    steps: [{}, {patches: [{template: '{{ end }}'}]}]",
			`spec.next.steps[1].patches[0]: template:`},
		{"  delay:\n    durationFrom: {expressionFrom: '.a |'}\n  next: {}",
			`spec.delay.durationFrom.expressionFrom: invalid JQ expression`},
		{"  weightFrom: {expressionFrom: ')'}\n  next: {}",
			`spec.weightFrom.expressionFrom: invalid JQ expression`},
		{"  selector:\n    matchExpressions: [{cel: {expression: 'self.a =='}}]",
			`spec.selector.matchExpressions[0].cel.expression: invalid CEL expression`},
		{"  selector:\n    matchExpressions: [{cel: {expression: '1 + 2'}}]",
			`spec.selector.matchExpressions[0].cel.expression: CEL expression "1 + 2" yields int, not a bool`},
		{"  selector:\n    matchExpressions: [{key: .a, operator: Exists, cel: {expression: 'true'}}]",
			`spec.selector.matchExpressions[0]: cel stands alone`},
		{"  selector:\n    matchExpressions: [{operator: Exists}]",
			`spec.selector.matchExpressions[0].key: required without cel`},
		{"  steps: [{patch: {template: x}}, {apply: {template: '{{ .a'}}]",
			`spec.steps[1].apply: template:`},
		{"  steps: [{patch: {template: x, type: yaml}}]",
			`spec.steps[0].patch.type: "yaml" is not json, merge or strategic`},
	} {
		stages, _, err := stage.Parse([]byte(head+tc.spec), "test")
		if err != nil {
			t.Fatal(err)
		}
		_, err = stage.Compile(stages[0])
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("spec %q: got error %v, want one containing %q", tc.spec, err, tc.want)
		}
	}
}

// A stage directory may hold other documents beside its stages (KWOK's
// volume stages come with a StorageClass): they are skipped and named.
func TestParseSkipsOtherKindsAndNamesThem(t *testing.T) {
	stages, skipped, err := stage.Parse([]byte(head+"  next: {}\n---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\n"+
		"metadata: {name: standard}\nprovisioner: kwok\n---\n"+head+"  next: {}\n"), "stages.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Errorf("%d stages, want the 2 around the StorageClass", len(stages))
	}
	if want := []string{"stages.yaml: document 2 (storage.k8s.io/v1 StorageClass standard)"}; !reflect.DeepEqual(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
}

func TestParseNamesTheDocumentThatFails(t *testing.T) {
	_, _, err := stage.Parse([]byte(head+"  weight: many\n"), "stages.yaml")
	if err == nil || !strings.Contains(err.Error(), "stages.yaml: document 1") {
		t.Fatalf("got %v", err)
	}
}

func TestCompileAllReportsEveryBadStageAndDuplicates(t *testing.T) {
	mk := func(name, key string) *kwokv1.Stage {
		s := &kwokv1.Stage{}
		s.Name = name
		s.Spec.ResourceRef.Kind = "Pod"
		s.Spec.Selector = &kwokv1.StageSelector{MatchExpressions: []kwokv1.SelectorRequirement{{Key: key, Operator: kwokv1.SelectorOpExists}}}
		return s
	}
	_, err := stage.CompileAll([]*kwokv1.Stage{mk("a", "["), mk("b", ".x"), mk("b", ".y"), mk("c", "]")})
	for _, want := range []string{`stage "a"`, `stage "b" is defined twice`, `stage "c"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestMatches(t *testing.T) {
	s := compile(t, head+`  selector:
    matchLabels: {app: web}
    matchExpressions:
    - {key: '.spec.containers[].image', operator: In, values: [nginx]}
    - {key: '.status.conditions.[] | select(.type == "Ready") | .status', operator: NotIn, values: ["True"]}
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
  next: {}
`)
	base := "metadata: {labels: {app: web}}\nspec: {containers: [{image: busybox}, {image: nginx}]}\n"
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{base, true}, // no conditions at all: NotIn holds
		{base + "status: {conditions: [{type: Ready, status: 'False'}]}", true},
		{base + "status: {conditions: [{type: Ready, status: 'True'}]}", false},
		{"metadata: {labels: {app: db}}\nspec: {containers: [{image: nginx}]}", false},
		{"metadata: {labels: {app: web}}\nspec: {containers: [{image: busybox}]}", false},
		{"metadata: {labels: {app: web}, deletionTimestamp: '2026-01-01T00:00:00Z'}\nspec: {containers: [{image: nginx}]}", false},
		{"metadata: {labels: {app: web}}", false}, // iterating over a missing list yields nothing
	} {
		if got := s.Matches(obj(t, tc.doc)); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.doc, got, tc.want)
		}
	}
	// A stage without a selector matches nothing, as in KWOK.
	if compile(t, head+"  next: {}\n").Matches(obj(t, base)) {
		t.Error("a stage without a selector matched")
	}
}

// CEL requirements see the object as self; one that fails on it (a field
// it lacks) does not match, and all must hold.
func TestMatchesCEL(t *testing.T) {
	s := compile(t, head+`  selector:
    matchLabels: {app: web}
    matchExpressions:
    - cel: {expression: "self.spec.storageClassName == 'fast'"}
    - cel: {expression: "!has(self.metadata.deletionTimestamp)"}
    - cel: {expression: "self.status.phase != 'Bound'"}
    - cel: {expression: "self.spec.resources.requests.storage.endsWith('Gi')"}
`)
	base := "metadata: {labels: {app: web}}\nspec: {storageClassName: fast, resources: {requests: {storage: 5Gi}}}\n"
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{base + "status: {phase: Pending}", true},
		{base + "status: {phase: Bound}", false},
		{base, false}, // no status.phase: the expression fails, so no match
		{"metadata: {labels: {app: web}, deletionTimestamp: '2026-01-01T00:00:00Z'}\nspec: {storageClassName: fast, resources: {requests: {storage: 5Gi}}}\nstatus: {phase: Pending}", false},
		{"metadata: {labels: {app: web}}\nspec: {storageClassName: slow, resources: {requests: {storage: 5Gi}}}\nstatus: {phase: Pending}", false},
		{"metadata: {labels: {app: db}}\nspec: {storageClassName: fast, resources: {requests: {storage: 5Gi}}}\nstatus: {phase: Pending}", false},
		{"metadata: {labels: {app: web}}\nspec: {storageClassName: fast, resources: {requests: {storage: 500Mi}}}\nstatus: {phase: Pending}", false},
	} {
		if got := s.Matches(obj(t, tc.doc)); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

func TestSelectFollowsWeights(t *testing.T) {
	var stages []*stage.Stage
	for _, doc := range []string{
		"metadata: {name: heavy}\nspec:\n  resourceRef: {kind: Pod}\n  selector: {}\n  weight: 1\n  weightFrom: {expressionFrom: '.metadata.annotations.w'}\n  next: {}",
		"metadata: {name: light}\nspec:\n  resourceRef: {kind: Pod}\n  selector: {}\n  weight: 1\n  next: {}",
		"metadata: {name: never}\nspec:\n  resourceRef: {kind: Pod}\n  selector: {}\n  next: {}",
	} {
		stages = append(stages, compile(t, "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: Stage\n"+doc))
	}
	stage.SortByName(stages)
	rng := rand.New(rand.NewPCG(7, 7))
	counts := map[string]int{}
	o := obj(t, "metadata: {annotations: {w: '3'}}")
	for range 4000 {
		counts[stage.Select(stages, o, rng).Name]++
	}
	if counts["never"] != 0 {
		t.Errorf("a zero-weight stage was chosen %d times beside positive weights", counts["never"])
	}
	if r := float64(counts["heavy"]) / float64(counts["light"]); r < 2.6 || r > 3.4 {
		t.Errorf("heavy:light = %v (%v), want about 3 (weightFrom 3 against weight 1)", r, counts)
	}
	// All weights zero: each matching stage is chosen some of the time.
	counts = map[string]int{}
	o = obj(t, "metadata: {annotations: {w: '0'}}")
	zero := []*stage.Stage{stages[0], stages[2]}
	for range 400 {
		counts[stage.Select(zero, o, rng).Name]++
	}
	if counts["heavy"] == 0 || counts["never"] == 0 {
		t.Errorf("with all weights zero the choice should be uniform, got %v", counts)
	}
}

func TestDelay(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 1))
	mk := func(delay string) *stage.Stage {
		return compile(t, head+"  selector: {}\n  delay:\n"+delay+"  next: {}\n")
	}
	for _, tc := range []struct {
		name, delay, obj string
		lo, hi           time.Duration
	}{
		{"fixed", "    durationMilliseconds: 1500\n", "{}", 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"jitter only: up to it", "    jitterDurationMilliseconds: 800\n", "{}", 0, 800 * time.Millisecond},
		{"jitter above duration: between", "    durationMilliseconds: 1000\n    jitterDurationMilliseconds: 3000\n", "{}", time.Second, 3 * time.Second},
		{"jitter below duration caps it", "    durationMilliseconds: 5000\n    jitterDurationMilliseconds: 2000\n", "{}", 2 * time.Second, 2 * time.Second},
		{"from a duration string", "    durationFrom: {expressionFrom: .d}\n    durationMilliseconds: 9\n", "{d: 2m}", 2 * time.Minute, 2 * time.Minute},
		{"from milliseconds", "    durationFrom: {expressionFrom: .d}\n", "{d: 250}", 250 * time.Millisecond, 250 * time.Millisecond},
		{"until a time", "    durationFrom: {expressionFrom: .d}\n", "{d: '2026-01-01T00:00:30Z'}", 30 * time.Second, 30 * time.Second},
		{"a past time: now", "    durationFrom: {expressionFrom: .d}\n", "{d: '2025-01-01T00:00:00Z'}", 0, 0},
		{"missing: falls back", "    durationFrom: {expressionFrom: .d}\n    durationMilliseconds: 9\n", "{}", 9 * time.Millisecond, 9 * time.Millisecond},
	} {
		s := mk(tc.delay)
		for range 50 {
			if d := s.Delay(obj(t, tc.obj), now, rng); d < tc.lo || d > tc.hi {
				t.Errorf("%s: delay %v outside [%v, %v]", tc.name, d, tc.lo, tc.hi)
				break
			}
		}
	}
}

func TestRenderErrorsNameTheStage(t *testing.T) {
	s := compile(t, head+"  selector: {}\n  next:\n    statusTemplate: '{{ fail \"boom\" }}'\n")
	_, err := s.Render(obj(t, "{}"), testEnv{})
	if err == nil || !strings.Contains(err.Error(), `stage "s"`) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("got %v", err)
	}
	s = compile(t, head+"  selector: {}\n  next:\n    statusTemplate: 'a: [b'\n")
	if _, err = s.Render(obj(t, "{}"), testEnv{}); err == nil || !strings.Contains(err.Error(), "did not render YAML") {
		t.Fatalf("got %v", err)
	}
}
