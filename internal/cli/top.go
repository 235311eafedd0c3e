package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/top"
)

func newTopCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		interval   time.Duration
		once       bool
		output     string
	)
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Show the cohort tree: each ClusterQueue's workloads, quota, usage and borrowing, refreshed in place",
		Long: `Show every cohort and ClusterQueue as a tree: pending, reserving and
admitted workloads, and per flavor and resource what is used of the nominal
quota, what is borrowed, and the borrowing and lending limits. Cohorts sum
their queues and add their own quota. On a terminal the view is redrawn in
place every --interval until interrupted; otherwise it is printed again
when it changes. --once, or -o json|yaml, prints it once. It works against
a berth instance (--name/--data-dir) or any cluster running berth
(--kubeconfig).`,
		Example: `  berth top
  berth top --once
  berth top -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "table":
			case "json", "yaml":
				once = true
			default:
				return fmt.Errorf("-o %q: unknown output format (use table, json or yaml)", output)
			}
			if interval <= 0 {
				return fmt.Errorf("--interval %s: want a positive duration", interval)
			}
			c, err := clusterClient(&inst, kubeconfig)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			f, isFile := out.(*os.File)
			live := isFile && term.IsTerminal(int(f.Fd()))
			last, lastLines := "", 0
			for {
				roots, err := snapshotTree(ctx, c)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if output != "table" {
					return printStructured(out, output, roots)
				}
				view := top.Render(roots)
				switch {
				case once:
					fmt.Fprint(out, view)
					return nil
				case live:
					if lastLines > 0 {
						fmt.Fprintf(out, "\x1b[%dA\x1b[J", lastLines) // back to the last view's first line, and clear
					}
					fmt.Fprint(out, view)
					lastLines = strings.Count(view, "\n")
				case view != last:
					fmt.Fprintf(out, "%s\n%s", time.Now().Format(time.TimeOnly), view)
				}
				last = view
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
			}
		},
	}
	inst.add(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster to show, instead of a berth instance")
	cmd.Flags().DurationVar(&interval, "interval", 2*time.Second, "how often the view is refreshed")
	cmd.Flags().BoolVar(&once, "once", false, "print the view once and exit")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml (json and yaml print once)")
	return cmd
}

// snapshotTree reads every ClusterQueue, Cohort and LocalQueue and
// arranges them.
func snapshotTree(ctx context.Context, c client.Client) ([]top.Node, error) {
	var cqs berthv1.ClusterQueueList
	if err := c.List(ctx, &cqs); err != nil {
		return nil, fmt.Errorf("listing ClusterQueues: %w", err)
	}
	var cohorts berthv1.CohortList
	if err := c.List(ctx, &cohorts); err != nil {
		return nil, fmt.Errorf("listing Cohorts: %w", err)
	}
	var lqs berthv1.LocalQueueList
	// Only for their budgets: one who may not read every namespace's
	// LocalQueues sees the tree without them.
	if err := c.List(ctx, &lqs); err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("listing LocalQueues: %w", err)
	}
	return top.Tree(cqs.Items, cohorts.Items, lqs.Items), nil
}
