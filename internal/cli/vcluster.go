package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/berth-dev/berth/internal/controller/vcsyncer"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/localcluster"
	"github.com/berth-dev/berth/internal/vcluster"
)

// vclusterSettings is what `berth vcluster create` was given, kept in the
// virtual cluster's data directory so `berth up` can start it again and
// `berth vcluster delete` knows what to remove.
type vclusterSettings struct {
	Name          string `json:"name"`
	HostNamespace string `json:"hostNamespace"`
	// AdminKubeconfig reaches the host with the rights to make (and delete)
	// the syncer's account; the syncer itself uses host.kubeconfig.
	AdminKubeconfig string `json:"adminKubeconfig"`
	vcluster.Policy
	CreatedNamespace bool `json:"createdNamespace,omitempty"`
	NoFsync          bool `json:"etcdUnsafeNoFsync,omitempty"`
}

// vclustersDir holds the virtual clusters of the instance in dir, one data
// directory each.
func vclustersDir(dir string) string { return filepath.Join(dir, "vclusters") }

func settingsFile(vdir string) string       { return filepath.Join(vdir, "vcluster.json") }
func hostKubeconfigFile(vdir string) string { return filepath.Join(vdir, "host.kubeconfig") }

func readSettings(vdir string) (*vclusterSettings, error) {
	b, err := os.ReadFile(settingsFile(vdir))
	if err != nil {
		return nil, err
	}
	var s vclusterSettings
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", settingsFile(vdir), err)
	}
	return &s, nil
}

func writeSettings(vdir string, s *vclusterSettings) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(settingsFile(vdir), append(b, '\n'), 0o600)
}

// vclusterDirs lists the virtual clusters of the instance in dir, by name.
func vclusterDirs(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(vclustersDir(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		vdir := filepath.Join(vclustersDir(dir), e.Name())
		if _, err := os.Stat(settingsFile(vdir)); e.IsDir() && err == nil {
			out[e.Name()] = vdir
		}
	}
	return out, nil
}

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
	s := vclusterSettings{}
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
			if err := vcluster.ValidateName(s.Name); err != nil {
				return err
			}
			if err := s.Policy.Validate(); err != nil {
				return err
			}
			dir, err := f.resolve()
			if err != nil {
				return err
			}
			kubeconfig, err := createVCluster(cmd.Context(), cmd.ErrOrStderr(), dir, &s)
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

// createVCluster makes virtual cluster s.Name of the instance in dir (the
// host's side, its settings) and starts it; it returns its kubeconfig.
func createVCluster(ctx context.Context, progress io.Writer, dir string, s *vclusterSettings) (string, error) {
	if s.HostNamespace == "" {
		s.HostNamespace = "vcluster-" + s.Name
	}
	if s.AdminKubeconfig == "" {
		s.AdminKubeconfig = controlplane.Layout{Dir: dir}.Kubeconfig()
	}
	var err error
	if s.AdminKubeconfig, err = filepath.Abs(s.AdminKubeconfig); err != nil {
		return "", err
	}
	if _, err := os.Stat(s.AdminKubeconfig); err != nil {
		return "", fmt.Errorf("no host kubeconfig at %s: start the instance with 'berth up' (with the same --name and --data-dir), or pass --host-kubeconfig", s.AdminKubeconfig)
	}
	vdir := filepath.Join(vclustersDir(dir), s.Name)
	if old, err := readSettings(vdir); err == nil {
		return "", fmt.Errorf("virtual cluster %s exists already (host namespace %s, data in %s); it starts with 'berth up', or delete it with 'berth vcluster delete %s'",
			s.Name, old.HostNamespace, vdir, s.Name)
	}
	if err := os.MkdirAll(vdir, 0o700); err != nil {
		return "", err
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintf(progress, "making the syncer's account in host namespace %s\n", s.HostNamespace)
	if err := prepareHost(pctx, s, vdir); err != nil {
		os.RemoveAll(vdir)
		_ = os.Remove(vclustersDir(dir)) // only if this was the first
		return "", err
	}
	if err := writeSettings(vdir, s); err != nil {
		return "", err
	}
	kubeconfig, err := startVCluster(progress, vdir, s)
	if err != nil {
		return "", fmt.Errorf("%w (the virtual cluster's data is kept in %s; remove it all with 'berth vcluster delete %s')", err, vdir, s.Name)
	}
	return kubeconfig, nil
}

// deleteVCluster stops virtual cluster name of the instance in dir, deletes
// everything it made on the host, and its data.
func deleteVCluster(ctx context.Context, progress io.Writer, dir, name string, timeout time.Duration) (*vclusterSettings, error) {
	vdir := filepath.Join(vclustersDir(dir), name)
	s, err := readSettings(vdir)
	if err != nil {
		return nil, fmt.Errorf("no virtual cluster %s in %s (berth vcluster list shows them)", name, dir)
	}
	if _, err := controlplane.Down(ctx, vdir, controlplane.DownTimeout); err != nil {
		return nil, fmt.Errorf("stopping virtual cluster %s: %w", s.Name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, err := s.host()
	if err != nil {
		return nil, err
	}
	if err := host.Clean(cctx, s.CreatedNamespace, progress); err != nil {
		return nil, fmt.Errorf("%w (run 'berth vcluster delete %s' again to finish)", err, s.Name)
	}
	return s, os.RemoveAll(vdir)
}

// startVCluster starts `berth vcluster serve` for a created virtual cluster
// in the background and returns its kubeconfig once it is ready.
func startVCluster(progress io.Writer, vdir string, s *vclusterSettings) (string, error) {
	args := []string{"vcluster", "serve", s.Name, "--data-dir", vdir, "--host-kubeconfig", hostKubeconfigFile(vdir),
		"--host-namespace", s.HostNamespace}
	args = append(args, s.Policy.Args()...)
	if s.NoFsync {
		args = append(args, "--etcd-unsafe-no-fsync")
	}
	kubeconfig, _, err := detach(prefixed(progress, "["+s.Name+"] "), vdir, args)
	return kubeconfig, err
}

// addPolicyFlags adds the flags of a virtual cluster's Policy: the same for
// create, serve and the syncer, which pass them on (Policy.Args).
func addPolicyFlags(f *pflag.FlagSet, p *vcluster.Policy) {
	f.StringVar(&p.Queue, "queue", "", "host LocalQueue (in the host namespace) every tenant Pod is queued in; tenants' own queue labels are ignored; without it tenant Pods are queued only if the host namespace opts in (berth.dev/manage-pods)")
	f.StringVar(&p.PriorityClass, "priority-class", "", "host WorkloadPriorityClass of every queued tenant Pod; tenants' own priority labels and classes are ignored (needs --queue)")
	f.StringVar(&p.PodSecurity, "pod-security", "", "Pod Security level tenant Pods must meet, checked by the syncer and enforced on the host namespace: baseline (default) or restricted")
	f.StringSliceVar(&p.RuntimeClasses, "runtime-class", nil, "runtime classes tenant Pods may name (repeat or comma-separate; default none)")
	f.BoolVar(&p.AllowHostAccess, "allow-host-access", false, "let tenant Pods do what Pod Security baseline forbids (hostPath, host ports and namespaces, privileged, added capabilities, unconfined seccomp or AppArmor, ...) and name any runtime class")
}

type prefixWriter struct {
	w      io.Writer
	prefix string
}

func prefixed(w io.Writer, prefix string) io.Writer { return prefixWriter{w, prefix} }

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			if _, err := io.WriteString(p.w, p.prefix+line); err != nil {
				return 0, err
			}
		}
	}
	return len(b), nil
}

// startVClusters starts the virtual clusters of the instance in dir that
// are not running, after `berth up`.
func startVClusters(dir string, progress io.Writer) {
	dirs, err := vclusterDirs(dir)
	if err != nil {
		fmt.Fprintf(progress, "warning: virtual clusters: %v\n", err)
	}
	for name, vdir := range dirs {
		if st, err := controlplane.ReadStatus(context.Background(), vdir); err == nil && st.Healthy() {
			continue
		}
		s, err := readSettings(vdir)
		if err == nil {
			fmt.Fprintf(progress, "starting virtual cluster %s\n", name)
			_, err = startVCluster(progress, vdir, s)
		}
		if err != nil {
			fmt.Fprintf(progress, "warning: virtual cluster %s did not start: %v\n", name, err)
		}
	}
}

// stopVClusters stops the virtual clusters of the instance in dir.
func stopVClusters(dir string, out io.Writer) error {
	dirs, err := vclusterDirs(dir)
	if err != nil {
		return err
	}
	var errs []error
	for name, vdir := range dirs {
		ran, err := controlplane.Down(context.Background(), vdir, controlplane.DownTimeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("stopping virtual cluster %s: %w", name, err))
		} else if ran {
			fmt.Fprintf(out, "virtual cluster %s stopped\n", name)
		}
	}
	return errors.Join(errs...)
}

// host is where the virtual cluster runs, as its creator reaches it.
func (s *vclusterSettings) host() (vcsyncer.Host, error) {
	admin, err := clientcmd.BuildConfigFromFlags("", s.AdminKubeconfig)
	if err != nil {
		return vcsyncer.Host{}, fmt.Errorf("host kubeconfig: %w", err)
	}
	return vcsyncer.Host{Admin: admin, VCluster: s.Name, Namespace: s.HostNamespace, Policy: s.Policy}, nil
}

// prepareHost sets the host up for a new virtual cluster and writes the
// syncer's host kubeconfig.
func prepareHost(ctx context.Context, s *vclusterSettings, vdir string) error {
	host, err := s.host()
	if err != nil {
		return err
	}
	kubeconfig, created, err := host.Prepare(ctx)
	if err != nil {
		// Nothing half made is left behind.
		if cerr := host.Clean(ctx, created, io.Discard); cerr != nil {
			err = fmt.Errorf("%w; cleaning up: %v", err, cerr)
		}
		return err
	}
	s.CreatedNamespace = created
	return os.WriteFile(hostKubeconfigFile(vdir), kubeconfig, 0o600)
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
			dirs, err := vclusterDirs(dir)
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
				s, err := readSettings(vdir)
				if err != nil {
					fmt.Fprintf(tw, "%s\t?\t%v\t-\n", name, err)
					continue
				}
				ready := "no"
				if st, err := controlplane.ReadStatus(ctx, vdir); err == nil && st.Healthy() {
					ready = "yes"
				}
				pods := "?"
				if h, err := s.host(); err == nil {
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
			vdir := filepath.Join(vclustersDir(dir), args[0])
			if _, err := readSettings(vdir); err != nil {
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
			s, err := deleteVCluster(cmd.Context(), cmd.ErrOrStderr(), dir, args[0], timeout)
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
	c := localcluster.VirtualConfig{}
	var noFsync bool
	var notifyFD int
	cmd := &cobra.Command{
		Use:   "serve NAME",
		Short: "Run a virtual cluster's control plane and syncer in the foreground",
		Long: `Run virtual cluster NAME: its etcd, kube-apiserver and kube-controller-manager
as child processes, then its syncer, all supervised (a component that exits is
restarted), until Ctrl-C or SIGTERM. 'berth vcluster create' runs this in the
background; in a real cluster, config/vcluster runs it as a Deployment, where
the syncer reaches the host with the Pod's own service account.

The host account it uses (--host-kubeconfig, else in-cluster) needs the Role
'berth vcluster create' makes, and the ServiceAccount berth-vcluster-NAME must
exist in --host-namespace: it owns every host object the syncer makes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.Name = args[0]
			if err := vcluster.ValidateName(c.Name); err != nil {
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

func serveVCluster(cmd *cobra.Command, c localcluster.VirtualConfig, notifyFD int) error {
	progress := &reporter{out: cmd.ErrOrStderr()}
	if notifyFD > 0 {
		progress.notify = os.NewFile(uintptr(notifyFD), "notify")
	}
	c.Progress = progress
	ctx, sigs, release := interrupts()
	defer release()
	inst, err := controlplane.Start(ctx, localcluster.VirtualOptions(c))
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
	o := vcsyncer.Options{}
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
			return vcsyncer.Run(ctx, o)
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
