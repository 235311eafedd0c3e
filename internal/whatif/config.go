package whatif

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller/queues"
)

// Config is a queue configuration to replay a trace against: berth's
// ResourceFlavors, Cohorts, ClusterQueues and LocalQueues, and the
// Namespaces whose labels the ClusterQueues' namespaceSelectors read (a
// namespace not listed has only its kubernetes.io/metadata.name label).
type Config struct {
	Name          string
	Flavors       []berthv1.ResourceFlavor
	Cohorts       []berthv1.Cohort
	ClusterQueues []berthv1.ClusterQueue
	LocalQueues   []berthv1.LocalQueue
	Topologies    []berthv1.Topology
	Namespaces    []corev1.Namespace
}

// kinds are what a configuration may hold.
var kinds = []string{"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "Topology", "Namespace"}

// ParseConfig reads a configuration from YAML (or JSON) documents, as
// applied to a cluster; name says which it is in reports. What the replay
// does not model is refused, naming the object and the field.
func ParseConfig(name string, data []byte) (*Config, error) {
	cfg := &Config{Name: name}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if len(obj) == 0 {
			continue
		}
		kind, _ := obj["kind"].(string)
		apiVersion, _ := obj["apiVersion"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		objName, _ := meta["name"].(string)
		what := fmt.Sprintf("%s: %s %s", name, kind, objName)
		var into any
		switch {
		case kind == "Namespace" && apiVersion == "v1":
			cfg.Namespaces = append(cfg.Namespaces, corev1.Namespace{})
			into = &cfg.Namespaces[len(cfg.Namespaces)-1]
		case apiVersion != berthv1.GroupVersion.String() || !slices.Contains(kinds, kind):
			return nil, fmt.Errorf("%s: document %d: %s %s (%s) is not part of a queue configuration; a replay reads %v of %s, and Namespaces",
				name, doc, kind, objName, apiVersion, kinds[:5], berthv1.GroupVersion)
		case kind == "ResourceFlavor":
			cfg.Flavors = append(cfg.Flavors, berthv1.ResourceFlavor{})
			into = &cfg.Flavors[len(cfg.Flavors)-1]
		case kind == "Cohort":
			cfg.Cohorts = append(cfg.Cohorts, berthv1.Cohort{})
			into = &cfg.Cohorts[len(cfg.Cohorts)-1]
		case kind == "ClusterQueue":
			cfg.ClusterQueues = append(cfg.ClusterQueues, berthv1.ClusterQueue{})
			into = &cfg.ClusterQueues[len(cfg.ClusterQueues)-1]
		case kind == "LocalQueue":
			cfg.LocalQueues = append(cfg.LocalQueues, berthv1.LocalQueue{})
			into = &cfg.LocalQueues[len(cfg.LocalQueues)-1]
		case kind == "Topology":
			cfg.Topologies = append(cfg.Topologies, berthv1.Topology{})
			into = &cfg.Topologies[len(cfg.Topologies)-1]
		}
		delete(obj, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, into, true); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Check refuses what the replay does not model, naming the object and the
// field, and makes the objects as berth would have them once it has seen
// them. ParseConfig checks what it reads; a Config built from objects read
// elsewhere (a cluster's) is checked before it is replayed.
func (c *Config) Check() error {
	if err := c.refuse(); err != nil {
		return err
	}
	c.settle()
	return nil
}

// Reached is the part of c a trace's workloads can reach: the ClusterQueues
// of the LocalQueues they name and every queue of those ClusterQueues'
// cohort trees (they lend and borrow), with the Cohorts, LocalQueues,
// ResourceFlavors and Topologies those name, and all Namespaces. A
// cluster's queues hold much a trace never touches, some of it what a
// replay refuses (admission checks), which should not stop the replay.
func (c *Config) Reached(trace []Workload) *Config {
	parent := map[string]string{}
	for _, co := range c.Cohorts {
		parent[co.Name] = co.Spec.Parent
	}
	// top is a cohort's tree's top; a loop of parents (refused by the API)
	// ends the climb.
	top := func(name string) string {
		for seen := map[string]bool{}; parent[name] != "" && !seen[name]; name = parent[name] {
			seen[name] = true
		}
		return "cohort/" + name
	}
	// root is a ClusterQueue's tree: itself alone when it has no cohort.
	root := func(cq *berthv1.ClusterQueue) string {
		if cq.Spec.Cohort == "" {
			return "cq/" + cq.Name
		}
		return top(cq.Spec.Cohort)
	}
	cqOf := map[string]string{}
	for _, lq := range c.LocalQueues {
		cqOf[lq.Namespace+"/"+lq.Name] = lq.Spec.ClusterQueue
	}
	named := map[string]bool{}
	for i := range trace {
		named[cqOf[trace[i].Namespace+"/"+trace[i].LocalQueue]] = true
	}
	roots := map[string]bool{}
	for i := range c.ClusterQueues {
		if named[c.ClusterQueues[i].Name] {
			roots[root(&c.ClusterQueues[i])] = true
		}
	}
	out := &Config{Name: c.Name, Namespaces: c.Namespaces}
	cqs, flavors := map[string]bool{}, map[string]bool{}
	for i := range c.ClusterQueues {
		cq := &c.ClusterQueues[i]
		if !roots[root(cq)] {
			continue
		}
		out.ClusterQueues = append(out.ClusterQueues, *cq)
		cqs[cq.Name] = true
		for _, rg := range cq.Spec.ResourceGroups {
			for _, f := range rg.Flavors {
				flavors[f.Name] = true
			}
		}
	}
	for _, co := range c.Cohorts {
		if roots[top(co.Name)] {
			out.Cohorts = append(out.Cohorts, co)
			for _, rg := range co.Spec.ResourceGroups {
				for _, f := range rg.Flavors {
					flavors[f.Name] = true
				}
			}
		}
	}
	for _, lq := range c.LocalQueues {
		if cqs[lq.Spec.ClusterQueue] {
			out.LocalQueues = append(out.LocalQueues, lq)
		}
	}
	topologies := map[string]bool{}
	for _, rf := range c.Flavors {
		if flavors[rf.Name] {
			out.Flavors = append(out.Flavors, rf)
			if rf.Spec.TopologyName != nil {
				topologies[*rf.Spec.TopologyName] = true
			}
		}
	}
	for _, t := range c.Topologies {
		if topologies[t.Name] {
			out.Topologies = append(out.Topologies, t)
		}
	}
	return out
}

// refuse says what the replay does not model yet, and what berth could
// not count by (a budget with a problem, as the API would refuse it).
func (c *Config) refuse() error {
	for _, rf := range c.Flavors {
		if t := rf.Spec.TopologyName; t != nil && !slices.ContainsFunc(c.Topologies, func(o berthv1.Topology) bool { return o.Name == *t }) {
			return fmt.Errorf("%s: ResourceFlavor %s: spec.topologyName: Topology %s is not in the configuration", c.Name, rf.Name, *t)
		}
	}
	for _, t := range c.Topologies {
		if len(t.Spec.Levels) == 0 {
			return fmt.Errorf("%s: Topology %s: spec.levels: at least one", c.Name, t.Name)
		}
	}
	for _, cq := range c.ClusterQueues {
		if len(cq.Spec.AdmissionChecks) > 0 {
			return fmt.Errorf("%s: ClusterQueue %s: spec.admissionChecks: admission checks are not replayed yet", c.Name, cq.Name)
		}
		if _, problem := queues.BudgetOf(cq.Spec.Budget); problem != "" {
			return fmt.Errorf("%s: ClusterQueue %s: %s", c.Name, cq.Name, problem)
		}
	}
	for _, lq := range c.LocalQueues {
		if lq.Namespace == "" {
			return fmt.Errorf("%s: LocalQueue %s: metadata.namespace: required", c.Name, lq.Name)
		}
		if b := lq.Spec.Budget; b != nil && b.WhenSpent != berthv1.StopAdmitting {
			return fmt.Errorf("%s: LocalQueue %s/%s: spec.budget.whenSpent %s: a LocalQueue's budget can only stop it (Stop)", c.Name, lq.Namespace, lq.Name, b.WhenSpent)
		}
		if _, problem := queues.BudgetOf(lq.Spec.Budget); problem != "" {
			return fmt.Errorf("%s: LocalQueue %s/%s: %s", c.Name, lq.Namespace, lq.Name, problem)
		}
	}
	return nil
}

// settle makes the objects as berth would have them once it has seen them:
// guarded by its in-use finalizer, which it adds before admitting through
// them.
func (c *Config) settle() {
	for i := range c.Flavors {
		controllerutil.AddFinalizer(&c.Flavors[i], berthv1.ResourceInUseFinalizer)
	}
	for i := range c.ClusterQueues {
		controllerutil.AddFinalizer(&c.ClusterQueues[i], berthv1.ResourceInUseFinalizer)
	}
	for i := range c.LocalQueues {
		controllerutil.AddFinalizer(&c.LocalQueues[i], berthv1.ResourceInUseFinalizer)
	}
}
