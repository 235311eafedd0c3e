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
}

// PodSetSpec is one pod set of a kind: where its pod template is, and how
// many pods of it an object runs at once.
type PodSetSpec struct {
	Name string `json:"name"`
	// Template is the path of a pod template (metadata and spec). An object
	// without it has no such pod set.
	Template string `json:"template"`
	// Count is the path of the integer number of pods; "" or absent from
	// an object: one.
	Count string `json:"count,omitempty"`
}

// Finished names condition types.
type Finished struct {
	Succeeded []string `json:"succeeded,omitempty"`
	Failed    []string `json:"failed,omitempty"`
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
	if s == "" {
		return nil, fmt.Errorf("%s: is empty; want a dotted path such as spec.runPolicy.suspend", field)
	}
	p := Path(strings.Split(s, "."))
	for _, name := range p {
		if !step.MatchString(name) || slices.Contains(celReserved, name) {
			return nil, fmt.Errorf("%s: %q: each step of a path is a field name of letters, digits and _ (not starting with a digit, not a CEL reserved word), got %q", field, s, name)
		}
	}
	if p[0] != "spec" {
		return nil, fmt.Errorf("%s: %q: the fields berth reads and sets are under spec", field, s)
	}
	return p, nil
}

// Compiled is a Spec read and checked.
type Compiled struct {
	Spec
	GVK                             schema.GroupVersionKind
	Suspend                         Path
	PodSets                         []CompiledPodSet
	WebhookPath, DefaultWebhookPath string
}

// CompiledPodSet is a PodSetSpec read and checked.
type CompiledPodSet struct {
	Name            string
	Template, Count Path // Count nil: one pod
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
		at := fmt.Sprintf("%s: podSets[%d]", name, i)
		if errs := validation.IsDNS1123Label(ps.Name); len(errs) > 0 {
			return c, fmt.Errorf("%s.name: %q: %s", at, ps.Name, strings.Join(errs, "; "))
		}
		if names[ps.Name] {
			return c, fmt.Errorf("%s.name: %q is used twice", at, ps.Name)
		}
		names[ps.Name] = true
		cp := CompiledPodSet{Name: ps.Name}
		if cp.Template, err = ParsePath(at+".template", ps.Template); err != nil {
			return c, err
		}
		if ps.Count != "" {
			if cp.Count, err = ParsePath(at+".count", ps.Count); err != nil {
				return c, err
			}
		}
		c.PodSets = append(c.PodSets, cp)
	}
	if len(s.Finished.Succeeded)+len(s.Finished.Failed) == 0 {
		return c, fmt.Errorf("%s: finished: names no condition; berth would never know an object ended, and would hold its quota for ever", name)
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

// CRDName is the name of the kind's CustomResourceDefinition.
func (c Compiled) CRDName() string { return c.Resource + "." + c.Group }

// Guard is the kind as package guard describes it: its queue and priority
// labels change only while it is suspended, berth alone unsuspends it, its
// pod templates and counts change only while it is suspended, and its pods
// keep the label berth finds them by.
func (c *Compiled) Guard() guard.Kind {
	k := guard.Kind{Name: c.Kind, Group: c.Group, Version: c.Version, Resource: c.Resource, Suspend: c.Suspend.String(), Qualified: true,
		Labels:   []string{berthv1.PrebuiltWorkloadLabel, berthv1.MaxExecTimeLabel, berthv1.KueueMaxExecTimeLabel},
		Children: []guard.Child{{Name: "Pod", Group: "", Version: "v1", Resource: "pods", Labels: []string{berthv1.OwnerUIDLabel}}}}
	for _, ps := range c.PodSets {
		k.Fixed = append(k.Fixed, ps.Template.String())
		if ps.Count != nil {
			k.Fixed = append(k.Fixed, ps.Count.String())
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
