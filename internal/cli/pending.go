package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/internal/visibility"
)

func newPendingCommand() *cobra.Command {
	var (
		inst          instanceFlags
		kubeconfig    string
		namespace     string
		output        string
		offset, limit int
	)
	cmd := &cobra.Command{
		Use:   "pending clusterqueue|localqueue NAME",
		Short: "List a queue's pending workloads in the order berth will admit them, with why each waits",
		Long: `List the workloads waiting in a ClusterQueue's line, or those of one
LocalQueue, in the order berth looks at them: a preemptor waiting for its
victims first, then by priority (aging included), then age. Each has its
position in the ClusterQueue and among its LocalQueue's, and why it waits as
berth last decided. Workloads held back by an eviction's backoff, or parked
because their LocalQueue or ClusterQueue does not exist or is stopped, are not
in line: 'berth why' explains those.

It asks berth's visibility API (visibility.berth.dev) through the API server,
so it needs berth's controller running, and the right to read it: whoever may
read a namespace (the built-in view role) may list its LocalQueues; a
ClusterQueue's whole line needs the berth-visibility-viewer role.`,
		Example: `  berth pending cq team-a
  berth pending lq jobs -n team-a --limit 20
  berth pending cq team-a --offset 1000 -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := parseQueueKind(args[0])
			if err != nil || (kind != "ClusterQueue" && kind != "LocalQueue") {
				return fmt.Errorf("%q: pending takes clusterqueue (cq) or localqueue (lq)", args[0])
			}
			switch output {
			case "table", "json", "yaml":
			default:
				return fmt.Errorf("-o %q: unknown output format (use table, json or yaml)", output)
			}
			if offset < 0 || offset > visibilityv1.MaxOffset || limit < 1 || limit > visibilityv1.MaxLimit {
				return fmt.Errorf("--offset %d --limit %d: the offset must be from 0 to %d, and the limit from 1 to %d",
					offset, limit, visibilityv1.MaxOffset, visibilityv1.MaxLimit)
			}
			cfg, err := clusterConfig(&inst, kubeconfig)
			if err != nil {
				return err
			}
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			path := visibility.Path + "/clusterqueues/" + args[1] + "/" + visibilityv1.PendingWorkloads
			what := "ClusterQueue " + args[1]
			if kind == "LocalQueue" {
				path = visibility.Path + "/namespaces/" + namespace + "/localqueues/" + args[1] + "/" + visibilityv1.PendingWorkloads
				what = "LocalQueue " + namespace + "/" + args[1]
			}
			ctx, cancel := contextWithTimeout(cmd)
			defer cancel()
			res := kube.Discovery().RESTClient().Get().AbsPath(path).
				Param("offset", strconv.Itoa(offset)).Param("limit", strconv.Itoa(limit)).Do(ctx)
			// Error, unlike DoRaw, reads the visibility API's message out of its Status.
			if err := res.Error(); err != nil {
				// The API server's own 404, not the visibility API's "not found".
				if apierrors.IsNotFound(err) && strings.Contains(err.Error(), "could not find the requested resource") {
					return fmt.Errorf("%s: %w (is the visibility API registered? 'kubectl get apiservice v1beta1.visibility.berth.dev')", what, err)
				}
				if strings.Contains(err.Error(), what) {
					return err // the visibility API's own message names it
				}
				return fmt.Errorf("%s: %w", what, err)
			}
			data, err := res.Raw()
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			var s visibilityv1.PendingWorkloadsSummary
			if err := json.Unmarshal(data, &s); err != nil {
				return fmt.Errorf("%s: the visibility API answered what is not a PendingWorkloadsSummary: %w", what, err)
			}
			if output != "table" {
				return printStructured(cmd.OutOrStdout(), output, s)
			}
			return printPending(cmd.OutOrStdout(), what, offset, s)
		},
	}
	inst.add(cmd)
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "the cluster to ask, instead of a berth instance")
	f.StringVarP(&namespace, "namespace", "n", "default", "namespace of the LocalQueue")
	f.StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	f.IntVar(&offset, "offset", 0, "skip this many workloads of the line first")
	f.IntVar(&limit, "limit", visibilityv1.DefaultLimit, "list at most this many")
	comp := completer{inst: &inst, kubeconfig: &kubeconfig, namespace: &namespace}
	cmd.ValidArgsFunction = comp.kindThenName([]string{"clusterqueue", "localqueue"}, parseQueueKind)
	comp.flag(cmd, "namespace", "Namespace")
	return cmd
}

func printPending(out io.Writer, what string, offset int, s visibilityv1.PendingWorkloadsSummary) error {
	if len(s.Items) == 0 {
		_, err := fmt.Fprintf(out, "%s: %d waiting, none from position %d on\n", what, s.Total, offset+1)
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POSITION\tIN LOCALQUEUE\tWORKLOAD\tLOCALQUEUE\tPRIORITY\tWHY")
	for _, it := range s.Items {
		why := it.Message
		if why == "" {
			why = "waiting its turn"
		}
		prio := strconv.Itoa(int(it.Priority))
		if it.Aged != 0 {
			prio += fmt.Sprintf(" (+%d aged)", it.Aged)
		}
		fmt.Fprintf(w, "%d\t%d\t%s/%s\t%s\t%s\t%s\n", it.PositionInClusterQueue, it.PositionInLocalQueue, it.Namespace, it.Name,
			it.LocalQueueName, prio, why)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%s: %d-%d of %d waiting\n", what, offset+1, offset+len(s.Items), s.Total)
	return err
}
