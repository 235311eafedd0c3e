package stage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
)

// Env is what templates may ask of the simulated world.
type Env interface {
	Now() time.Time
	// StartTime is when the simulator started.
	StartTime() time.Time
	// NodeIP is a node's address.
	NodeIP(node string) string
	// PodIP is a pod's address: the node's with host networking, else one
	// of the node's pod range, the same for the same pod every time.
	PodIP(node string, hostNetwork bool, uid, name, namespace string) string
	// NodePort is the kubelet port nodes advertise.
	NodePort() int
	Version() string
}

// funcs are the template functions: sprig's, and the ones KWOK's stage
// files use (KWOK's current set: Quote, YAML, Now, StartTime, Version,
// NodeConditions, NodeIP, NodeName, NodePort, NodeIPWith, NodeIPsWith,
// PodIP, PodIPWith, PodIPsWith). Those that need the Env or the object are
// stand-ins here, rebound for each rendering (see bind).
var funcs = func() template.FuncMap {
	f := sprig.TxtFuncMap()
	for k, v := range (template.FuncMap{
		"Quote":          quote,
		"YAML":           yamlIndent,
		"Now":            func() string { return "" },
		"StartTime":      func() string { return "" },
		"Version":        func() string { return "" },
		"NodeIP":         func() string { return "" },
		"NodeName":       func() string { return "" },
		"NodePort":       func() int { return 0 },
		"NodeIPWith":     func(string) string { return "" },
		"NodeIPsWith":    func(string) []string { return nil },
		"PodIP":          func() string { return "" },
		"PodIPWith":      func(string, bool, string, string, string) string { return "" },
		"PodIPsWith":     func(string, bool, string, string, string) []string { return nil },
		"NodeConditions": nodeConditions,
	}) {
		f[k] = v
	}
	return f
}()

// bind returns the object-specific helpers for rendering obj.
func bind(obj map[string]any, kind schema.GroupVersionKind, env Env) template.FuncMap {
	meta, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	name, _ := meta["name"].(string)
	node := name
	if kind.Kind != "Node" {
		node, _ = spec["nodeName"].(string)
	}
	now := env.Now().UTC().Format(time.RFC3339Nano)
	started := env.StartTime().UTC().Format(time.RFC3339Nano)
	return template.FuncMap{
		"Now":        func() string { return now },
		"StartTime":  func() string { return started },
		"Version":    env.Version,
		"NodeIP":     func() string { return env.NodeIP(node) },
		"NodeName":   func() string { return node },
		"NodePort":   env.NodePort,
		"NodeIPWith": env.NodeIP,
		"PodIP": func() string {
			hostNet, _ := spec["hostNetwork"].(bool)
			uid, _ := meta["uid"].(string)
			ns, _ := meta["namespace"].(string)
			return env.PodIP(node, hostNet, uid, name, ns)
		},
		"PodIPWith": env.PodIP,
		// One address per family; the simulator gives IPv4 only.
		"NodeIPsWith": func(node string) []string { return []string{env.NodeIP(node)} },
		"PodIPsWith": func(node string, hostNetwork bool, uid, name, namespace string) []string {
			return []string{env.PodIP(node, hostNetwork, uid, name, namespace)}
		},
	}
}

// withSections returns obj with empty metadata, spec and status where it has
// none, as the typed object KWOK renders would: a template that reads
// .status.addresses of a node with no status yet renders nothing there
// instead of failing. obj itself is not changed.
func withSections(obj map[string]any) map[string]any {
	var out map[string]any
	for _, k := range []string{"metadata", "spec", "status"} {
		if _, ok := obj[k].(map[string]any); ok {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(obj)+3)
			for kk, v := range obj {
				out[kk] = v
			}
		}
		out[k] = map[string]any{}
	}
	if out == nil {
		return obj
	}
	return out
}

// quote renders any value as a double-quoted string, safe in YAML and JSON.
func quote(v any) string {
	s, ok := v.(string)
	if !ok {
		if v == nil {
			s = ""
		} else {
			s = fmt.Sprint(v)
		}
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// yamlIndent renders a value as YAML, every line indented by indent levels
// of two spaces, for nesting under a key of the template.
func yamlIndent(v any, indent ...int) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	pad := ""
	if len(indent) > 0 {
		pad = strings.Repeat("  ", indent[0])
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = pad + lines[i]
	}
	return strings.Join(lines, "\n"), nil
}

// nodeConditions are the conditions of a healthy node, as a kubelet reports them.
func nodeConditions() []map[string]any {
	c := func(typ, status, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message}
	}
	return []map[string]any{
		c("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
		c("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		c("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		c("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		c("NetworkUnavailable", "False", "RouteCreated", "RouteController created a route"),
	}
}

// Action is one rendered thing to do to the object (or, for Apply, to
// the object it renders).
type Action struct {
	Finalizers *kwokv1.StageFinalizers
	Patch      *Patch
	Apply      *Applied
	Event      *kwokv1.StageEvent
	Delete     bool
}

// Applied is a rendered object to write: applied server-side when Type is
// empty, else that patch of the existing object it names.
type Applied struct {
	Object      map[string]any
	Subresource string
	Type        kwokv1.StagePatchType
	As          string
}

// Patch is a rendered patch.
type Patch struct {
	Subresource string
	// Type is json, merge or strategic; "" means the kind's default
	// (strategic for built-in kinds, merge otherwise).
	Type kwokv1.StagePatchType
	Data []byte
	// As is the user to impersonate, if any.
	As string
}

// Render renders what the stage does to obj.
func (s *Stage) Render(obj map[string]any, env Env) ([]Action, error) {
	bound := bind(obj, s.Kind, env)
	out := make([]Action, 0, len(s.actions))
	for _, a := range s.actions {
		switch {
		case a.patch != nil:
			data, err := a.patch.render(obj, bound)
			if err != nil {
				return nil, fmt.Errorf("stage %q: %w", s.Name, err)
			}
			out = append(out, Action{Patch: &Patch{Subresource: a.patch.subresource, Type: a.patch.typ, Data: data, As: a.patch.as}})
		case a.apply != nil:
			data, err := a.apply.render(obj, bound)
			if err != nil {
				return nil, fmt.Errorf("stage %q: %w", s.Name, err)
			}
			var o map[string]any
			if err := json.Unmarshal(data, &o); err != nil {
				return nil, fmt.Errorf("stage %q: %s: not an object: %w", s.Name, a.apply.tmpl.Name(), err)
			}
			if err := named(o); err != nil {
				return nil, fmt.Errorf("stage %q: %s: %w", s.Name, a.apply.tmpl.Name(), err)
			}
			out = append(out, Action{Apply: &Applied{Object: o, Subresource: a.apply.subresource, Type: a.apply.typ, As: a.apply.as}})
		default:
			out = append(out, Action{Finalizers: a.finalizers, Event: a.event, Delete: a.delete})
		}
	}
	return out, nil
}

func (p *patchTemplate) render(obj map[string]any, bound template.FuncMap) ([]byte, error) {
	t, err := p.tmpl.Clone()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Funcs(bound).Execute(&buf, withSections(obj)); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	js, err := yaml.YAMLToJSON(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: the template did not render YAML: %w\n%s", t.Name(), err, buf.String())
	}
	if p.typ == kwokv1.StagePatchTypeJSONPatch || p.root == "" {
		return js, nil
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, err
	}
	// root "a.b" nests the rendered value as {"a": {"b": value}}.
	parts := strings.Split(p.root, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		v = map[string]any{parts[i]: v}
	}
	return json.Marshal(v)
}

// named checks that a rendered object says what it is and which one.
func named(o map[string]any) error {
	var missing []string
	for _, k := range []string{"apiVersion", "kind"} {
		if v, _ := o[k].(string); v == "" {
			missing = append(missing, k)
		}
	}
	meta, _ := o["metadata"].(map[string]any)
	if v, _ := meta["name"].(string); v == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("the rendered object has no %s", strings.Join(missing, ", "))
	}
	return nil
}

// PatchType is the patch type to use for a kind: the patch's own, else
// strategic for kinds with a built-in Go type, merge otherwise.
func PatchType(p *Patch, kind schema.GroupVersionKind) kwokv1.StagePatchType {
	if p.Type != "" {
		return p.Type
	}
	if scheme.Scheme.Recognizes(kind) {
		return kwokv1.StagePatchTypeStrategicMergePatch
	}
	return kwokv1.StagePatchTypeMergePatch
}

// Apply computes, without I/O, what the object becomes once the actions are
// applied (nil once deleted): what the simulator compares against to skip
// writes that would change nothing, and what golden tests check. Applied
// objects are other objects: they leave this one as it is.
func Apply(obj map[string]any, kind schema.GroupVersionKind, actions []Action) (map[string]any, error) {
	cur, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	for _, a := range actions {
		switch {
		case a.Delete:
			return nil, nil
		case a.Finalizers != nil:
			var m map[string]any
			if err := json.Unmarshal(cur, &m); err != nil {
				return nil, err
			}
			setFinalizers(m, Finalizers(m, a.Finalizers))
			if cur, err = json.Marshal(m); err != nil {
				return nil, err
			}
		case a.Patch != nil:
			if cur, err = applyPatch(cur, kind, a.Patch); err != nil {
				return nil, err
			}
		}
	}
	var out map[string]any
	return out, json.Unmarshal(cur, &out)
}

func applyPatch(doc []byte, kind schema.GroupVersionKind, p *Patch) ([]byte, error) {
	switch PatchType(p, kind) {
	case kwokv1.StagePatchTypeJSONPatch:
		jp, err := jsonpatch.DecodePatch(p.Data)
		if err != nil {
			return nil, err
		}
		return jp.Apply(doc)
	case kwokv1.StagePatchTypeStrategicMergePatch:
		schemaObj, err := scheme.Scheme.New(kind)
		if err != nil {
			return nil, err
		}
		return strategicpatch.StrategicMergePatch(doc, p.Data, schemaObj)
	default:
		return jsonpatch.MergePatch(doc, p.Data)
	}
}

// Finalizers returns the object's finalizers after the change.
func Finalizers(obj map[string]any, f *kwokv1.StageFinalizers) []string {
	meta, _ := obj["metadata"].(map[string]any)
	raw, _ := meta["finalizers"].([]any)
	var cur []string
	if !f.Empty {
		for _, v := range raw {
			if s, ok := v.(string); ok {
				cur = append(cur, s)
			}
		}
	}
	remove := map[string]bool{}
	for _, r := range f.Remove {
		remove[r.Value] = true
	}
	var out []string
	have := map[string]bool{}
	for _, s := range cur {
		if !remove[s] && !have[s] {
			out = append(out, s)
			have[s] = true
		}
	}
	for _, a := range f.Add {
		if !have[a.Value] {
			out = append(out, a.Value)
			have[a.Value] = true
		}
	}
	return out
}

func setFinalizers(obj map[string]any, fs []string) {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if len(fs) == 0 {
		delete(meta, "finalizers")
		return
	}
	vals := make([]any, len(fs))
	for i, f := range fs {
		vals[i] = f
	}
	meta["finalizers"] = vals
}
