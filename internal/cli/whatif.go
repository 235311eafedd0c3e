package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/bench/plot"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/whatif"
)

func newWhatifCommand() *cobra.Command {
	var (
		tracePath       string
		configs         []string
		fairSharing     bool
		againstRecorded bool
		output          string
		top             int
		chart           string
		thisCluster     bool
		inst            instanceFlags
		kubeconfig      string
	)
	cmd := &cobra.Command{
		Use:   "whatif --trace FILE (--config QUEUES.yaml | --this-cluster) [--config OTHER.yaml]",
		Short: "Replay a trace of workloads against a queue configuration with berth's own scheduler, in virtual time, and report each queue's waits",
		Long: `Replay a trace (docs/whatif.md: one JSON line per workload with its arrival,
LocalQueue, priority, pod sets and run time) against a queue configuration,
the YAML of ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
Topologies and Namespaces you would apply, with the scheduler berth's controller runs, in
virtual time: no cluster, and a day of arrivals in the time its admission
cycles take.

With one --config it reports, per ClusterQueue, LocalQueue and priority,
how many workloads were admitted and their waits from arrival to first
admission (mean, p50, p95, max), and how often they were preempted; and
per ClusterQueue, flavor and resource, what it held on average against its
nominal quota and how much of that it borrowed; per budget, how long it held
its queue back. With two, it replays both
and lines them up, then lists the workloads whose wait changed most. With --against-recorded it lines the replay up with what
happened in the cluster the trace was recorded from (berth trace record
writes each workload's last admission), and says how many pairs of
workloads were admitted in the same order. --chart draws, over the trace's time, how many workloads wait,
how long those arriving then waited, and what share of the nominal quota of
each resource was held, a line per configuration.

--this-cluster replays against the queues of a cluster running berth, as
they are now (a berth instance, --name/--data-dir, or --kubeconfig): the
part of them the trace's LocalQueues reach (their ClusterQueues and every
queue of those ClusterQueues' cohort trees, with the flavors, Topologies
and Namespaces they name), first, as if given as the first --config.

Pod sets that ask for topology-aware placement are placed on the trace's
nodes when the configuration's flavors name Topologies. What it does not
model is refused: admission checks in the configuration, and placement
when the trace has no nodes. Budgets start empty at the trace's start. A preempted workload gives its quota back at
once (in a cluster, once its pods are gone), waits out the backoff the
controller gives an evicted workload, and runs again in full.`,
		Example: `  berth whatif --trace week.jsonl --config queues.yaml
  berth whatif --trace week.jsonl --config today.yaml --config lend-more.yaml --chart compare.png
  berth whatif --trace week.jsonl --config queues.yaml --fair-sharing -o json
  berth whatif --trace week.jsonl --config queues.yaml --against-recorded
  berth whatif --trace week.jsonl --this-cluster --config lend-more.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case tracePath == "":
				return errors.New("--trace is required: a trace file (docs/whatif.md)")
			case len(configs) == 0 && !thisCluster || len(configs)+btoi(thisCluster) > 2:
				return fmt.Errorf("--config: give one configuration to replay, or two to compare (%d given, --this-cluster counting as one)",
					len(configs)+btoi(thisCluster))
			case !thisCluster && (kubeconfig != "" || cmd.Flags().Changed("name") || cmd.Flags().Changed("data-dir")):
				return errors.New("--kubeconfig, --name and --data-dir say which cluster --this-cluster reads: give --this-cluster too")
			case output != "table" && output != "json":
				return fmt.Errorf("-o %q: unknown output format (use table or json)", output)
			case top < 0:
				return fmt.Errorf("--top %d: must not be negative", top)
			case againstRecorded && len(configs)+btoi(thisCluster) != 1:
				return fmt.Errorf("--against-recorded compares one replay with what happened: give one --config, or --this-cluster (%d given)", len(configs)+btoi(thisCluster))
			}
			f, err := os.Open(tracePath)
			if err != nil {
				return err
			}
			header, trace, err := whatif.ReadTrace(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", tracePath, err)
			}
			var plans []*whatif.Config
			if thisCluster {
				cfg, err := readClusterPlan(cmd.Context(), &inst, kubeconfig, trace)
				if err != nil {
					return err
				}
				if missing := missingLocalQueues(cfg, trace); len(missing) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "the cluster has no LocalQueue %s: their workloads wait for ever in its replay\n", strings.Join(missing, ", "))
				}
				plans = append(plans, cfg)
			}
			for _, path := range configs {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				cfg, err := whatif.ParseConfig(filepath.Base(path), data)
				if err != nil {
					return err
				}
				plans = append(plans, cfg)
			}
			var results []*whatif.Result
			for _, cfg := range plans {
				began := time.Now()
				r, err := whatif.Replay(cfg, header.Start, trace, whatif.Options{FairSharing: fairSharing, Nodes: header.Nodes})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "replayed %d workloads against %s in %s (%d admission cycles)\n",
					len(trace), cfg.Name, time.Since(began).Round(time.Millisecond), r.Cycles)
				results = append(results, r)
			}
			if againstRecorded {
				rec, err := whatif.Recorded(trace, results[0])
				if err != nil {
					return fmt.Errorf("--against-recorded: %s: %w", tracePath, err)
				}
				results = []*whatif.Result{rec, whatif.ByLastAdmission(results[0])}
			}
			if chart != "" {
				f, err := os.Create(chart)
				if err != nil {
					return err
				}
				if err := plot.WritePNG(f, whatif.Chart(results...)); err != nil {
					_ = f.Close()
					return fmt.Errorf("writing %s: %w", chart, err)
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			return writeWhatif(cmd.OutOrStdout(), output, results, top)
		},
	}
	f := cmd.Flags()
	f.StringVar(&tracePath, "trace", "", "the trace to replay (JSON Lines, docs/whatif.md)")
	f.StringArrayVar(&configs, "config", nil, "a queue configuration (YAML as applied); twice to compare two")
	f.BoolVar(&fairSharing, "fair-sharing", false, "replay as berth controller --fair-sharing does")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.StringVar(&chart, "chart", "", "also draw, as a PNG file, the workloads waiting, the mean wait and the quota held over the trace's time, a line per configuration")
	f.IntVar(&top, "top", 10, "with two configurations: how many of the workloads whose wait changed most to list")
	f.BoolVar(&thisCluster, "this-cluster", false, "replay against the queues of a cluster running berth as they are now (the instance, or --kubeconfig), as the first configuration")
	f.StringVar(&kubeconfig, "kubeconfig", "", "with --this-cluster: the cluster to read, instead of a berth instance")
	inst.add(cmd)
	f.BoolVar(&againstRecorded, "against-recorded", false, "compare the replay with what happened in the cluster the trace was recorded from (its admissions): how faithful the replay is")
	return cmd
}

func writeWhatif(w io.Writer, output string, results []*whatif.Result, top int) error {
	if len(results) == 2 {
		c := whatif.Compare(results[0], results[1], top)
		if output == "json" {
			return printStructured(w, "json", c)
		}
		return whatif.WriteComparison(w, c)
	}
	if output == "json" {
		return printStructured(w, "json", struct {
			Groups []whatif.Group `json:"groups"`
			Result *whatif.Result `json:"result"`
		}{whatif.Summarize(results[0]), results[0]})
	}
	return whatif.WriteSummary(w, results[0])
}

// readClusterPlan reads the queues of the cluster inst or kubeconfig
// reaches, and keeps the part trace reaches (whatif.Config.Reached).
func readClusterPlan(ctx context.Context, inst *instanceFlags, kubeconfig string, trace []whatif.Workload) (*whatif.Config, error) {
	cfg, err := clusterConfig(inst, kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	all, err := whatif.ReadConfig(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("--this-cluster: %w", err)
	}
	plan := all.Reached(trace)
	if err := plan.Check(); err != nil {
		return nil, fmt.Errorf("--this-cluster: %w", err)
	}
	return plan, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// missingLocalQueues are the LocalQueues trace names that cfg does not
// have, sorted.
func missingLocalQueues(cfg *whatif.Config, trace []whatif.Workload) []string {
	have := map[string]bool{}
	for _, lq := range cfg.LocalQueues {
		have[lq.Namespace+"/"+lq.Name] = true
	}
	missing := map[string]bool{}
	for i := range trace {
		if key := trace[i].Namespace + "/" + trace[i].LocalQueue; !have[key] {
			missing[key] = true
		}
	}
	return slices.Sorted(maps.Keys(missing))
}
