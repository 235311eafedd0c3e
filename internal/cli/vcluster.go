package cli

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/vcluster/serve"
	"github.com/berth-dev/berth/internal/vcluster/supervisor"
	"github.com/berth-dev/berth/internal/vcluster/syncer"
	"github.com/berth-dev/berth/internal/vcluster/translate"
)

func newVClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vcluster",
		Short: "Virtual clusters: a control plane per tenant, their Pods run in a host namespace",
		Long: `A virtual cluster has its own etcd, kube-apiserver and kube-controller-manager:
its own namespaces, CRDs and RBAC. It has no scheduler and no nodes of its own:
a syncer copies its Pods (and the ConfigMaps, Secrets and ServiceAccounts they
use) into one namespace of the host cluster, where the host schedules them and
berth queues those that ask for a queue, and copies their status back.
See docs/vcluster.md.`,
	}
	cmd.AddCommand(newVClusterCreateCommand(), newVClusterListCommand(), newVClusterKubeconfigCommand(),
		newVClusterDeleteCommand(), newVClusterServeCommand(), newVClusterSyncerCommand())
	return cmd
}

func newVClusterCreateCommand() *cobra.Command {
	var f instanceFlags
	s := supervisor.Settings{}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create and start a virtual cluster; prints its kubeconfig path last",
		Long: `Create a virtual cluster on the berth instance selected by --name/--data-dir
(or on the cluster --host-kubeconfig reaches; its data still lives under the
instance's data directory, in vclusters/NAME), and start it in the background.

On the host it makes the namespace (--host-namespace, default vcluster-NAME)
unless it exists, and in it the syncer's ServiceAccount berth-vcluster-NAME,
with a Role that reaches only that namespace, and read access to nodes. Every
host object the syncer makes is owned by that account. The namespace is this
virtual cluster's alone: default, berth-system and kube-* are refused, and so
is one where another virtual cluster runs or that holds other Secrets.

Tenant Pods meet Pod Security's baseline level (or --pod-security
restricted): the host namespace is labelled to enforce it, and the syncer
refuses what it forbids on the tenant's Pod, with an event and its
PodScheduled condition naming the field. Queue and priority are the host's to
give (--queue, --priority-class): tenants' own labels for them are ignored.

The virtual cluster stops with 'berth down' and starts again with 'berth up'.`,
		Example: `  berth up --detach --nodes 4
  berth vcluster create team-a
  kubectl --kubeconfig $(berth vcluster kubeconfig team-a) run web --image nginx
  berth vcluster create team-b --queue tenants   # every Pod queued in host LocalQueue tenants
  berth vcluster create team-c --pod-security restricted --runtime-class gvisor`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s.Name = args[0]
			if err := translate.ValidateName(s.Name); err != nil {
				return err
			}
			if err := s.Policy.Validate(); err != nil {
				return err
			}
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			kubeconfig, err := supervisor.Create(cmd.Context(), cmd.ErrOrStderr(), dir, &s, startDetached)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "virtual cluster %s is up; its Pods run in host namespace %s\n", s.Name, s.HostNamespace)
			fmt.Fprintf(cmd.OutOrStdout(), "  use it:     kubectl --kubeconfig %s get pods -A\n", kubeconfig)
			fmt.Fprintf(cmd.OutOrStdout(), "  delete it:  berth vcluster delete %s\n", s.Name)
			fmt.Fprintln(cmd.OutOrStdout(), kubeconfig)
			return nil
		},
	}
	f.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&s.HostNamespace, "host-namespace", "", "host namespace its Pods run in (default vcluster-NAME; made if missing)")
	fl.StringVar(&s.AdminKubeconfig, "host-kubeconfig", "", "kubeconfig of the host cluster (default: the instance's admin kubeconfig)")
	addPolicyFlags(fl, &s.Policy)
	fl.BoolVar(&s.NoFsync, "etcd-unsafe-no-fsync", false, "run its etcd without fsync: faster, but a machine crash may lose recent writes")
	return cmd
}

// addPolicyFlags adds the flags of a virtual cluster's Policy: the same for
// create, serve and the syncer, which pass them on (Policy.Args).
func addPolicyFlags(f *pflag.FlagSet, p *translate.Policy) {
	f.StringVar(&p.Queue, "queue", "", "host LocalQueue (in the host namespace) every tenant Pod is queued in; tenants' own queue labels are ignored; without it tenant Pods are queued only if the host namespace opts in (berth.dev/manage-pods)")
	f.StringVar(&p.PriorityClass, "priority-class", "", "host WorkloadPriorityClass of every queued tenant Pod; tenants' own priority labels and classes are ignored (needs --queue)")
	f.StringVar(&p.PodSecurity, "pod-security", "", "Pod Security level tenant Pods must meet, checked by the syncer and enforced on the host namespace: baseline (default) or restricted")
	f.StringSliceVar(&p.RuntimeClasses, "runtime-class", nil, "runtime classes tenant Pods may name (repeat or comma-separate; default none)")
	f.BoolVar(&p.AllowHostAccess, "allow-host-access", false, "let tenant Pods do what Pod Security baseline forbids (hostPath, host ports and namespaces, privileged, added capabilities, unconfined seccomp or AppArmor, ...), name any runtime class, and choose their nodes")
	f.StringSliceVar(&p.NodeLabels, "allow-node-label", nil, "a node label key tenant Pods may select nodes by (nodeSelector, node affinity), which virtual Nodes then show (repeat or comma-separate; default none: the queue's flavor places them)")
	f.StringSliceVar(&p.Tolerations, "allow-toleration", nil, "a taint key tenant Pods may tolerate (repeat or comma-separate; default none but the not-ready and unreachable taints)")
	f.StringSliceVar(&p.Schedulers, "allow-scheduler", nil, "a scheduler tenant Pods may name besides the default one (repeat or comma-separate)")
}

func newVClusterListCommand() *cobra.Command {
	var f instanceFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the virtual clusters of an instance: host namespace, ready, Pods synced",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			dirs, err := supervisor.List(dir)
			if err != nil {
				return err
			}
			if len(dirs) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "no virtual clusters; create one with: berth vcluster create NAME\n")
				return nil
			}
			ctx, cancel := contextWithTimeout(cmd)
			defer cancel()
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tHOST NAMESPACE\tREADY\tPODS SYNCED")
			for _, name := range slices.Sorted(maps.Keys(dirs)) {
				vdir := dirs[name]
				s, err := supervisor.Read(vdir)
				if err != nil {
					fmt.Fprintf(tw, "%s\t?\t%v\t-\n", name, err)
					continue
				}
				ready := "no"
				if st, err := controlplane.ReadStatus(ctx, vdir); err == nil && st.Healthy() {
					ready = "yes"
				}
				pods := "?"
				if h, err := s.Host(); err == nil {
					if n, err := h.Pods(ctx); err == nil {
						pods = fmt.Sprint(n)
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, s.HostNamespace, ready, pods)
			}
			return tw.Flush()
		},
	}
	f.add(cmd)
	return cmd
}

func newVClusterKubeconfigCommand() *cobra.Command {
	var f instanceFlags
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Print the path of a virtual cluster's admin kubeconfig",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			vdir := filepath.Join(supervisor.Dir(dir), args[0])
			if _, err := supervisor.Read(vdir); err != nil {
				return fmt.Errorf("no virtual cluster %s in %s (berth vcluster list shows them)", args[0], dir)
			}
			fmt.Fprintln(cmd.OutOrStdout(), controlplane.Layout{Dir: vdir}.Kubeconfig())
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

func newVClusterDeleteCommand() *cobra.Command {
	var f instanceFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Stop a virtual cluster, delete everything it made on the host, and its data",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			s, err := supervisor.Delete(cmd.Context(), cmd.ErrOrStderr(), dir, args[0], timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "virtual cluster %s deleted, with everything it made in host namespace %s\n", s.Name, s.HostNamespace)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the host objects to go")
	return cmd
}

func newVClusterServeCommand() *cobra.Command {
	c := serve.Config{}
	var noFsync bool
	var notifyFD int
	cmd := &cobra.Command{
		Use:   "serve NAME",
		Short: "Run a virtual cluster's control plane and syncer in the foreground",
		Long: `Run virtual cluster NAME: its etcd, kube-apiserver and kube-controller-manager
as child processes, then its syncer, all supervised (a component that exits is
restarted), until Ctrl-C or SIGTERM. 'berth vcluster create' runs this in the
background; in a real cluster, berth's chart (or config/vcluster) runs it as a Deployment, where
the syncer reaches the host with the Pod's own service account.

The host account it uses (--host-kubeconfig, else in-cluster) needs the Role
'berth vcluster create' makes, and the ServiceAccount berth-vcluster-NAME must
exist in --host-namespace: it owns every host object the syncer makes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.Name = args[0]
			if err := translate.ValidateName(c.Name); err != nil {
				return err
			}
			if c.DataDir == "" {
				return fmt.Errorf("--data-dir is required")
			}
			if c.HostNamespace == "" {
				return fmt.Errorf("--host-namespace is required (or POD_NAMESPACE in a Pod)")
			}
			if err := c.Policy.Validate(); err != nil {
				return err
			}
			c.Plan = controlplane.DefaultPlanOptions()
			c.Plan.EtcdUnsafeNoFsync = noFsync
			return serveVCluster(cmd, c, notifyFD)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.DataDir, "data-dir", "", "data directory of the virtual control plane")
	f.StringVar(&c.HostKubeconfig, "host-kubeconfig", "", "kubeconfig the syncer reaches the host with (default in-cluster)")
	f.IntVar(&c.Port, "port", 0, "virtual kube-apiserver port on 127.0.0.1 (0: the previous run's port if free, else any free port)")
	f.StringVar(&c.HostNamespace, "host-namespace", os.Getenv("POD_NAMESPACE"), "host namespace tenant Pods run in (default $POD_NAMESPACE)")
	addPolicyFlags(f, &c.Policy)
	f.BoolVar(&noFsync, "etcd-unsafe-no-fsync", false, "run etcd without fsync")
	f.IntVar(&notifyFD, "notify-fd", 0, "internal: file descriptor on which to report start-up to a detaching parent")
	_ = f.MarkHidden("notify-fd")
	return cmd
}

func serveVCluster(cmd *cobra.Command, c serve.Config, notifyFD int) error {
	progress := &reporter{out: cmd.ErrOrStderr()}
	if notifyFD > 0 {
		progress.notify = os.NewFile(uintptr(notifyFD), "notify")
	}
	c.Progress = progress
	ctx, sigs, release := interrupts()
	defer release()
	inst, err := controlplane.Start(ctx, serve.Options(c))
	if err != nil {
		progress.finish(notice{Error: err.Error()})
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "virtual cluster %s is up: kube-apiserver at https://127.0.0.1:%d\n", c.Name, inst.State().Ports.APIServer)
	fmt.Fprintln(cmd.OutOrStdout(), inst.Kubeconfig())
	progress.finish(notice{Ready: inst.Kubeconfig()})
	stopWhenAsked(ctx, sigs, inst, func() {})
	return inst.Err()
}

func newVClusterSyncerCommand() *cobra.Command {
	o := syncer.Options{}
	var virtualKC, hostKC string
	cmd := &cobra.Command{
		Use:    "syncer NAME",
		Short:  "Run a virtual cluster's syncer (berth vcluster serve runs it)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctrl.SetLogger(zap.New())
			o.VCluster = args[0]
			if err := o.Policy.Validate(); err != nil {
				return err
			}
			var err error
			if o.Virtual, err = clientcmd.BuildConfigFromFlags("", virtualKC); err != nil {
				return fmt.Errorf("virtual kubeconfig: %w", err)
			}
			loading := clientcmd.NewDefaultClientConfigLoadingRules()
			loading.ExplicitPath = hostKC
			if o.Host, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, nil).ClientConfig(); err != nil {
				return fmt.Errorf("host kubeconfig (--host-kubeconfig, else in-cluster): %w", err)
			}
			for _, c := range []*rest.Config{o.Virtual, o.Host} {
				c.QPS, c.Burst = 200, 400
			}
			ctx := ctrl.SetupSignalHandler()
			for _, c := range []*rest.Config{o.Virtual, o.Host} {
				if err := awaitAPIServer(ctx, c, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return syncer.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&virtualKC, "virtual-kubeconfig", "", "admin kubeconfig of the virtual cluster")
	f.StringVar(&hostKC, "host-kubeconfig", "", "kubeconfig of the host (default in-cluster)")
	f.StringVar(&o.HostNamespace, "host-namespace", "", "host namespace tenant Pods run in")
	addPolicyFlags(f, &o.Policy)
	f.StringVar(&o.HealthAddr, "health-probe-bind-address", "127.0.0.1:0", "address for /healthz and /readyz")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", "", "address for /metrics (default none)")
	f.StringVar(&o.OwnerServiceAccount, "owner-service-account", "", "host ServiceAccount that owns the host objects (default berth-vcluster-NAME)")
	return cmd
}
