package configured

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// Requires are fields a queued object must set to one of some values
	// (a RayJob must delete its cluster when it finishes, or KubeRay will
	// not suspend it): another is refused, and a queued object's do not
	// change.
	Requires []Requirement `json:"requires,omitempty"`
	// OwnedBy are configured kinds (Kind names in the same group) whose
	// controller makes objects of this kind for them (a RayJob's
	// RayCluster): such an object is queued with its owner, not on its own,
	// and only the owner kind's Controllers may make one.
	OwnedBy []string `json:"ownedBy,omitempty"`
	// Controllers are the user names the kind's own controller acts as
	// (KubeRay's operator): only they make the objects of the kinds it
	// owns (OwnedBy).
	Controllers []string `json:"controllers,omitempty"`
}

// Requirement says a field's value is one of Values; absent, it is none of
// them.
type Requirement struct {
	Path   string `json:"path"`
	Values []any  `json:"values"`
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
	// When, if set, says the pod set exists only while a field has one of
	// some values (a RayJob's submitter, only in K8sJobMode).
	When *Requirement `json:"when,omitempty"`
	// Default is the pod template the kind's controller uses when an
	// object has none at Template (KubeRay's default submitter): its pods
	// are counted, but berth cannot send them to their flavor's nodes.
	Default *corev1.PodTemplateSpec `json:"default,omitempty"`
}

// Finished names condition types, or values of a status field (Field:
// a RayJob's status.jobDeploymentStatus), or says the kind's objects run
// until deleted (Never: a RayCluster), holding their quota until then.
type Finished struct {
	Field     string   `json:"field,omitempty"`
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
	Requires                        []CompiledRequirement
	FinishedField                   Path // nil: conditions
	WebhookPath, DefaultWebhookPath string
	// Owns are the configured kinds whose objects this kind's controller
	// makes for its objects (their OwnedBy names it): a RayJob's RayCluster.
	Owns []Spec
}

// CompiledRequirement is a Requirement read and checked.
type CompiledRequirement struct {
	Path   Path
	Values []any
}

// CompiledPodSet is a PodSetSpec read and checked. For a List, the other
// paths are within an entry.
type CompiledPodSet struct {
	Name                             string
	List, NameFrom                   Path // nil: one pod set, Name
	Template, Count                  Path // Count nil: one pod
	MinCount, MaxCount, PodsPerCount Path // nil: unbounded, one
	When                             *CompiledRequirement
	Default                          *corev1.PodTemplateSpec
}

// TrainingOperator is the module of Kubeflow's training operator whose
// published CRDs config/addons/training-operator/kinds.yaml describes (the
// version berth up --with training-operator runs).
const TrainingOperator = "github.com/kubeflow/training-operator@v1.9.3"

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
	for i, c := range out {
		for j, o := range c.OwnedBy {
			owner := schema.GroupKind{Group: c.Group, Kind: o}
			k := slices.IndexFunc(out, func(x Compiled) bool { return x.GVK.GroupKind() == owner })
			switch {
			case k < 0:
				return nil, fmt.Errorf("kinds[%d]: %s: ownedBy[%d]: %s is not configured here", i, c.Kind, j, owner)
			case len(out[k].Controllers) == 0:
				return nil, fmt.Errorf("kinds[%d]: %s: ownedBy[%d]: %s names no controllers: only its controller may make a %s queued with it",
					i, c.Kind, j, owner, c.Kind)
			}
			out[k].Owns = append(out[k].Owns, c.Spec)
		}
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

// WithControllers is a --configured-kinds file with the controllers of
// each kind that names some set to user alone: the file of an addon that
// `berth up` runs as user.
func WithControllers(data []byte, user string) ([]byte, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	for i := range f.Kinds {
		if len(f.Kinds[i].Controllers) > 0 {
			f.Kinds[i].Controllers = []string{user}
		}
	}
	return yaml.Marshal(f)
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
	for i, r := range s.Requires {
		cr, err := compileRequirement(fmt.Sprintf("%s: requires[%d]", name, i), r)
		if err != nil {
			return c, err
		}
		c.Requires = append(c.Requires, cr)
	}
	for i, o := range s.OwnedBy {
		if o == "" || o == s.Kind {
			return c, fmt.Errorf("%s: ownedBy[%d]: %q: want another configured kind of group %s", name, i, o, s.Group)
		}
	}
	for i, u := range s.Controllers {
		if strings.TrimSpace(u) == "" {
			return c, fmt.Errorf("%s: controllers[%d]: is empty; want a user name such as system:serviceaccount:ray-system:kuberay-operator", name, i)
		}
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
			return c, fmt.Errorf("%s: finished: a condition type or value is empty", name)
		}
	}
	if s.Finished.Field != "" {
		if c.FinishedField, err = parseSteps(name+": finished.field", s.Finished.Field); err != nil {
			return c, err
		}
		if c.FinishedField[0] != "status" || len(c.FinishedField) < 2 {
			return c, fmt.Errorf("%s: finished.field: %q: berth reads how an object ended from its status (status.phase)", name, s.Finished.Field)
		}
		if s.Finished.Never {
			return c, fmt.Errorf("%s: finished: names a field and says never; a kind's objects either end or run until deleted", name)
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
	if ps.When != nil {
		if cp.List != nil {
			return cp, fmt.Errorf("%s.when: a list's pod sets are there or not by its entries", at)
		}
		r, err := compileRequirement(at+".when", *ps.When)
		if err != nil {
			return cp, err
		}
		cp.When = &r
	}
	if ps.Default != nil {
		if cp.List != nil {
			return cp, fmt.Errorf("%s.default: a list's entries each have their template", at)
		}
		if len(ps.Default.Spec.Containers) == 0 {
			return cp, fmt.Errorf("%s.default.spec.containers: is empty; the default template is what the kind's controller runs, with its requests", at)
		}
		cp.Default = ps.Default
	}
	return cp, nil
}

// compileRequirement checks a Requirement: a path under spec and values of
// a field's kind (strings, booleans, numbers).
func compileRequirement(at string, r Requirement) (CompiledRequirement, error) {
	p, err := ParsePath(at+".path", r.Path)
	if err != nil {
		return CompiledRequirement{}, err
	}
	if len(r.Values) == 0 {
		return CompiledRequirement{}, fmt.Errorf("%s.values: is empty; name the values the field may have", at)
	}
	for j, v := range r.Values {
		switch v.(type) {
		case string, bool, float64, int64:
		default:
			return CompiledRequirement{}, fmt.Errorf("%s.values[%d]: %v is not a string, boolean or number", at, j, v)
		}
	}
	return CompiledRequirement{Path: p, Values: r.Values}, nil
}

// Holds reports whether u's field has one of r's values.
func (r CompiledRequirement) Holds(u map[string]any) bool {
	v, found, err := unstructured.NestedFieldNoCopy(u, r.Path...)
	if err != nil || !found || v == nil {
		return false
	}
	got, err := json.Marshal(v)
	if err != nil {
		return false
	}
	for _, want := range r.Values {
		if w, err := json.Marshal(want); err == nil && string(w) == string(got) {
			return true
		}
	}
	return false
}

// Want says the values a message asks for: true, or one of "A", "B".
func (r CompiledRequirement) Want() string {
	vals := make([]string, len(r.Values))
	for i, v := range r.Values {
		b, _ := json.Marshal(v)
		vals[i] = string(b)
	}
	if len(vals) == 1 {
		return vals[0]
	}
	return "one of " + strings.Join(vals, ", ")
}

// CRDName is the name of the kind's CustomResourceDefinition.
func (c Compiled) CRDName() string { return c.Resource + "." + c.Group }

// Guard is the kind as package guard describes it: its queue and priority
// labels change only while it is suspended, berth alone unsuspends it, its
// pod templates and counts (and the fields a pod set's presence depends
// on) change only while it is suspended, its unsupported and required
// fields not at all, and its pods keep the labels berth and the kind's
// controller find them by.
func (c *Compiled) Guard() guard.Kind {
	k := guard.Kind{Name: c.Kind, Group: c.Group, Version: c.Version, Resource: c.Resource, Suspend: c.Suspend.String(), Qualified: true,
		Labels: []string{berthv1.PrebuiltWorkloadLabel, berthv1.MaxExecTimeLabel, berthv1.KueueMaxExecTimeLabel},
		Children: []guard.Child{{Name: "Pod", Group: "", Version: "v1", Resource: "pods",
			Labels: append([]string{berthv1.OwnerUIDLabel}, c.PodLabels...)}}}
	// An object made for one of c's (a RayJob's RayCluster) keeps the
	// queue label it was made with: without it, it would be an unqueued
	// object of its kind, free to grow, though c's Workload counts it.
	for _, o := range c.Owns {
		k.Children = append(k.Children, guard.Child{Name: o.Kind, Group: o.Group, Version: o.Version, Resource: o.Resource,
			Kept: []string{berthv1.QueueNameLabel, berthv1.KueueQueueNameLabel}})
	}
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
	for _, r := range c.Requires {
		k.Immutable = append(k.Immutable, r.Path.String())
	}
	for _, ps := range c.PodSets {
		// Whether the pod set is there: as much its shape as its template.
		if ps.When != nil && !slices.Contains(k.Fixed, ps.When.Path.String()) {
			k.Fixed = append(k.Fixed, ps.When.Path.String())
		}
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
