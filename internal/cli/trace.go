package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/whatif"
)

func newTraceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Make traces of workloads for berth whatif: from a cluster's history, or from a description",
	}
	cmd.AddCommand(newTraceGenerateCommand(), newTraceRecordCommand())
	return cmd
}

func newTraceRecordCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		since      time.Duration
		timeout    time.Duration
		names      bool
		kueue      bool
	)
	cmd := &cobra.Command{
		Use:   "record [--since DURATION] > trace.jsonl",
		Short: "Write a trace (JSON Lines on stdout) of the workloads a cluster's berth ran to their end, for berth whatif",
		Long: `Read the cluster's berth Workloads and write, for each that ran to its end,
its arrival (its creation), LocalQueue, priority, pod sets with their
requests, run time (from its last admission to its end), and, as it
happened, when it was last admitted and how often it was evicted; where
the cluster has Topologies, its nodes too (names, labels, allocatable,
taints), for replaying topology-aware placement. Workloads
still pending or running, and those that ended without being admitted, are
left out and counted on stderr. Names are replaced by w0, w1, ... in order
of arrival unless --names: a trace needs only a workload's namespace, where
its LocalQueue is. With --kueue it reads Kueue's Workloads instead, each pod
asking for what its pod set's template asks for, so that a Kueue cluster's
history can be replayed against a berth plan. Finished Workloads stay in the cluster until their owner
(a Job, say) is deleted, so a trace reaches back as far as those do.`,
		Example: `  berth trace record > history.jsonl
  berth trace record --since 168h --kubeconfig ~/.kube/prod > week.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since < 0 {
				return fmt.Errorf("--since %s: must not be negative", since)
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout %s: must be positive", timeout)
			}
			cfg, err := clusterConfig(&inst, kubeconfig)
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
			if err != nil {
				return err
			}
			// A busy cluster's week is hundreds of thousands of Workloads, read
			// 500 at a time: more than the minute other commands allow.
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			var from time.Time
			if since > 0 {
				from = time.Now().Add(-since)
			}
			var rec whatif.Recording
			var total int
			var placed bool // the cluster places by topology
			source := "berth trace record"
			if kueue {
				items, version, err := kueueWorkloads(ctx, c)
				if err != nil {
					return err
				}
				rec, total, source = whatif.FromKueueWorkloads(items, from, names), len(items), "berth trace record --kueue ("+whatif.KueueGroup+"/"+version+")"
				if placed, err = kueueTopologies(ctx, c, version); err != nil {
					return err
				}
			} else {
				var all []berthv1.Workload
				var list berthv1.WorkloadList
				for {
					if err := c.List(ctx, &list, client.Limit(500), client.Continue(list.Continue)); err != nil {
						return fmt.Errorf("listing Workloads: %w", err)
					}
					all = append(all, list.Items...)
					if list.Continue == "" {
						break
					}
					if len(all)%20000 == 0 {
						fmt.Fprintf(cmd.ErrOrStderr(), "read %d Workloads so far\n", len(all))
					}
				}
				rec, total = whatif.FromWorkloads(all, from, names), len(all)
				var topos berthv1.TopologyList
				if err := c.List(ctx, &topos); err != nil {
					return fmt.Errorf("listing Topologies: %w", err)
				}
				placed = len(topos.Items) > 0
			}
			if placed {
				// Nodes, for replaying topology-aware placement: only where
				// the cluster places by topology.
				var nodes corev1.NodeList
				if err := c.List(ctx, &nodes); err != nil {
					return fmt.Errorf("listing nodes: %w", err)
				}
				rec.Nodes = whatif.NodesOf(nodes.Items)
				fmt.Fprintf(cmd.ErrOrStderr(), "recorded %d nodes (the cluster has Topologies)\n", len(rec.Nodes))
			}
			for _, why := range slices.Sorted(maps.Keys(rec.Skipped)) {
				fmt.Fprintf(cmd.ErrOrStderr(), "left out %d workloads: %s\n", rec.Skipped[why], why)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "recorded %d of %d workloads\n", len(rec.Workloads), total)
			return whatif.WriteTrace(cmd.OutOrStdout(), whatif.Header{Start: rec.Start, Source: source, Nodes: rec.Nodes}, rec.Workloads)
		},
	}
	inst.add(cmd)
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "the cluster to read, instead of a berth instance")
	f.DurationVar(&since, "since", 0, "only workloads created this long ago or since (default: all)")
	f.BoolVar(&names, "names", false, "keep the workloads' names (default: w0, w1, ... in order of arrival)")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "give up reading the cluster after this long")
	f.BoolVar(&kueue, "kueue", false, "read Kueue's Workloads ("+whatif.KueueGroup+" v1beta2, else v1beta1) instead of berth's")
	return cmd
}

func newTraceGenerateCommand() *cobra.Command {
	var (
		r          whatif.Recipe
		queues     []string
		pods       string
		priorities []int32
		start      string
	)
	cmd := &cobra.Command{
		Use:   "generate --queues NS/NAME[=WEIGHT],... --workloads N --rate PER_SECOND --run-mean SECONDS",
		Short: "Write a made-up trace (JSON Lines on stdout) from a short description: team mix, arrival rate, run times, sizes",
		Long: `Write a trace for 'berth whatif' from a description instead of a history:
workloads arrive at --rate a second on average (exponential gaps; with
--daily, twice that at midday and none at midnight), each to one of
--queues (LocalQueues as namespace/name, optionally =weight for its share),
each with one pod set of --pods pods (a number, or a range min-max, drawn
uniformly) asking --cpu (and --memory) each, at a priority drawn from
--priorities, running for an exponentially distributed time of mean
--run-mean seconds. The same --seed makes the same trace.`,
		Example: `  berth trace generate --queues team-a/jobs=3,team-b/jobs --workloads 20000 --rate 0.5 --run-mean 900 --pods 1-8 --cpu 1 > week.jsonl
  berth trace generate --queues team-a/jobs --workloads 1000 --rate 1 --run-mean 60 --daily --priorities 0,100 --seed 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, q := range queues {
				name, weight, hasWeight := strings.Cut(q, "=")
				w := 1.0
				if hasWeight {
					v, err := strconv.ParseFloat(weight, 64)
					if err != nil {
						return fmt.Errorf("--queues %s: the weight %q is not a number", q, weight)
					}
					w = v
				}
				r.LocalQueues, r.Weights = append(r.LocalQueues, name), append(r.Weights, w)
			}
			lo, hi, ranged := strings.Cut(pods, "-")
			if !ranged {
				hi = lo
			}
			a, errA := strconv.ParseInt(lo, 10, 32)
			b, errB := strconv.ParseInt(hi, 10, 32)
			if errA != nil || errB != nil {
				return fmt.Errorf("--pods %q: a number of pods, or a range such as 1-8", pods)
			}
			r.PodsMin, r.PodsMax = int32(a), int32(b)
			r.Priorities = priorities
			at, err := time.Parse(time.RFC3339, start)
			if err != nil {
				return fmt.Errorf("--start %q: %w", start, err)
			}
			trace, err := whatif.Generate(r)
			if err != nil {
				return err
			}
			return whatif.WriteTrace(cmd.OutOrStdout(), whatif.Header{Start: at, Source: "berth trace generate"}, trace)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&queues, "queues", nil, "LocalQueues the workloads go to, as namespace/name, each optionally =weight (its share of arrivals; default 1)")
	f.IntVar(&r.Workloads, "workloads", 1000, "how many workloads")
	f.Float64Var(&r.Rate, "rate", 1, "arrivals a second, on average")
	f.BoolVar(&r.Daily, "daily", false, "arrivals follow a day: twice the rate at midday, none at midnight")
	f.Float64Var(&r.RunMean, "run-mean", 600, "mean run time in seconds (exponentially distributed, at least 1)")
	f.StringVar(&pods, "pods", "1", "pods of each workload: a number, or a range min-max")
	f.StringVar(&r.CPU, "cpu", "1", "cpu each pod asks for")
	f.StringVar(&r.Memory, "memory", "", "memory each pod asks for (none when empty)")
	f.Int32SliceVar(&priorities, "priorities", nil, "priorities to draw from (default 0)")
	f.Uint64Var(&r.Seed, "seed", 1, "the random seed")
	f.StringVar(&start, "start", "2026-01-05T00:00:00Z", "the trace's start (RFC 3339): arrivals count from it")
	return cmd
}

// kueueTopologies reports whether Kueue has any Topology, at the version
// its Workloads are read at or an older one (Kueue served Topologies as
// v1alpha1 before its Workloads' version had them).
func kueueTopologies(ctx context.Context, c client.Client, version string) (bool, error) {
	for _, v := range slices.Compact([]string{version, "v1beta1", "v1alpha1"}) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: whatif.KueueGroup, Version: v, Kind: "TopologyList"})
		err := c.List(ctx, list, client.Limit(1))
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("listing Kueue's Topologies (%s): %w", v, err)
		}
		return len(list.Items) > 0, nil
	}
	return false, nil
}

// kueueWorkloads lists Kueue's Workloads at the newest version the API
// server serves.
func kueueWorkloads(ctx context.Context, c client.Client) ([]unstructured.Unstructured, string, error) {
	for _, version := range []string{"v1beta2", "v1beta1"} {
		var all []unstructured.Unstructured
		list := &unstructured.UnstructuredList{}
		for {
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: whatif.KueueGroup, Version: version, Kind: "WorkloadList"})
			err := c.List(ctx, list, client.Limit(500), client.Continue(list.GetContinue()))
			if meta.IsNoMatchError(err) {
				break
			}
			if err != nil {
				return nil, "", fmt.Errorf("listing Kueue's Workloads (%s): %w", version, err)
			}
			all = append(all, list.Items...)
			if list.GetContinue() == "" {
				return all, version, nil
			}
		}
	}
	return nil, "", fmt.Errorf("the API server serves no Kueue Workloads (%s v1beta2 or v1beta1): is Kueue installed?", whatif.KueueGroup)
}
