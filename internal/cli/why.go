package cli

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/why"
)

func newWhyCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		namespace  string
		output     string
	)
	cmd := &cobra.Command{
		Use:   "why [workload|job|jobset|statefulset|trainjob|KIND] NAME",
		Short: "Say why a workload (or a Job's) waits: its place in line, its needs against its queue's room, and whom it would preempt",
		Long: `Say, in words, where a workload stands and why: pending, waiting for
admission checks, admitted or finished; its position in its ClusterQueue's
line and who is ahead (by priority, then age, as berth admits); what each
pod set needs and what its queue has used, nominally and available now
(borrowing included); and what berth's scheduling core decides for it right
now, run on a copy of the queues and admitted workloads: it fits, it waits
(and for what), or it fits only by preempting, naming whom. A name alone is
a Workload; with 'job', 'jobset', 'statefulset' or 'trainjob' it is the
Workload berth made for that Job, JobSet, StatefulSet or TrainJob, and with
the kind of a kind queued from configuration ('mpijob', 'pytorchjob') the
Workload of that object; for an object queued with its owner (a JobSet's
Job, a TrainJob's JobSet, a RayJob's RayCluster) it names the owner and its
Workload. It works
against a berth instance (--name/--data-dir) or any cluster running berth
(--kubeconfig). With --fair-sharing on the controller, the preemption
answer may differ: the copy runs without fair sharing.`,
		Example: `  berth why job train -n team-a
  berth why statefulset cache -n team-a
  berth why job-train-6f2b1 -n team-a -o json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := queueRef{kind: "Workload", name: args[0], namespace: namespace}
			if len(args) == 2 {
				kind, err := parseQueueKind(args[0])
				switch {
				case err == nil && (kind == "Workload" || ofObject[kind]):
				case err != nil && kindWord.MatchString(args[0]):
					// A kind queued from configuration (mpijob, pytorchjob):
					// its Workload is the one the object owns.
					kind = args[0]
				default:
					return fmt.Errorf("%q: why takes workload (wl), job, jobset, statefulset (sts), trainjob or the kind of a kind queued from configuration (mpijob)", args[0])
				}
				q.kind, q.name = kind, args[1]
			}
			switch output {
			case "table", "json", "yaml":
			default:
				return fmt.Errorf("-o %q: unknown output format (use table, json or yaml)", output)
			}
			c, err := clusterClient(&inst, kubeconfig)
			if err != nil {
				return err
			}
			ctx, cancel := contextWithTimeout(cmd)
			defer cancel()
			wl, err := findWorkload(ctx, c, q)
			if err != nil {
				return err
			}
			in, err := why.Read(ctx, c)
			if err != nil {
				return err
			}
			in.Workload = wl
			r := why.Explain(in)
			if output != "table" {
				return printStructured(cmd.OutOrStdout(), output, r)
			}
			fmt.Fprint(cmd.OutOrStdout(), why.Render(r))
			return nil
		},
	}
	inst.add(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster to ask, instead of a berth instance")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the workload, Job, JobSet or StatefulSet")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table (words), json or yaml")
	comp := completer{inst: &inst, kubeconfig: &kubeconfig, namespace: &namespace}
	cmd.ValidArgsFunction = comp.kindThenName([]string{"workload", "job", "jobset", "statefulset", "trainjob"}, parseQueueKind)
	comp.flag(cmd, "namespace", "Namespace")
	return cmd
}

// kindWord is how a kind is typed: a word of letters and digits.
var kindWord = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
