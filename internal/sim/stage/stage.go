// Package stage compiles KWOK Stage documents and applies them to objects,
// without I/O: matching an object, choosing among matching stages by weight,
// computing the delay, and rendering what the stage does (finalizer changes,
// patches, an event, deletion). Objects are their JSON form (map[string]any).
//
// Compatibility with KWOK stage files is the point: selectors whose keys are
// JQ expressions (gojq) or that are CEL expressions (cel-go, as Kubernetes
// uses), weights, delays and their ...From expressions, the
// next actions including patches and the older statusTemplate, steps
// (patches, and applies of objects of any kind), and immediateNextStage. Templates are Go templates with sprig's functions and
// the helpers KWOK stage files use (Now, Quote, YAML, NodeIP, PodIPWith,
// NodeConditions, ...).
package stage

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
)

// Stage is a compiled Stage.
type Stage struct {
	Name string
	// Kind of object it applies to.
	Kind schema.GroupVersionKind
	// Immediate: match the next stage right after applying this one.
	Immediate bool

	noSelector   bool
	labels       map[string]string
	annotations  map[string]string
	requirements []requirement
	weight       int
	weightFrom   *gojq.Code
	delay        delay
	actions      []action
}

// requirement is a JQ key tested with an operator, or a CEL expression.
type requirement struct {
	key    string
	code   *gojq.Code
	op     kwokv1.SelectorOperator
	values map[string]bool
	cel    cel.Program
}

type delay struct {
	ms, jitterMs         *int64
	msFrom, jitterMsFrom *gojq.Code
}

// action is one thing a stage does, in order.
type action struct {
	finalizers *kwokv1.StageFinalizers
	patch      *patchTemplate
	apply      *patchTemplate // renders a whole object, maybe of another kind
	event      *kwokv1.StageEvent
	delete     bool
}

type patchTemplate struct {
	subresource string
	root        string
	typ         kwokv1.StagePatchType // "" means the kind's default
	tmpl        *template.Template
	as          string // user to impersonate
}

// Compile checks a Stage and prepares it; errors name the stage and the field.
func Compile(s *kwokv1.Stage) (*Stage, error) {
	fail := func(field string, err error) (*Stage, error) {
		return nil, fmt.Errorf("stage %q: %s: %w", s.Name, field, err)
	}
	if s.Name == "" {
		return nil, fmt.Errorf("stage without metadata.name")
	}
	if s.Spec.ResourceRef.Kind == "" {
		return fail("spec.resourceRef.kind", fmt.Errorf("required"))
	}
	gv, err := schema.ParseGroupVersion(orDefault(s.Spec.ResourceRef.APIGroup, "v1"))
	if err != nil {
		return fail("spec.resourceRef.apiGroup", err)
	}
	c := &Stage{Name: s.Name, Kind: gv.WithKind(s.Spec.ResourceRef.Kind), weight: s.Spec.Weight,
		Immediate: s.Spec.ImmediateNextStage != nil && *s.Spec.ImmediateNextStage}
	if sel := s.Spec.Selector; sel == nil {
		c.noSelector = true
	} else {
		c.labels, c.annotations = sel.MatchLabels, sel.MatchAnnotations
		for i, r := range sel.MatchExpressions {
			field := fmt.Sprintf("spec.selector.matchExpressions[%d]", i)
			if r.CEL != nil {
				if r.Key != "" || r.Operator != "" || len(r.Values) != 0 {
					return fail(field, fmt.Errorf("cel stands alone: key, operator and values must be empty"))
				}
				prg, err := compileCEL(r.CEL.Expression)
				if err != nil {
					return fail(field+".cel.expression", err)
				}
				c.requirements = append(c.requirements, requirement{cel: prg})
				continue
			}
			if r.Key == "" {
				return fail(field+".key", fmt.Errorf("required without cel"))
			}
			code, err := compileJQ(r.Key)
			if err != nil {
				return fail(field+".key", err)
			}
			req := requirement{key: r.Key, code: code, op: r.Operator, values: map[string]bool{}}
			switch r.Operator {
			case kwokv1.SelectorOpIn, kwokv1.SelectorOpNotIn:
				if len(r.Values) == 0 {
					return fail(field+".values", fmt.Errorf("required with operator %s", r.Operator))
				}
			case kwokv1.SelectorOpExists, kwokv1.SelectorOpDoesNotExist:
				if len(r.Values) != 0 {
					return fail(field+".values", fmt.Errorf("must be empty with operator %s", r.Operator))
				}
			default:
				return fail(field+".operator", fmt.Errorf("%q is not In, NotIn, Exists or DoesNotExist", r.Operator))
			}
			for _, v := range r.Values {
				req.values[v] = true
			}
			c.requirements = append(c.requirements, req)
		}
	}
	if wf := s.Spec.WeightFrom; wf != nil && wf.ExpressionFrom != "" {
		if c.weightFrom, err = compileJQ(wf.ExpressionFrom); err != nil {
			return fail("spec.weightFrom.expressionFrom", err)
		}
	}
	if d := s.Spec.Delay; d != nil {
		c.delay.ms, c.delay.jitterMs = d.DurationMilliseconds, d.JitterDurationMilliseconds
		if d.DurationFrom != nil && d.DurationFrom.ExpressionFrom != "" {
			if c.delay.msFrom, err = compileJQ(d.DurationFrom.ExpressionFrom); err != nil {
				return fail("spec.delay.durationFrom.expressionFrom", err)
			}
		}
		if d.JitterDurationFrom != nil && d.JitterDurationFrom.ExpressionFrom != "" {
			if c.delay.jitterMsFrom, err = compileJQ(d.JitterDurationFrom.ExpressionFrom); err != nil {
				return fail("spec.delay.jitterDurationFrom.expressionFrom", err)
			}
		}
	}
	n := s.Spec.Next
	if n.Finalizers != nil {
		c.actions = append(c.actions, action{finalizers: n.Finalizers})
	}
	for i, p := range n.Patches {
		pt, err := compilePatch(s.Name, fmt.Sprintf("spec.next.patches[%d]", i), p)
		if err != nil {
			return nil, err
		}
		c.actions = append(c.actions, action{patch: pt})
	}
	if n.StatusTemplate != "" {
		p := kwokv1.StagePatch{Subresource: "status", Root: "status", Template: n.StatusTemplate, Impersonation: n.StatusPatchAs}
		if n.StatusSubresource != nil {
			p.Subresource = *n.StatusSubresource
		}
		pt, err := compilePatch(s.Name, "spec.next.statusTemplate", p)
		if err != nil {
			return nil, err
		}
		c.actions = append(c.actions, action{patch: pt})
	}
	if n.Event != nil {
		c.actions = append(c.actions, action{event: n.Event})
	}
	if err := c.compileSteps(s.Name, "spec.next.steps", n.Steps); err != nil {
		return nil, err
	}
	if n.Delete {
		c.actions = append(c.actions, action{delete: true})
	}
	if err := c.compileSteps(s.Name, "spec.steps", s.Spec.Steps); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Stage) compileSteps(stage, field string, steps []kwokv1.StageStep) error {
	for i, st := range steps {
		field := fmt.Sprintf("%s[%d]", field, i)
		if st.Finalizers != nil {
			c.actions = append(c.actions, action{finalizers: st.Finalizers})
		}
		if st.Patch != nil {
			pt, err := compilePatch(stage, field+".patch", *st.Patch)
			if err != nil {
				return err
			}
			c.actions = append(c.actions, action{patch: pt})
		}
		for j, p := range st.Patches {
			pt, err := compilePatch(stage, fmt.Sprintf("%s.patches[%d]", field, j), p)
			if err != nil {
				return err
			}
			c.actions = append(c.actions, action{patch: pt})
		}
		if a := st.Apply; a != nil {
			pt, err := compilePatch(stage, field+".apply", kwokv1.StagePatch{Subresource: a.Subresource, Template: a.Template,
				Type: a.Type, Impersonation: a.Impersonation})
			if err != nil {
				return err
			}
			c.actions = append(c.actions, action{apply: pt})
		}
		if st.Event != nil {
			c.actions = append(c.actions, action{event: st.Event})
		}
		if st.Delete {
			c.actions = append(c.actions, action{delete: true})
		}
	}
	return nil
}

func compilePatch(stage, field string, p kwokv1.StagePatch) (*patchTemplate, error) {
	tmpl, err := template.New(stage + "/" + field).Funcs(funcs).Option("missingkey=zero").Parse(p.Template)
	if err != nil {
		return nil, fmt.Errorf("stage %q: %s: template: %w", stage, field, err)
	}
	pt := &patchTemplate{subresource: p.Subresource, root: p.Root, tmpl: tmpl}
	if p.Type != nil {
		pt.typ = *p.Type
		if pt.typ != kwokv1.StagePatchTypeJSONPatch && pt.typ != kwokv1.StagePatchTypeMergePatch && pt.typ != kwokv1.StagePatchTypeStrategicMergePatch {
			return nil, fmt.Errorf("stage %q: %s.type: %q is not json, merge or strategic", stage, field, pt.typ)
		}
	}
	if p.Impersonation != nil {
		pt.as = p.Impersonation.Username
	}
	return pt, nil
}

func compileJQ(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid JQ expression %q: %w", expr, err)
	}
	return gojq.Compile(q)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Matches reports whether the object (its JSON form) is selected.
func (s *Stage) Matches(obj map[string]any) bool {
	if s.noSelector {
		return false
	}
	meta, _ := obj["metadata"].(map[string]any)
	if !subset(s.labels, meta["labels"]) || !subset(s.annotations, meta["annotations"]) {
		return false
	}
	for _, r := range s.requirements {
		if r.cel != nil {
			if !celTrue(r.cel, obj) {
				return false
			}
			continue
		}
		got := values(r.code, obj)
		switch r.op {
		case kwokv1.SelectorOpIn:
			if !anyIn(got, r.values) {
				return false
			}
		case kwokv1.SelectorOpNotIn:
			if anyIn(got, r.values) {
				return false
			}
		case kwokv1.SelectorOpExists:
			if len(got) == 0 {
				return false
			}
		case kwokv1.SelectorOpDoesNotExist:
			if len(got) != 0 {
				return false
			}
		}
	}
	return true
}

func subset(want map[string]string, have any) bool {
	m, _ := have.(map[string]any)
	for k, v := range want {
		if s, ok := m[k].(string); !ok || s != v {
			return false
		}
	}
	return true
}

func anyIn(got []string, set map[string]bool) bool {
	for _, g := range got {
		if set[g] {
			return true
		}
	}
	return false
}

// values runs a JQ expression on the object and returns its non-null
// results as strings. An expression that fails (iterating over null, say)
// yields nothing, as a missing field does.
func values(code *gojq.Code, obj map[string]any) []string {
	var out []string
	iter := code.Run(obj)
	for {
		v, ok := iter.Next()
		if !ok {
			return out
		}
		if _, isErr := v.(error); isErr || v == nil {
			continue
		}
		out = append(out, stringOf(v))
	}
}

func first(code *gojq.Code, obj map[string]any) (any, bool) {
	if code == nil {
		return nil, false
	}
	iter := code.Run(obj)
	for {
		v, ok := iter.Next()
		if !ok {
			return nil, false
		}
		if _, isErr := v.(error); isErr || v == nil {
			continue
		}
		return v, true
	}
}

func stringOf(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case int:
		return strconv.Itoa(t)
	case bool:
		return strconv.FormatBool(t)
	default:
		return fmt.Sprint(t)
	}
}

// Weight is the stage's weight for this object: from weightFrom when it
// yields a number, else weight.
func (s *Stage) Weight(obj map[string]any) int {
	if v, ok := first(s.weightFrom, obj); ok {
		switch t := v.(type) {
		case float64:
			return max(0, int(t))
		case int:
			return max(0, t)
		case string:
			if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
				return max(0, n)
			}
		}
	}
	return s.weight
}

// Delay is how long to wait before applying the stage to this object.
func (s *Stage) Delay(obj map[string]any, now time.Time, rng *rand.Rand) time.Duration {
	d, ok := duration(s.delay.msFrom, obj, now)
	if !ok && s.delay.ms != nil {
		d, ok = time.Duration(*s.delay.ms)*time.Millisecond, true
	}
	j, jok := duration(s.delay.jitterMsFrom, obj, now)
	if !jok && s.delay.jitterMs != nil {
		j, jok = time.Duration(*s.delay.jitterMs)*time.Millisecond, true
	}
	switch {
	case jok && !ok:
		return randBetween(rng, 0, j)
	case jok && j < d:
		return j
	case jok && j > d:
		return randBetween(rng, d, j)
	case ok:
		return max(0, d)
	default:
		return 0
	}
}

func randBetween(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return max(0, lo)
	}
	return max(0, lo+time.Duration(rng.Int64N(int64(hi-lo))))
}

// duration reads a delay from the object: a time (the delay lasts until
// then), a duration string, or a number of milliseconds.
func duration(code *gojq.Code, obj map[string]any, now time.Time) (time.Duration, bool) {
	v, ok := first(code, obj)
	if !ok {
		return 0, false
	}
	switch t := v.(type) {
	case float64:
		return time.Duration(t * float64(time.Millisecond)), true
	case int:
		return time.Duration(t) * time.Millisecond, true
	case string:
		if ts, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return ts.Sub(now), true
		}
		if d, err := time.ParseDuration(strings.TrimSpace(t)); err == nil {
			return d, true
		}
		if ms, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return 0, false
}

// Select picks the stage to apply to an object among those of its kind, or
// nil: the matching ones are weighed; with no positive weight among them,
// one is picked uniformly. Stages are considered in name order, so a seeded
// rng gives a reproducible choice.
func Select(stages []*Stage, obj map[string]any, rng *rand.Rand) *Stage {
	var matching []*Stage
	var weights []int
	total := 0
	for _, s := range stages {
		if s.Matches(obj) {
			w := s.Weight(obj)
			matching = append(matching, s)
			weights = append(weights, w)
			total += w
		}
	}
	switch {
	case len(matching) == 0:
		return nil
	case len(matching) == 1:
		return matching[0]
	case total == 0:
		return matching[rng.IntN(len(matching))]
	}
	n := rng.IntN(total)
	for i, w := range weights {
		if n < w {
			return matching[i]
		}
		n -= w
	}
	return matching[len(matching)-1]
}

// SortByName orders stages by name.
func SortByName(stages []*Stage) {
	sort.Slice(stages, func(i, j int) bool { return stages[i].Name < stages[j].Name })
}
