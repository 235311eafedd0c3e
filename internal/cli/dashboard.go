package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/dashboard"
)

func newDashboardCommand() *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		listen     string
		actions    bool
		inCluster  bool
		serving    dashboard.Serving
		tokenFile  string
	)
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a live web dashboard of the cohort tree and each ClusterQueue's workloads, on loopback",
		Long: `Serve a web page showing every cohort and ClusterQueue as a tree (as
'berth top' does: pending, reserving and admitted workloads, and per flavor
and resource the quota used and borrowed), and, for the ClusterQueue
selected, its pending workloads in order with why each waits, its admitted
ones and charts of its last hour; a workload's page: 'berth why' in words,
its conditions, its pod sets with their flavors and topology, its pods and
its events; each topology flavor's domains with their room and the gangs
placed there; the worker clusters and what runs on each; the virtual
clusters synced into this one; and What if: a trace replayed against this
cluster's queues and another plan, as 'berth whatif' does. The page updates itself as the cluster
changes: the dashboard keeps one watch of the cluster and tells every open
page of each change.

The first line printed is the page's URL. It listens on loopback (--listen,
a free port unless one is named) and asks every visitor for a token: one
made for this run, which the URL printed carries (open it as it is; for a
script, add ?token=... to an /api/ request), or the one in --token-file (16
characters or more), which a visitor gives once at /login. Any other address
than loopback needs TLS (--tls-cert-file, --tls-key-file) and --token-file. It works
against a berth instance (--name/--data-dir) or any cluster running berth
(--kubeconfig), and reads with that kubeconfig's permissions.

It is read-only unless --allow-actions is given: then the page offers to
stop and resume ClusterQueues and workloads, as 'berth stop' and 'berth
resume' do, each done with the Kubernetes bearer token the user pastes into
the page (kept in that browser tab only), so that the API server allows
only what that user may do; the dashboard's own credentials are never used
for a change.`,
		Example: `  berth dashboard
  berth dashboard --listen 127.0.0.1:8080
  berth dashboard --listen 0.0.0.0:8443 --tls-cert-file tls.crt --tls-key-file tls.key --token-file token
  berth dashboard --allow-actions      # then paste a token, e.g. from 'kubectl create token NAME'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			serving.Listen = listen
			if tokenFile != "" {
				data, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("--token-file: %w", err)
				}
				if serving.Token = strings.TrimSpace(string(data)); serving.Token == "" {
					return fmt.Errorf("--token-file %s: the file is empty", tokenFile)
				}
			}
			if err := serving.Check(); err != nil {
				return err
			}
			ctrllog.SetLogger(zap.New(zap.WriteTo(cmd.ErrOrStderr()))) // the watch's errors
			cfg, err := dashboardConfig(&inst, kubeconfig, inCluster)
			if err != nil {
				return err
			}
			srv, err := dashboard.New(cfg, controller.Scheme())
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if actions {
				srv.AllowActions()
			}
			// Loopback is no credential: any user of the machine reaches it.
			made := serving.Token == ""
			if made {
				if serving.Token, err = dashboard.NewToken(); err != nil {
					return err
				}
			}
			srv.RequireToken(serving.Token)
			if err := srv.Start(ctx); err != nil {
				return fmt.Errorf("watching %s: %w", cfg.Host, err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			scheme := "http"
			if serving.CertFile != "" {
				scheme = "https"
			}
			base := fmt.Sprintf("%s://%s/", scheme, ln.Addr())
			if made {
				base = dashboard.TokenURL(base, serving.Token)
			}
			fmt.Fprintln(cmd.OutOrStdout(), base)
			fmt.Fprintf(cmd.ErrOrStderr(), "serving the dashboard of %s; Ctrl-C to stop\n", cfg.Host)
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = hs.Shutdown(shut)
			}()
			serve := func() error { return hs.Serve(ln) }
			if serving.CertFile != "" {
				serve = func() error { return hs.ServeTLS(ln, serving.CertFile, serving.KeyFile) }
			}
			if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	inst.add(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster to show, instead of a berth instance")
	cmd.Flags().BoolVar(&inCluster, "in-cluster", false, "run in a pod, as its ServiceAccount (berth's Helm chart does)")
	cmd.Flags().BoolVar(&actions, "allow-actions", false, "let the page stop and resume queues and workloads, with the user's own token")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "the address to serve on (port 0: a free one); beyond loopback, TLS and a token are required")
	cmd.Flags().StringVar(&serving.CertFile, "tls-cert-file", "", "serve over TLS with this certificate (PEM; with --tls-key-file)")
	cmd.Flags().StringVar(&serving.KeyFile, "tls-key-file", "", "the certificate's private key (PEM)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "ask every visitor for the token in this file (16 characters or more), not one made for this run")
	return cmd
}

// dashboardConfig is the cluster the dashboard shows: its pod's, with
// --in-cluster, else as other commands connect (clusterConfig).
func dashboardConfig(inst *instanceFlags, kubeconfig string, inCluster bool) (*rest.Config, error) {
	if !inCluster {
		return clusterConfig(inst, kubeconfig)
	}
	if kubeconfig != "" {
		return nil, fmt.Errorf("--in-cluster and --kubeconfig: give one")
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("--in-cluster: %w", err)
	}
	return cfg, nil
}
