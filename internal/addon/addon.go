package addon

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/berth-dev/berth/config"
	"github.com/berth-dev/berth/internal/controlplane"
)

// Addon is one controller berth can run beside its own.
type Addon struct {
	// Name is how --with names it.
	Name string
	// Component is the `berth component` that runs it, and its name in
	// `berth status`.
	Component string
	// Identity is the user it authenticates as; config/addons/<Name>
	// binds its role to that user.
	Identity controlplane.Identity
	// Needs are the addons it cannot run without: --with adds them.
	Needs []string
}

// JobSet runs sigs.k8s.io/jobset's controller and webhooks.
var JobSet = Addon{Name: "jobset", Component: "jobset-controller",
	Identity: controlplane.Identity{Name: "berth-jobset", User: "berth-jobset"}}

// LeaderWorkerSet runs sigs.k8s.io/lws's controller and webhooks.
var LeaderWorkerSet = Addon{Name: "leaderworkerset", Component: "leaderworkerset-controller",
	Identity: controlplane.Identity{Name: "berth-leaderworkerset", User: "berth-leaderworkerset"}}

// Ray runs KubeRay's operator (RayClusters, RayJobs, RayServices).
var Ray = Addon{Name: "ray", Component: "ray-operator",
	Identity: controlplane.Identity{Name: "berth-ray", User: "berth-ray"}}

// Trainer runs Kubeflow Trainer's controller manager (TrainJobs and their
// runtimes); a TrainJob runs as a JobSet.
var Trainer = Addon{Name: "trainer", Component: "trainer-controller",
	Identity: controlplane.Identity{Name: "berth-trainer", User: "berth-trainer"}, Needs: []string{JobSet.Name}}

// TrainingOperator runs Kubeflow's training operator (PyTorchJobs, TFJobs,
// XGBoostJobs, PaddleJobs, JAXJobs).
var TrainingOperator = Addon{Name: "training-operator", Component: "training-operator",
	Identity: controlplane.Identity{Name: "berth-training-operator", User: "berth-training-operator"}}

// Known are the addons berth has, by name.
var Known = map[string]Addon{JobSet.Name: JobSet, LeaderWorkerSet.Name: LeaderWorkerSet, Ray.Name: Ray, Trainer.Name: Trainer,
	TrainingOperator.Name: TrainingOperator}

// Parse reads --with: names separated by commas, each known, each once.
func Parse(names []string) ([]Addon, error) {
	var out []Addon
	for _, n := range names {
		for _, n := range strings.Split(n, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			a, ok := Known[n]
			if !ok {
				return nil, fmt.Errorf("--with: %q is not an addon berth has (%s)", n, strings.Join(knownNames(), ", "))
			}
			// What it needs first: its CRDs and controllers are in place
			// before it starts.
			for _, need := range append(slices.Clone(a.Needs), n) {
				if !slices.ContainsFunc(out, func(b Addon) bool { return b.Name == need }) {
					out = append(out, Known[need])
				}
			}
		}
	}
	return out, nil
}

func knownNames() []string {
	names := make([]string, 0, len(Known))
	for n := range Known {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Manifests are what an addon needs installed before it runs: its CRDs
// first, then its role and the binding to its Identity.
func (a Addon) Manifests() ([][]byte, error) { return config.Addon(a.Name) }

// Kinds is the --configured-kinds file of the kinds the addon's objects
// are queued as (config/addons/<Name>/kinds.yaml), nil when it has none.
func (a Addon) Kinds() ([]byte, error) { return config.AddonKinds(a.Name) }
