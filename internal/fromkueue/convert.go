package fromkueue

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/config"
)

// Group is Kueue's API group.
const Group = "kueue.x-k8s.io"

// BerthAPIVersion is what imported objects are written as.
const BerthAPIVersion = "berth.dev/v1beta1"

// Kinds lists the kinds Import translates to a berth kind of the same name.
var Kinds = []string{"ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "WorkloadPriorityClass", "Topology", "AdmissionCheck"}

// Translated are the Kueue kinds Import turns into a berth kind of another
// name: MultiKueue's, into berth's multicluster dispatch.
var Translated = map[string]string{"MultiKueueConfig": "MultiClusterConfig", "MultiKueueCluster": "WorkerCluster"}

// Kueue's own admission check controllers: MultiKueue's has berth's
// multicluster check as its equivalent; the others have none.
const (
	multiKueueController = Group + "/multikueue"
	kueueControllers     = Group + "/"
)

// Drop is a field that was not carried over, and why.
type Drop struct {
	Field string `json:"field"`
	Why   string `json:"why"`
}

// Object is one imported object, with what it lost.
type Object struct {
	Object  map[string]any `json:"object"`
	Dropped []Drop         `json:"dropped,omitempty"`
}

// Name is "Kind name" or "Kind namespace/name".
func (o Object) Name() string { return describe(o.Object) }

func describe(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return kind + " " + name
}

// renames maps Kueue field paths (dotted, without list indices) to berth's,
// by kind.
var renames = map[string]map[string]string{
	"ClusterQueue": {"spec.cohortName": "spec.cohort"},
	"Cohort":       {"spec.parentName": "spec.parent"},
}

// values maps Kueue values to berth's where the names differ (Kueue
// v1beta2 renamed Borrow and Preempt to MayStopSearch), by kind and path.
var values = map[string]map[string]string{
	"ClusterQueue spec.flavorFungibility.whenCanBorrow":  {"MayStopSearch": "Borrow"},
	"ClusterQueue spec.flavorFungibility.whenCanPreempt": {"MayStopSearch": "Preempt"},
}

// reasons say why a Kueue field berth lacks is left behind, where there is
// more to say than that berth has no such field.
var reasons = map[string]string{
	"ClusterQueue spec.concurrentAdmissionPolicy":    "concurrent admission (flavor migration) is not supported by berth",
	"ClusterQueue spec.admissionChecksStrategy":      "berth reads only the name and onFlavors of each of its rules",
	"ClusterQueue spec.flavorFungibility.preference": "berth has no preference between borrowing and preemption across flavors",
	"AdmissionCheck spec.retryDelayMinutes":          "berth backs a Retry off exponentially (1 s doubling to 10 min) instead",
	"metadata.ownerReferences":                       "owners belong to the old cluster",
	"metadata.finalizers":                            "finalizers belong to the old cluster's controllers",
}

// serverSet are metadata fields the API server writes: not configuration,
// left behind without a word.
var serverSet = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// Import translates one Kueue object. An object that is not Kueue's, or a
// kind berth does not have, is an error naming it.
func Import(in map[string]any) (Object, error) {
	apiVersion, _ := in["apiVersion"].(string)
	kind, _ := in["kind"].(string)
	group, version, _ := strings.Cut(apiVersion, "/")
	if group != Group {
		return Object{}, fmt.Errorf("%s: apiVersion %q is not Kueue's (%s)", describe(in), apiVersion, Group)
	}
	if !slices.Contains([]string{"v1alpha1", "v1beta1", "v1beta2"}, version) {
		return Object{}, fmt.Errorf("%s: Kueue API version %s is not one berth imports (v1alpha1, v1beta1, v1beta2)", describe(in), version)
	}
	name := describe(in)
	berthKind := kind
	if to, ok := Translated[kind]; ok {
		berthKind = to
	} else if !slices.Contains(Kinds, kind) {
		return Object{}, fmt.Errorf("%s: berth has no %s yet; it imports %s, and %s", describe(in), kind, strings.Join(Kinds, ", "),
			strings.Join(slices.Sorted(maps.Keys(Translated)), ", "))
	}
	schema, err := schemaOf(berthKind)
	if err != nil {
		return Object{}, err
	}
	out := Object{Object: map[string]any{"apiVersion": BerthAPIVersion, "kind": berthKind}}
	switch kind {
	case "ClusterQueue":
		in, out.Dropped = checksFromStrategy(in)
	case "AdmissionCheck":
		if in, err = checkController(in); err != nil {
			return Object{}, fmt.Errorf("%s: %w", name, err)
		}
	case "MultiKueueCluster":
		var d *Drop
		if in, d, err = workerCluster(in); err != nil {
			return Object{}, fmt.Errorf("%s: %w", name, err)
		}
		out.Dropped = append(out.Dropped, *d)
	}
	drop := func(path, why string) { out.Dropped = append(out.Dropped, Drop{Field: path, Why: why}) }
	for k, v := range in {
		switch k {
		case "apiVersion", "kind":
		case "status":
			drop("status", "status is the old cluster's state, not configuration")
		case "metadata":
			md, _ := v.(map[string]any)
			keep := map[string]any{}
			for mk, mv := range md {
				switch {
				case mk == "annotations":
					if kept := withoutLastApplied(mv, drop); len(kept) > 0 {
						keep[mk] = kept
					}
				case slices.Contains([]string{"name", "namespace", "labels", "generateName"}, mk):
					keep[mk] = mv
				case slices.Contains(serverSet, mk):
				default:
					why := reasons["metadata."+mk]
					if why == "" {
						why = "not carried over"
					}
					drop("metadata."+mk, why)
				}
			}
			out.Object["metadata"] = keep
		default:
			if name, kept, ok := walk(kind, k, k, v, schema, drop); ok {
				out.Object[name] = kept
			}
		}
	}
	if kind == "Topology" {
		if err := checkLevels(out.Object); err != nil {
			return Object{}, fmt.Errorf("%s: %w", describe(in), err)
		}
	}
	sort.Slice(out.Dropped, func(i, j int) bool { return out.Dropped[i].Field < out.Dropped[j].Field })
	return out, nil
}

// walk keeps what berth's schema has of value v, found at Kueue path from
// (list indices shown) whose index-free form is plain, renamed; parent is
// the schema of the object holding it. It reports a drop for the rest, and
// returns berth's name for the field and its value, or false when nothing
// is kept.
func walk(kind, from, plain string, v any, parent *apiextensionsv1.JSONSchemaProps, drop func(path, why string)) (string, any, bool) {
	name := plain[strings.LastIndex(plain, ".")+1:]
	if to, ok := renames[kind][plain]; ok {
		name = to[strings.LastIndex(to, ".")+1:]
		plain = to
	}
	s, ok := parent.Properties[name]
	if !ok {
		why, known := reasons[kind+" "+plain]
		if !known {
			why = "berth has no such field"
		}
		drop(from, why)
		return "", nil, false
	}
	switch val := v.(type) {
	case map[string]any:
		if len(s.Properties) == 0 {
			return name, val, true // a map of values (labels, quantities): berth takes it whole
		}
		out := map[string]any{}
		for k, sub := range val {
			if to, kept, ok := walk(kind, from+"."+k, plain+"."+k, sub, &s, drop); ok {
				out[to] = kept
			}
		}
		return name, out, len(out) > 0 || len(val) == 0
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return name, val, true
		}
		item := s.Items.Schema
		out := make([]any, 0, len(val))
		for i, e := range val {
			m, isMap := e.(map[string]any)
			if !isMap || len(item.Properties) == 0 {
				out = append(out, e)
				continue
			}
			kept := map[string]any{}
			for k, sub := range m {
				if to, got, ok := walk(kind, from+"["+strconv.Itoa(i)+"]."+k, plain+"."+k, sub, item, drop); ok {
					kept[to] = got
				}
			}
			out = append(out, kept)
		}
		return name, out, true
	case string:
		if to, ok := values[kind+" "+plain][val]; ok {
			return name, to, true
		}
		return name, val, true
	default:
		return name, val, true
	}
}

// lastApplied is kubectl's record of the manifest last applied: the Kueue
// one, which a later `kubectl apply` of berth's would diff against.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func withoutLastApplied(v any, drop func(path, why string)) map[string]any {
	annotations, _ := v.(map[string]any)
	if _, ok := annotations[lastApplied]; !ok {
		return annotations
	}
	drop("metadata.annotations."+lastApplied, "it records the Kueue manifest, not this one")
	out := maps.Clone(annotations)
	delete(out, lastApplied)
	return out
}

// checksFromStrategy returns in with Kueue v1beta2's admissionChecksStrategy
// turned into berth's admissionChecks. berth has no per-flavor checks: a
// rule limited to some flavors (onFlavors) is kept for every flavor, the
// stricter reading, and said so in the drops returned.
func checksFromStrategy(in map[string]any) (map[string]any, []Drop) {
	spec, _ := in["spec"].(map[string]any)
	strategy, _ := spec["admissionChecksStrategy"].(map[string]any)
	rules, _ := strategy["admissionChecks"].([]any)
	if len(rules) == 0 || len(strategy) != 1 {
		return in, nil
	}
	var names []any
	var drops []Drop
	for i, r := range rules {
		rule, _ := r.(map[string]any)
		for k, v := range rule {
			switch k {
			case "name":
				names = append(names, v)
			case "onFlavors":
				if l, _ := v.([]any); len(l) > 0 {
					drops = append(drops, Drop{Field: fmt.Sprintf("spec.admissionChecksStrategy.admissionChecks[%d].onFlavors", i),
						Why: "berth has no per-flavor admission checks: the check applies to every flavor"})
				}
			default:
				return in, nil
			}
		}
	}
	out := maps.Clone(in)
	spec = maps.Clone(spec)
	delete(spec, "admissionChecksStrategy")
	spec["admissionChecks"] = names
	out["spec"] = spec
	return out, drops
}

// checkController returns in, an AdmissionCheck, with MultiKueue's
// controller and parameters turned into berth's multicluster check's. A
// check of another of Kueue's own controllers (provisioning requests, say)
// is refused: berth runs no such controller, so the check would never be
// decided and its ClusterQueues would admit nothing. Other controllers are
// kept: they may act on berth's Workloads.
func checkController(in map[string]any) (map[string]any, error) {
	spec, _ := in["spec"].(map[string]any)
	name, _ := spec["controllerName"].(string)
	switch {
	case name == multiKueueController:
		out, spec := maps.Clone(in), maps.Clone(spec)
		spec["controllerName"] = berthv1.MultiClusterControllerName
		if p, ok := spec["parameters"].(map[string]any); ok {
			p = maps.Clone(p)
			p["apiGroup"], p["kind"] = berthv1.GroupVersion.Group, "MultiClusterConfig"
			spec["parameters"] = p
		}
		out["spec"] = spec
		return out, nil
	case strings.HasPrefix(name, kueueControllers):
		return nil, fmt.Errorf("spec.controllerName %s is a controller of Kueue's that berth has no equivalent of yet: the check would never be decided, and a ClusterQueue naming it would admit nothing", name)
	}
	return in, nil
}

// workerCluster returns in, a MultiKueueCluster, with its kubeconfig's
// Secret as a WorkerCluster's (v1beta1's spec.kubeConfig, or v1beta2's
// spec.clusterSource.kubeConfig), and what the user must do about the
// Secret. A kubeconfig that is a file on Kueue's controller is refused:
// berth reads kubeconfigs from Secrets only.
func workerCluster(in map[string]any) (map[string]any, *Drop, error) {
	spec, _ := in["spec"].(map[string]any)
	field := "spec.kubeConfig"
	kc, _ := spec["kubeConfig"].(map[string]any)
	if src, ok := spec["clusterSource"].(map[string]any); ok && kc == nil {
		field = "spec.clusterSource.kubeConfig"
		kc, _ = src["kubeConfig"].(map[string]any)
	}
	location, _ := kc["location"].(string)
	switch t, _ := kc["locationType"].(string); {
	case location == "":
		return nil, nil, fmt.Errorf("%s.location is empty: no kubeconfig to reach the worker with", field)
	case t != "" && t != "Secret":
		return nil, nil, fmt.Errorf("%s.locationType is %s: berth reads a worker's kubeconfig from a Secret only ('berth cluster add NAME --kubeconfig FILE' makes one)", field, t)
	}
	out := maps.Clone(in)
	out["spec"] = map[string]any{"kubeconfigSecret": location}
	return out, &Drop{Field: field, Why: fmt.Sprintf("now spec.kubeconfigSecret: berth reads Secret %s from its own namespace (berth-system), key %q, "+
		"where Kueue read it from its own (kueue-system): copy the Secret there ('berth cluster add' makes one from a kubeconfig file)", location, "kubeconfig")}, nil
}

// checkLevels refuses a Topology without levels: berth would refuse it too,
// and an import must never look like it kept a placement that is gone.
func checkLevels(obj map[string]any) error {
	spec, _ := obj["spec"].(map[string]any)
	if levels, _ := spec["levels"].([]any); len(levels) == 0 {
		return fmt.Errorf("spec.levels is empty: a Topology needs at least one level, and berth will not import one without")
	}
	return nil
}

var (
	schemasOnce sync.Once
	schemas     map[string]*apiextensionsv1.JSONSchemaProps
	schemasErr  error
)

// schemaOf is the root schema of berth's CRD of kind, from the embedded
// manifests.
func schemaOf(kind string) (*apiextensionsv1.JSONSchemaProps, error) {
	schemasOnce.Do(func() {
		schemas = map[string]*apiextensionsv1.JSONSchemaProps{}
		docs, err := config.CRDs()
		if err != nil {
			schemasErr = err
			return
		}
		for _, d := range docs {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.Unmarshal(d, &crd); err != nil {
				schemasErr = fmt.Errorf("reading berth's CRDs: %w", err)
				return
			}
			if crd.Spec.Group != "berth.dev" {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if v.Name == "v1beta1" && v.Schema != nil {
					schemas[crd.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
				}
			}
		}
	})
	if schemasErr != nil {
		return nil, schemasErr
	}
	s, ok := schemas[kind]
	if !ok {
		return nil, fmt.Errorf("berth has no CRD for %s", kind)
	}
	return s, nil
}

// ReadAll splits YAML or JSON documents (--- separated; a List's items
// count one by one) into objects.
func ReadAll(r io.Reader) ([]map[string]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		if len(doc) == 0 {
			continue
		}
		if items, ok := doc["items"].([]any); ok && strings.HasSuffix(fmt.Sprint(doc["kind"]), "List") {
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					out = append(out, m)
				}
			}
			continue
		}
		out = append(out, doc)
	}
}
