package fromkueue

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/config"
	"github.com/berth-dev/berth/examples"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/configured"
)

// ConfigurationKey is the key of the ConfigMap data that holds Kueue's
// Configuration in Kueue's own install (kueue-manager-config).
const ConfigurationKey = "controller_manager_config.yaml"

// Settings are what a Kueue Configuration becomes: values of berth's Helm
// chart (under controller:), and what did not carry over, with why.
type Settings struct {
	Values  map[string]any `json:"values"`
	Dropped []Drop         `json:"dropped,omitempty"`
	// Notes are what a person should check in Values: guesses about their
	// cluster that Kueue's Configuration does not say.
	Notes []string `json:"notes,omitempty"`
}

// IsConfiguration reports whether in is Kueue's controller Configuration
// (config.kueue.x-k8s.io), or the ConfigMap Kueue's install keeps it in.
func IsConfiguration(in map[string]any) bool {
	apiVersion, _ := in["apiVersion"].(string)
	kind, _ := in["kind"].(string)
	if kind == "ConfigMap" && apiVersion == "v1" {
		data, _ := in["data"].(map[string]any)
		_, ok := data[ConfigurationKey]
		return ok
	}
	return kind == "Configuration" && strings.HasPrefix(apiVersion, "config.kueue.x-k8s.io/")
}

// frameworks are Kueue's integrations.frameworks berth has as its own
// integrations, by name (the same names): all of them.
var frameworks = integration.All

// describedBy are Kueue's frameworks berth queues from configuration: the
// file of kinds that describes each, and the kinds of it that come along.
var describedBy = map[string]struct {
	file  func() ([]byte, error)
	kinds []string
}{
	"ray.io/rayjob":           {rayKinds, []string{"RayCluster", "RayJob"}},
	"ray.io/raycluster":       {rayKinds, []string{"RayCluster", "RayJob"}},
	"kubeflow.org/mpijob":     {fixed(examples.ConfiguredMPIJob), []string{"MPIJob"}},
	"kubeflow.org/pytorchjob": {trainingKinds, []string{"PyTorchJob"}},
	"kubeflow.org/tfjob":      {trainingKinds, []string{"TFJob"}},
	"kubeflow.org/xgboostjob": {trainingKinds, []string{"XGBoostJob"}},
	"kubeflow.org/paddlejob":  {trainingKinds, []string{"PaddleJob"}},
	"kubeflow.org/jaxjob":     {trainingKinds, []string{"JAXJob"}},
}

func rayKinds() ([]byte, error)      { return config.AddonKinds("ray") }
func trainingKinds() ([]byte, error) { return config.AddonKinds("training-operator") }

func fixed(b []byte) func() ([]byte, error) { return func() ([]byte, error) { return b, nil } }

// chartSets are top-level fields of a Configuration that berth's chart sets
// itself: where berth runs and serves, and its certificates.
var chartSets = []string{"namespace", "internalCertManagement", "webhook", "metrics", "health", "pprofBindAddress", "controller", "tls",
	"visibilityServer"}

// ImportConfiguration translates Kueue's Configuration (or the ConfigMap
// that holds it) into berth chart values: the queueing of objects without a
// queue label and in which namespaces, all-or-nothing start, fair sharing,
// admission fair sharing, DRA device-class mappings, the API client's rate, MultiKueue's origin and lost-worker timeout,
// leader election, and integrations.frameworks as berth's integrations and
// the configured kinds that describe the others. Anything else is listed in
// Dropped with why.
func ImportConfiguration(in map[string]any) (Settings, error) {
	if kind, _ := in["kind"].(string); kind == "ConfigMap" {
		data, _ := in["data"].(map[string]any)
		text, _ := data[ConfigurationKey].(string)
		var inner map[string]any
		if err := yaml.Unmarshal([]byte(text), &inner); err != nil {
			return Settings{}, fmt.Errorf("%s: data[%s]: %w", describe(in), ConfigurationKey, err)
		}
		if !IsConfiguration(inner) {
			return Settings{}, fmt.Errorf("%s: data[%s] is not a Kueue Configuration (config.kueue.x-k8s.io)", describe(in), ConfigurationKey)
		}
		in = inner
	}
	apiVersion, _ := in["apiVersion"].(string)
	if apiVersion != "config.kueue.x-k8s.io/v1beta1" && apiVersion != "config.kueue.x-k8s.io/v1beta2" {
		return Settings{}, fmt.Errorf("Configuration: apiVersion %s: berth reads config.kueue.x-k8s.io v1beta1 and v1beta2", apiVersion)
	}
	v1beta1 := apiVersion == "config.kueue.x-k8s.io/v1beta1"
	c := &conversion{values: map[string]any{}}
	if _, ok := in["integrations"]; !ok {
		// Kueue's default: Jobs alone.
		if err := c.integrations(nil); err != nil {
			return Settings{}, err
		}
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := in[k]
		switch {
		case k == "apiVersion" || k == "kind":
		case k == "manageJobsWithoutQueueName":
			c.set("manageJobsWithoutQueueName", v)
		case k == "managedJobsNamespaceSelector":
			c.namespaces(v, in["manageJobsWithoutQueueName"] == true)
		case k == "waitForPodsReady":
			c.podsReady(v, v1beta1)
		case k == "clientConnection":
			c.client(v)
		case k == "integrations":
			if err := c.integrations(v); err != nil {
				return Settings{}, err
			}
		case k == "fairSharing":
			c.fairSharing(v, v1beta1)
		case k == "admissionFairSharing":
			c.admissionFairSharing(v)
		case k == "multiKueue":
			c.multiKueue(v)
		case k == "resources":
			c.resources(v)
		case k == "leaderElection":
			c.leaderElection(v)
		case k == "featureGates":
			c.drop(k, "berth has no feature gates: what it has is on (topology-aware placement, partial admission, ...)")
		case slices.Contains(chartSets, k):
			c.drop(k, "berth's chart sets this itself (where berth runs and serves, and its certificates)")
		default:
			c.drop(k, "berth does not offer this setting")
		}
	}
	return Settings{Values: map[string]any{"controller": c.values}, Dropped: c.dropped, Notes: c.notes}, nil
}

// conversion gathers chart values and drops.
type conversion struct {
	values  map[string]any
	dropped []Drop
	notes   []string
}

func (c *conversion) set(key string, v any) { c.values[key] = v }

func (c *conversion) drop(field, why string) {
	c.dropped = append(c.dropped, Drop{Field: field, Why: why})
}

// fields walks a map of a Configuration at path, calling each for its
// known keys and dropping the others.
func (c *conversion) fields(path string, v any, known map[string]func(any)) {
	if v == nil {
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.drop(path, "is not an object")
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if f, ok := known[k]; ok {
			f(m[k])
			continue
		}
		c.drop(path+"."+k, "berth does not offer this setting")
	}
}

func (c *conversion) namespaces(v any, managed bool) {
	if !managed {
		c.drop("managedJobsNamespaceSelector", "berth reads it only with manageJobsWithoutQueueName: true")
		return
	}
	var sel metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(asMap(v), &sel); err != nil {
		c.drop("managedJobsNamespaceSelector", "is not a label selector: "+err.Error())
		return
	}
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		c.drop("managedJobsNamespaceSelector", "is not a label selector: "+err.Error())
		return
	}
	c.set("managedJobsNamespaceSelector", s.String())
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// podsReady is waitForPodsReady: on with enable (v1beta1) or by being
// there (v1beta2).
func (c *conversion) podsReady(v any, v1beta1 bool) {
	out := map[string]any{"enabled": !v1beta1}
	seconds := func(key string) func(any) {
		return func(x any) {
			if n, ok := x.(float64); ok && n >= 0 {
				out[key] = fmt.Sprintf("%ds", int64(n))
			}
		}
	}
	known := map[string]func(any){
		"timeout":        func(x any) { out["timeout"] = x },
		"blockAdmission": func(x any) { out["blockAdmission"] = x },
		"requeuingStrategy": func(x any) {
			c.fields("waitForPodsReady.requeuingStrategy", x, map[string]func(any){
				"backoffBaseSeconds": seconds("backoffBase"),
				"backoffMaxSeconds":  seconds("backoffMax"),
				"backoffLimitCount":  func(x any) { out["requeueLimit"] = x },
			})
		},
	}
	if v1beta1 {
		known["enable"] = func(x any) { out["enabled"] = x == true }
	}
	c.fields("waitForPodsReady", v, known)
	if out["enabled"] != true {
		c.drop("waitForPodsReady", "is not enabled")
		return
	}
	c.set("waitForPodsReady", out)
}

func (c *conversion) client(v any) {
	c.fields("clientConnection", v, map[string]func(any){
		"qps":   func(x any) { c.set("kubeAPIQPS", x) },
		"burst": func(x any) { c.set("kubeAPIBurst", x) },
	})
}

func (c *conversion) fairSharing(v any, v1beta1 bool) {
	on := !v1beta1
	known := map[string]func(any){
		"preemptionStrategies": func(any) {
			c.drop("fairSharing.preemptionStrategies", "berth preempts by its own rule (docs/preemption.md)")
		},
	}
	if v1beta1 {
		known["enable"] = func(x any) { on = x == true }
	}
	c.fields("fairSharing", v, known)
	if on {
		c.set("fairSharing", true)
	}
}

// admissionFairSharing is how LocalQueues' usage is measured; Kueue's
// sampling interval defaults to 5m where berth's is 1m, so it is carried
// over given or not.
func (c *conversion) admissionFairSharing(v any) {
	out := map[string]any{"samplingInterval": "5m"}
	c.fields("admissionFairSharing", v, map[string]func(any){
		"usageHalfLifeTime":     func(x any) { out["halfLife"] = x },
		"usageSamplingInterval": func(x any) { out["samplingInterval"] = x },
		"resourceWeights":       func(x any) { out["resourceWeights"] = x },
	})
	if h, _ := out["halfLife"].(string); h == "0s" || h == "0" {
		// Kueue's 0 forgets usage at once; berth needs a positive half-life.
		out["halfLife"] = "1s"
		c.notes = append(c.notes, "admissionFairSharing.usageHalfLifeTime 0 (usage forgotten at once) became halfLife 1s: berth needs a positive half-life")
	}
	c.set("admissionFairSharing", out)
}

// resources carries deviceClassMappings (chart value and Kueue's field
// alike: a resource name and the DeviceClasses whose devices count as it).
func (c *conversion) resources(v any) {
	c.fields("resources", v, map[string]func(any){
		"deviceClassMappings": func(x any) {
			list, ok := x.([]any)
			if !ok {
				c.drop("resources.deviceClassMappings", "is not a list")
				return
			}
			var out []any
			for i, e := range list {
				m := asMap(e)
				name, _ := m["name"].(string)
				classes, _ := m["deviceClassNames"].([]any)
				if name == "" || len(classes) == 0 {
					c.drop(fmt.Sprintf("resources.deviceClassMappings[%d]", i), "needs a name and deviceClassNames")
					continue
				}
				out = append(out, map[string]any{"name": name, "deviceClassNames": classes})
			}
			if len(out) > 0 {
				c.set("deviceClassMappings", out)
			}
		},
	})
}

func (c *conversion) multiKueue(v any) {
	c.fields("multiKueue", v, map[string]func(any){
		"origin":            func(x any) { c.set("origin", x) },
		"workerLostTimeout": func(x any) { c.set("workerLostTimeout", x) },
	})
}

func (c *conversion) leaderElection(v any) {
	out := map[string]any{}
	c.fields("leaderElection", v, map[string]func(any){
		"leaderElect": func(x any) {
			if x == false {
				c.drop("leaderElection.leaderElect", "berth's chart always elects a leader among its replicas")
			}
		},
		"leaseDuration": func(x any) { out["leaseDuration"] = x },
		"renewDeadline": func(x any) { out["renewDeadline"] = x },
		"retryPeriod":   func(x any) { out["retryPeriod"] = x },
		"resourceName": func(any) {
			c.drop("leaderElection.resourceName", "berth's chart names its own lease")
		},
		"resourceNamespace": func(any) {
			c.drop("leaderElection.resourceNamespace", "berth's lease is in berth's namespace")
		},
	})
	if len(out) > 0 {
		c.set("leaderElection", out)
	}
}

// integrations is integrations.frameworks: berth's own integrations by the
// same names, and the configured kinds that describe the rest.
func (c *conversion) integrations(v any) error {
	var own []string
	var kinds []configured.Spec
	var err error
	given := false
	c.fields("integrations", v, map[string]func(any){
		"frameworks": func(x any) {
			list, _ := x.([]any)
			given = len(list) > 0
			for _, f := range list {
				name, _ := f.(string)
				if slices.Contains(frameworks, name) {
					if !slices.Contains(own, name) {
						own = append(own, name)
					}
					continue
				}
				d, ok := describedBy[name]
				if !ok {
					c.drop("integrations.frameworks["+name+"]", "berth queues no such kind yet, neither with its own integration nor from a description of it")
					continue
				}
				data, e := d.file()
				if e != nil {
					err = e
					return
				}
				var file configured.File
				if e := yaml.UnmarshalStrict(data, &file); e != nil {
					err = fmt.Errorf("the description of %s: %w", name, e)
					return
				}
				for _, s := range file.Kinds {
					if slices.Contains(d.kinds, s.Kind) && !slices.ContainsFunc(kinds, func(k configured.Spec) bool { return k.Kind == s.Kind && k.Group == s.Group }) {
						kinds = append(kinds, s)
						if len(s.Controllers) > 0 {
							c.notes = append(c.notes, fmt.Sprintf("configuredKinds: %s's controllers are %s, where that kind's operator's own chart installs it; "+
								"set them to the user yours acts as", s.Kind, strings.Join(s.Controllers, ", ")))
						}
					}
				}
			}
		},
		"externalFrameworks": func(any) {
			c.drop("integrations.externalFrameworks", "berth has no hook for another controller's kinds; describe a suspendable kind in controller.configuredKinds instead")
		},
		"labelKeysToCopy": func(any) {
			c.drop("integrations.labelKeysToCopy", "berth does not copy an object's labels onto its Workload")
		},
		"podOptions": func(any) {
			c.drop("integrations.podOptions", "berth's Pods are queued in the namespaces managedJobsNamespaceSelector selects")
		},
	})
	if err != nil {
		return err
	}
	if own == nil {
		// Kueue's default is Jobs alone; berth queues at least one of its
		// own kinds.
		own = []string{integration.BatchJob}
		if given {
			c.drop("integrations.frameworks", "names none of berth's own kinds: berth still queues Jobs that ask for a queue (batch/job)")
		}
	}
	c.set("integrations", own)
	if kinds != nil {
		data, err := yaml.Marshal(kinds)
		if err != nil {
			return err
		}
		var plain []any
		if err := yaml.Unmarshal(data, &plain); err != nil {
			return err
		}
		c.set("configuredKinds", plain)
	}
	return nil
}
