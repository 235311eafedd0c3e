package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workercluster"
	"github.com/berth-dev/berth/internal/workload"
)

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster (add|list)",
		Short: "Add worker clusters and see whether berth reaches them",
	}
	cmd.AddCommand(newClusterAddCommand(), newClusterListCommand())
	return cmd
}

// workerObjects are what makes a worker known to a manager: the Secret
// worker-NAME in berth's namespace with its kubeconfig, and the
// WorkerCluster NAME that points at it.
func workerObjects(name, namespace string, kubeconfig []byte) (*corev1.Secret, *berthv1.WorkerCluster) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-" + name, Namespace: namespace,
		Labels: map[string]string{"berth.dev/worker-cluster": name}}, Data: map[string][]byte{workercluster.SecretKey: kubeconfig}}
	return secret, &berthv1.WorkerCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: berthv1.WorkerClusterSpec{KubeconfigSecret: secret.Name}}
}

func newClusterAddCommand() *cobra.Command {
	var (
		inst            instanceFlags
		manager         string
		kubeconfig      string
		context         string
		berthsNamespace string
	)
	cmd := &cobra.Command{
		Use:   "add NAME --kubeconfig FILE",
		Short: "Add a worker cluster: its kubeconfig goes into a Secret, and a WorkerCluster names it",
		Long: `Add a worker cluster to a manager (a berth instance, --name/--data-dir, or
--manager-kubeconfig). The worker's kubeconfig is reduced to one context (the
current one, or --context), its certificate and token files are inlined, and it
is checked as the controller will check it: it may not run a program (exec)
or use an auth-provider plugin, since a Secret must never make the controller
run anything. It is stored in the Secret worker-NAME in berth's namespace, and
the WorkerCluster NAME points at it; 'berth cluster list' then shows whether
berth reaches the worker.`,
		Example: `  berth cluster add east --kubeconfig ~/.kube/east.yaml
  berth cluster add west --kubeconfig ~/.kube/config --context west-admin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required: the worker cluster's kubeconfig")
			}
			data, err := workercluster.Portable(kubeconfig, context)
			if err != nil {
				return err
			}
			c, err := clusterClient(&inst, manager)
			if err != nil {
				return err
			}
			ctx, cancel := contextWithTimeout(cmd)
			defer cancel()
			secret, wc := workerObjects(name, berthsNamespace, data)
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &berthv1.WorkerCluster{}); err == nil {
				return fmt.Errorf("WorkerCluster %s already exists", name)
			}
			if err := c.Create(ctx, secret); err != nil {
				if apierrors.IsAlreadyExists(err) {
					return fmt.Errorf("Secret %s/%s already exists; delete it, or pick another name", berthsNamespace, secret.Name)
				}
				return fmt.Errorf("Secret %s/%s: %w", berthsNamespace, secret.Name, err)
			}
			if err := c.Create(ctx, wc); err != nil {
				_ = c.Delete(ctx, secret) // nothing half-made left behind
				return fmt.Errorf("WorkerCluster %s: %w", name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "WorkerCluster %s added (kubeconfig in Secret %s/%s); 'berth cluster list' shows whether berth reaches it\n",
				name, berthsNamespace, secret.Name)
			return nil
		},
	}
	inst.add(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the worker cluster's kubeconfig (required)")
	cmd.Flags().StringVar(&context, "context", "", "the context of --kubeconfig to use (default: its current context)")
	cmd.Flags().StringVar(&manager, "manager-kubeconfig", "", "the manager cluster, instead of a berth instance")
	cmd.Flags().StringVar(&berthsNamespace, "berth-namespace", "berth-system", "the namespace berth's controller runs in, where the Secret goes")
	return cmd
}

func newClusterListCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		output     string
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List worker clusters: whether berth reaches each (if not, why) and how many workloads run there",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("-o %q: unknown output format (use table, json or yaml)", output)
			}
			c, err := clusterClient(&inst, kubeconfig)
			if err != nil {
				return err
			}
			ctx, cancel := contextWithTimeout(cmd)
			defer cancel()
			var list berthv1.WorkerClusterList
			if err := c.List(ctx, &list); err != nil {
				return fmt.Errorf("listing WorkerClusters: %w", err)
			}
			if output != "table" {
				return printStructured(cmd.OutOrStdout(), output, list.Items)
			}
			var wls berthv1.WorkloadList
			if err := c.List(ctx, &wls); err != nil {
				return fmt.Errorf("listing Workloads: %w", err)
			}
			running := map[string]int{}
			for i := range wls.Items {
				if wl := &wls.Items[i]; wl.Status.ClusterName != "" && workload.IsAdmitted(wl) && !workload.IsFinished(wl) {
					running[wl.Status.ClusterName]++
				}
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tACTIVE\tREASON\tWORKLOADS\tAGE\tMESSAGE")
			for _, wc := range list.Items {
				active, reason, message := "Unknown", "-", "not looked at yet"
				if cond := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive); cond != nil {
					active, reason, message = string(cond.Status), cond.Reason, cond.Message
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", wc.Name, active, reason, running[wc.Name],
					duration.HumanDuration(time.Since(wc.CreationTimestamp.Time)), message)
			}
			return w.Flush()
		},
	}
	inst.add(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the manager cluster, instead of a berth instance")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func contextWithTimeout(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), time.Minute)
}
