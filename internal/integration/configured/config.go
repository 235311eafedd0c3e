package configured

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/guard"
)

// File is what --configured-kinds reads.
type File struct {
	Kinds []Spec `json:"kinds"`
}

// Spec is one kind queued from configuration.
type Spec struct {
	// Group, Version and Kind name it; Resource is its plural, as the API
	// server serves it (its CRD is Resource.Group).
	Group    string `json:"group"`
	Version  string `json:"version"`
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	// Suspend is the path of the boolean that holds an object back while
	// true: "spec.runPolicy.suspend".
	Suspend string `json:"suspend"`
	// PodSets are the kind's groups of alike pods.
	PodSets []PodSetSpec `json:"podSets"`
	// Finished says which conditions of status.conditions, True, mean an
	// object has ended.
	Finished Finished `json:"finished"`
	// PodLabels are the labels the kind's controller finds its pods by:
	// changed on a pod, the controller would make another in its place, so
	// they do not change on pods the kind's objects control.
	PodLabels []string `json:"podLabels,omitempty"`
	// Unsupported are paths of fields berth does not follow for this kind
	// (autoscaling that would change the pods behind berth's back): an
	// object that sets one to other than its zero value (false, 0, "",
	// empty) is not queued, and a queued object's may not change.
	Unsupported []string `json:"unsupported,omitempty"`
}

// PodSetSpec is one pod set of a kind, or a list of them: where its pod
// template is, and how many pods of it an object runs at once.
type PodSetSpec struct {
	// Name names the pod set; "" for a List, whose entries are named by
	// NameFrom.
	Name string `json:"name,omitempty"`
	// List is the path of an array each entry of which is one pod set (a
	// RayCluster's worker groups); the other paths are then within an entry.
	List string `json:"list,omitempty"`
	// NameFrom is the path, within a List's entry, of the string that names
	// its pod set.
	NameFrom string `json:"nameFrom,omitempty"`
	// Template is the path of a pod template (metadata and spec). An object
	// without it has no such pod set.
	Template string `json:"template"`
	// Count is the path of the integer number of pods; "" or absent from
	// an object: one.
	Count string `json:"count,omitempty"`
	// MinCount and MaxCount are paths of integers the kind's controller
	// keeps the count within (MaxCount winning when they cross); absent:
	// no bound.
	MinCount string `json:"minCount,omitempty"`
	MaxCount string `json:"maxCount,omitempty"`
	// PodsPerCount is the path of the integer number of pods each count
	// runs (a multi-host replica's hosts); absent: one.
	PodsPerCount string `json:"podsPerCount,omitempty"`
}

// Finished names condition types, or says the kind's objects run until
// deleted (Never: a RayCluster), holding their quota until then.
type Finished struct {
	Succeeded []string `json:"succeeded,omitempty"`
	Failed    []string `json:"failed,omitempty"`
	Never     bool     `json:"never,omitempty"`
}

// Path is a field's path, one name per step.
type Path []string

// String is the path as written: "spec.runPolicy.suspend".
func (p Path) String() string { return strings.Join(p, ".") }

// Pointer is the path as a JSON pointer: "/spec/runPolicy/suspend".
func (p Path) Pointer() string { return "/" + strings.Join(p, "/") }

// step is a name CEL can select (package guard's policies read these paths
// in CEL), which every JSON field name of Kubernetes' own style is.
var step = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// celReserved are CEL's reserved words, which a policy could not select.
var celReserved = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
	"import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}

// ParsePath reads a dotted path; field says where it was written, for errors.
func ParsePath(field, s string) (Path, error) {
	p, err := parseSteps(field, s)
	if err != nil {
		return nil, err
	}
	if p[0] != "spec" {
		return nil, fmt.Errorf("%s: %q: the fields berth reads and sets are under spec", field, s)
	}
	return p, nil
}

// parseSteps reads a dotted path anywhere: within a list's entry too.
func parseSteps(field, s string) (Path, error) {
	if s == "" {
		return nil, fmt.Errorf("%s: is empty; want a dotted path such as spec.runPolicy.suspend", field)
	}
	p := Path(strings.Split(s, "."))
	for _, name := range p {
		if !step.MatchString(name) || slices.Contains(celReserved, name) {
			return nil, fmt.Errorf("%s: %q: each step of a path is a field name of letters, digits and _ (not starting with a digit, not a CEL reserved word), got %q", field, s, name)
		}
	}
	return p, nil
}

// optional parses a path that may be absent ("": nil).
func optional(field, s string, parse func(string, string) (Path, error)) (Path, error) {
	if s == "" {
		return nil, nil
	}
	return parse(field, s)
}

// Compiled is a Spec read and checked.
type Compiled struct {
	Spec
	GVK                             schema.GroupVersionKind
	Suspend                         Path
	PodSets                         []CompiledPodSet
	Unsupported                     []Path
	WebhookPath, DefaultWebhookPath string
}

// CompiledPodSet is a PodSetSpec read and checked. For a List, the other
// paths are within an entry.
type CompiledPodSet struct {
	Name                             string
	List, NameFrom                   Path // nil: one pod set, Name
	Template, Count                  Path // Count nil: one pod
	MinCount, MaxCount, PodsPerCount Path // nil: unbounded, one
}

// TrainingOperator is the module of Kubeflow's training operator whose
// published CRDs examples/configured/training-operator.yaml describes.
const TrainingOperator = "github.com/kubeflow/training-operator@v1.8.1"

// MaxPodSets is how many pod sets a Workload may have (its API's limit).
const MaxPodSets = 8

// builtIn are the kinds berth queues with its own code.
var builtIn = []schema.GroupKind{{Group: "batch", Kind: "Job"}, {Group: "", Kind: "Pod"}, {Group: "apps", Kind: "Deployment"},
	{Group: "apps", Kind: "StatefulSet"}, {Group: "jobset.x-k8s.io", Kind: "JobSet"}, {Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}}

// Parse reads a --configured-kinds file, refusing what cannot be followed
// with the kind and the field named.
func Parse(data []byte) ([]Compiled, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	var out []Compiled
	seen := map[schema.GroupKind]bool{}
	for i, s := range f.Kinds {
		c, err := Compile(s)
		if err != nil {
			return nil, fmt.Errorf("kinds[%d]: %w", i, err)
		}
		if seen[c.GVK.GroupKind()] {
			return nil, fmt.Errorf("kinds[%d]: %s is configured twice", i, c.GVK.GroupKind())
		}
		seen[c.GVK.GroupKind()] = true
		out = append(out, c)
	}
	return out, nil
}

// Merge makes one --configured-kinds file of the kinds of files; Parse
// refuses a kind two of them name.
func Merge(files ...[]byte) ([]byte, error) {
	var all File
	for i, data := range files {
		var f File
		if err := yaml.UnmarshalStrict(data, &f); err != nil {
			return nil, fmt.Errorf("file %d: %w", i+1, err)
		}
		all.Kinds = append(all.Kinds, f.Kinds...)
	}
	return yaml.Marshal(all)
}

// Compile checks one Spec and reads its paths.
func Compile(s Spec) (Compiled, error) {
	c := Compiled{Spec: s, GVK: schema.GroupVersionKind{Group: s.Group, Version: s.Version, Kind: s.Kind}}
	name := s.Kind
	if name == "" {
		return c, fmt.Errorf("kind: is empty")
	}
	switch {
	case s.Group == "":
		return c, fmt.Errorf("%s: group: is empty; a kind queued from configuration is a custom resource's", name)
	case len(validation.IsDNS1123Subdomain(s.Group)) > 0:
		return c, fmt.Errorf("%s: group: %q is not a DNS subdomain", name, s.Group)
	case s.Version == "":
		return c, fmt.Errorf("%s: version: is empty", name)
	case len(validation.IsDNS1035Label(s.Resource)) > 0:
		return c, fmt.Errorf("%s: resource: %q is not a resource name; want the kind's plural as the API server serves it (mpijobs)", name, s.Resource)
	}
	if slices.Contains(builtIn, c.GVK.GroupKind()) {
		return c, fmt.Errorf("%s: berth queues %s with its own integration (--integrations), not from configuration", name, c.GVK.GroupKind())
	}
	var err error
	if c.Suspend, err = ParsePath(name+": suspend", s.Suspend); err != nil {
		return c, err
	}
	if len(s.PodSets) == 0 {
		return c, fmt.Errorf("%s: podSets: is empty; a kind has at least one pod set", name)
	}
	if len(s.PodSets) > MaxPodSets {
		return c, fmt.Errorf("%s: podSets: has %d entries; berth queues at most %d pod sets of one object", name, len(s.PodSets), MaxPodSets)
	}
	names := map[string]bool{}
	for i, ps := range s.PodSets {
		cp, err := compilePodSet(fmt.Sprintf("%s: podSets[%d]", name, i), ps)
		if err != nil {
			return c, err
		}
		if cp.List == nil {
			if names[ps.Name] {
				return c, fmt.Errorf("%s: podSets[%d].name: %q is used twice", name, i, ps.Name)
			}
			names[ps.Name] = true
		}
		c.PodSets = append(c.PodSets, cp)
	}
	for i, u := range s.Unsupported {
		p, err := ParsePath(fmt.Sprintf("%s: unsupported[%d]", name, i), u)
		if err != nil {
			return c, err
		}
		c.Unsupported = append(c.Unsupported, p)
	}
	for i, l := range s.PodLabels {
		if errs := validation.IsQualifiedName(l); len(errs) > 0 {
			return c, fmt.Errorf("%s: podLabels[%d]: %q: %s", name, i, l, strings.Join(errs, "; "))
		}
	}
	switch conds := len(s.Finished.Succeeded) + len(s.Finished.Failed); {
	case conds == 0 && !s.Finished.Never:
		return c, fmt.Errorf("%s: finished: names no condition; berth would never know an object ended, and would hold its quota for ever "+
			"(say never: true for a kind whose objects run until deleted)", name)
	case conds > 0 && s.Finished.Never:
		return c, fmt.Errorf("%s: finished: names conditions and says never; a kind's objects either end or run until deleted", name)
	}
	for _, t := range append(slices.Clone(s.Finished.Succeeded), s.Finished.Failed...) {
		if t == "" {
			return c, fmt.Errorf("%s: finished: a condition type is empty", name)
		}
	}
	base := "/mutate-configured-" + strings.ReplaceAll(s.Group, ".", "-") + "-" + s.Version + "-" + strings.ToLower(s.Kind)
	c.WebhookPath, c.DefaultWebhookPath = base, base+"-default"
	return c, nil
}

// compilePodSet checks one pod set; at says where it was written.
func compilePodSet(at string, ps PodSetSpec) (CompiledPodSet, error) {
	cp := CompiledPodSet{Name: ps.Name}
	inner := ParsePath
	var err error
	if ps.List != "" {
		if ps.Name != "" {
			return cp, fmt.Errorf("%s.name: a list's pod sets are named by their entries (nameFrom), not by name", at)
		}
		if cp.List, err = ParsePath(at+".list", ps.List); err != nil {
			return cp, err
		}
		if cp.NameFrom, err = parseSteps(at+".nameFrom", ps.NameFrom); err != nil {
			return cp, err
		}
		// Within an entry: any field name starts a path.
		inner = parseSteps
	} else {
		if errs := validation.IsDNS1123Label(ps.Name); len(errs) > 0 {
			return cp, fmt.Errorf("%s.name: %q: %s", at, ps.Name, strings.Join(errs, "; "))
		}
		if ps.NameFrom != "" {
			return cp, fmt.Errorf("%s.nameFrom: names the entries of a list; this pod set has no list", at)
		}
	}
	if cp.Template, err = inner(at+".template", ps.Template); err != nil {
		return cp, err
	}
	for _, f := range []struct {
		into  *Path
		field string
		s     string
	}{{&cp.Count, "count", ps.Count}, {&cp.MinCount, "minCount", ps.MinCount}, {&cp.MaxCount, "maxCount", ps.MaxCount}, {&cp.PodsPerCount, "podsPerCount", ps.PodsPerCount}} {
		if *f.into, err = optional(at+"."+f.field, f.s, inner); err != nil {
			return cp, err
		}
	}
	if cp.Count == nil && (cp.MinCount != nil || cp.MaxCount != nil) {
		return cp, fmt.Errorf("%s: minCount and maxCount bound a count; this pod set has none", at)
	}
	return cp, nil
}

// CRDName is the name of the kind's CustomResourceDefinition.
func (c Compiled) CRDName() string { return c.Resource + "." + c.Group }

// Guard is the kind as package guard describes it: its queue and priority
// labels change only while it is suspended, berth alone unsuspends it, its
// pod templates and counts change only while it is suspended, its
// unsupported fields not at all, and its pods keep the labels berth and the
// kind's controller find them by.
func (c *Compiled) Guard() guard.Kind {
	k := guard.Kind{Name: c.Kind, Group: c.Group, Version: c.Version, Resource: c.Resource, Suspend: c.Suspend.String(), Qualified: true,
		Labels: []string{berthv1.PrebuiltWorkloadLabel, berthv1.MaxExecTimeLabel, berthv1.KueueMaxExecTimeLabel},
		Children: []guard.Child{{Name: "Pod", Group: "", Version: "v1", Resource: "pods",
			Labels: append([]string{berthv1.OwnerUIDLabel}, c.PodLabels...)}}}
	for _, ps := range c.PodSets {
		if ps.List != nil {
			k.Fixed = append(k.Fixed, ps.List.String()) // the entries, all they say
			continue
		}
		for _, p := range []Path{ps.Template, ps.Count, ps.MinCount, ps.MaxCount, ps.PodsPerCount} {
			if p != nil {
				k.Fixed = append(k.Fixed, p.String())
			}
		}
	}
	for _, p := range c.Unsupported {
		k.Immutable = append(k.Immutable, p.String())
	}
	return k
}

// Rules are what berth's controller must be allowed to do for kinds: read
// and update their objects, read their CRDs, and apply their admission
// policies (package guard), which it does itself when it turns a kind on.
func Rules(kinds []Compiled) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"},
		Resources: []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"},
		Verbs:     []string{"get", "create", "update", "patch"}}}
	var crds []string
	for _, k := range kinds {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.Group}, Resources: []string{k.Resource},
			Verbs: []string{"get", "list", "watch", "update", "patch"}})
		crds = append(crds, k.CRDName())
	}
	// Its CRDs, to check the configured paths against their schema.
	return append(rules, rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
		ResourceNames: crds, Verbs: []string{"get"}})
}
