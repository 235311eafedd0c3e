package cli

import (
	goflag "flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim"
	"github.com/berth-dev/berth/internal/sim/devices"
	"github.com/berth-dev/berth/internal/sim/nodepool"
	"github.com/berth-dev/berth/internal/sim/stage"
)

// poolFlags describe the fake nodes to create; `berth up` takes the same
// flags and passes those set on to its simulator.
type poolFlags struct {
	nodes                       int
	prefix, capacity, labels    string
	taints, devices             string
	nodesPerRack, racksPerBlock int
}

func (f *poolFlags) add(fs *pflag.FlagSet) {
	fs.IntVar(&f.nodes, "nodes", 0, "make exactly this many fake nodes exist (created, or deleted beyond the count); unset: leave the nodes as they are")
	fs.StringVar(&f.prefix, "node-name-prefix", "sim-node-", "fake nodes are named <prefix>0, <prefix>1, ...")
	fs.StringVar(&f.capacity, "node-capacity", "cpu=32,memory=256Gi,pods=110", "capacity of each fake node, as resource=quantity pairs")
	fs.StringVar(&f.labels, "node-labels", "", "extra labels on each fake node, as key=value pairs")
	fs.StringVar(&f.taints, "node-taints", "", "taints on each fake node, as key=value:Effect or key:Effect, comma-separated")
	fs.StringVar(&f.devices, "node-devices", "", "devices each fake node offers to Dynamic Resource Allocation, as driver=count pairs (published as its ResourceSlices; a DeviceClass selecting the driver lets pods claim them)")
	fs.IntVar(&f.nodesPerRack, "nodes-per-rack", 0, "label fake nodes "+nodepool.RackLabel+" in racks of this many nodes (0: no topology labels)")
	fs.IntVar(&f.racksPerBlock, "racks-per-block", 0, "group racks into "+nodepool.BlockLabel+" blocks of this many racks")
}

var poolFlagNames = []string{"nodes", "node-name-prefix", "node-capacity", "node-labels", "node-taints", "node-devices", "nodes-per-rack", "racks-per-block"}

// forward returns the pool flags the user set, to pass on to a simulator.
func forwardPoolFlags(fs *pflag.FlagSet) []string {
	var out []string
	for _, name := range poolFlagNames {
		if f := fs.Lookup(name); f != nil && f.Changed {
			out = append(out, "--"+name+"="+f.Value.String())
		}
	}
	return out
}

// pool returns the node pool, or nil when --nodes was not set. Owner labels
// come from the node selector's equality terms, so the simulator manages
// the nodes it creates.
func (f *poolFlags) pool(fs *pflag.FlagSet, selector labels.Selector) (*nodepool.Pool, error) {
	if !fs.Changed("nodes") {
		return nil, nil
	}
	capacity := corev1.ResourceList{}
	pairs, err := parsePairs(f.capacity)
	if err != nil {
		return nil, fmt.Errorf("--node-capacity: %w", err)
	}
	for k, v := range pairs {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--node-capacity: %s=%q: %w", k, v, err)
		}
		capacity[corev1.ResourceName(k)] = q
	}
	lbls, err := parsePairs(f.labels)
	if err != nil {
		return nil, fmt.Errorf("--node-labels: %w", err)
	}
	reqs, _ := selector.Requirements()
	for _, r := range reqs {
		vals := r.Values().List()
		switch {
		case (r.Operator() == selection.Equals || r.Operator() == selection.DoubleEquals || r.Operator() == selection.In) && len(vals) == 1:
			lbls[r.Key()] = vals[0]
		case r.Operator() == selection.Exists:
			if _, ok := lbls[r.Key()]; !ok {
				lbls[r.Key()] = "true"
			}
		}
	}
	var taints []corev1.Taint
	for _, part := range strings.Split(f.taints, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		kv, effect, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("--node-taints: %q is not key=value:Effect or key:Effect", part)
		}
		k, v, _ := strings.Cut(kv, "=")
		taints = append(taints, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)})
	}
	devs, err := devices.ParseFlag(f.devices)
	if err != nil {
		return nil, err
	}
	p := &nodepool.Pool{Count: f.nodes, Prefix: f.prefix, Capacity: capacity, Labels: lbls, Taints: taints,
		Devices: devs, NodesPerRack: f.nodesPerRack, RacksPerBlock: f.racksPerBlock}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fake nodes: %w", err)
	}
	return p, nil
}

// parsePairs reads "k=v,k2=v2".
func parsePairs(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%q is not key=value", part)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// gcPercent is the GOGC of the simulator and the controller unless the
// environment sets one: both hold large caches, and collecting at half the
// live heap rather than all of it cuts their peak memory by a sixth to a
// quarter for a fifth more CPU (docs/benchmarks.md).
const gcPercent = 50

// defaultGC sets gcPercent unless GOGC is in the environment.
func defaultGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}

func newSimCommand() *cobra.Command {
	cfg, err := sim.DefaultConfig()
	if err != nil {
		panic(err) // the embedded defaults are tested
	}
	var (
		kubeconfig, nodeSelector string
		stageFiles               []string
		defaultStages            bool
		qps                      float32
		burst                    int
		pf                       poolFlags
		zapOpts                  zap.Options
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate nodes and pod lifecycles in a cluster",
		Long: `Play the kubelets of fake nodes: nodes become Ready and keep their Leases
renewed, pods bound to them start, run and finish, deleted pods go away, as
the stages say. 'berth up' runs one for you; use this command to run it
against any cluster.

Only nodes picked by --node-selector are managed, and only pods bound to them;
objects of any other kind a stage names are all offered to its stages.
--nodes N creates the fake nodes too (and deletes those it made beyond N).

Stages are KWOK Stage documents (kwok.x-k8s.io/v1alpha1): berth's defaults,
then --stages files, then Stage objects in the cluster; a stage replaces an
earlier one of the same name. The defaults: nodes initialise, bound pods run,
pods annotated berth.dev/sim-duration (e.g. 30s) finish after it, failing
with berth.dev/sim-exit-code when that is not 0, and deleted pods go.`,
		Example: `  # 100 nodes in racks of 8, racks in blocks of 4, with GPUs
  berth sim --nodes 100 --nodes-per-rack 8 --racks-per-block 4 \
    --node-capacity cpu=64,memory=512Gi,pods=110,nvidia.com/gpu=8

  # KWOK stage files, replacing the default pod stages of the same names
  berth sim --stages ./kwok-stages/

  # also bind claims of StorageClass kwok-volume (examples/sim-volume-class.yaml)
  berth sim --stages examples/stages/volume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := zap.New(zap.UseFlagOptions(&zapOpts))
			ctrl.SetLogger(log)
			defaultGC()
			sel, err := labels.Parse(nodeSelector)
			if err != nil {
				return fmt.Errorf("--node-selector: %w", err)
			}
			cfg.NodeSelector = sel
			if cfg.Pool, err = pf.pool(cmd.Flags(), sel); err != nil {
				return err
			}
			var fromFiles []*kwokv1.Stage
			if len(stageFiles) > 0 {
				var skipped []string
				if fromFiles, skipped, err = stage.LoadFiles(stageFiles...); err != nil {
					return fmt.Errorf("--stages: %w", err)
				}
				for _, s := range skipped {
					fmt.Fprintf(cmd.ErrOrStderr(), "--stages: skipped %s: not a Stage\n", s)
				}
			}
			if !defaultStages {
				cfg.Stages = nil
			}
			cfg.Stages = sim.Layer(cfg.Stages, fromFiles)
			if len(cfg.Stages) == 0 && !cfg.ClusterStages {
				return fmt.Errorf("no stages: --default-stages=false, no --stages and --cluster-stages=false")
			}
			cfg.Log = log.WithName("sim")
			loading := clientcmd.NewDefaultClientConfigLoadingRules()
			loading.ExplicitPath = kubeconfig
			rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, nil).ClientConfig()
			if err != nil {
				return fmt.Errorf("loading a kubeconfig (--kubeconfig, $KUBECONFIG or in-cluster): %w", err)
			}
			rc.QPS, rc.Burst = qps, burst
			rc.UserAgent = "berth-sim"
			ctx := ctrl.SetupSignalHandler()
			if err := awaitAPIServer(ctx, rc, cmd.ErrOrStderr()); err != nil {
				return err
			}
			s, err := sim.New(cfg, rc)
			if err != nil {
				return err
			}
			return s.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, else in-cluster)")
	f.StringArrayVar(&stageFiles, "stages", nil, "stage file, or directory of .yaml/.yml/.json stage files (repeatable)")
	f.BoolVar(&defaultStages, "default-stages", true, "start from berth's default stages")
	f.BoolVar(&cfg.ClusterStages, "cluster-stages", cfg.ClusterStages, "also use Stage objects from the cluster, when the Stage CRD is installed")
	f.StringVar(&nodeSelector, "node-selector", nodepool.OwnerLabel+"=true", "label selector of the nodes to manage")
	pf.add(f)
	f.IntVar(&cfg.Workers, "workers", cfg.Workers, "stages applied concurrently")
	f.DurationVar(&cfg.LeaseDuration, "lease-duration", cfg.LeaseDuration, "duration node Leases declare")
	f.DurationVar(&cfg.RenewInterval, "lease-renew-interval", cfg.RenewInterval, "how often node Leases are renewed (jittered by a tenth)")
	f.StringVar(&cfg.HealthAddr, "health-probe-bind-address", "", "address for /healthz, /readyz and /metrics (default: none)")
	f.BoolVar(&cfg.Profiling, "profiling", false, "serve Go's /debug/pprof on the health probe address")
	f.Float32Var(&qps, "kube-api-qps", 1000, "requests per second to the API server")
	f.IntVar(&burst, "kube-api-burst", 2000, "burst of requests to the API server")
	gf := goflag.NewFlagSet("zap", goflag.ContinueOnError)
	zapOpts.BindFlags(gf)
	f.AddGoFlagSet(gf)
	return cmd
}
