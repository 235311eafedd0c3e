// Package localcluster assembles what `berth up` runs: the local control plane, berth's
// CRDs and RBAC installed as soon as the API server is ready, then the
// simulator and berth's controller as supervised components. The tests start exactly the
// same through package testenv.
package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-dev/berth/internal/addon"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/guard"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/manifests"
	"github.com/berth-dev/berth/internal/realnode"
)

// ControllerIdentity is the user berth's controller authenticates as locally.
var ControllerIdentity = controlplane.Identity{Name: "berth-controller", User: "berth-controller"}

// SimIdentity is the user the simulator authenticates as locally.
var SimIdentity = controlplane.Identity{Name: "berth-sim", User: "berth-sim"}

// ControllerArgs run `berth controller` against the instance in l, as its
// own identity, on loopback ports: health, metrics and webhook. Its webhook
// certificate goes in controller/<certDir>. A second replica (a chaos run's,
// a test's) runs with other ports and certDir, and --leader-elect.
func ControllerArgs(l controlplane.Layout, health, metrics, webhook int, certDir string) []string {
	return []string{"controller",
		"--kubeconfig=" + l.ComponentKubeconfig(ControllerIdentity.Name),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(health),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
		"--webhook-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(webhook),
		"--webhook-url=https://127.0.0.1:" + strconv.Itoa(webhook),
		"--webhook-cert-dir=" + filepath.Join(l.Dir, "controller", certDir),
		// The JobSet controller `--with jobset` runs, which alone makes a
		// JobSet's Jobs (and starts them: package guard's policies).
		"--jobset-controllers=" + addon.JobSet.Identity.User,
		// Trainer's, `--with trainer`, which alone makes a TrainJob's JobSet.
		"--trainer-controllers=" + addon.Trainer.Identity.User,
	}
}

// Config is what differs between one `berth up` and another.
type Config struct {
	Name    string
	DataDir string
	// Binary is the berth executable to run components from; default: this one.
	Binary   string
	Port     int
	Plan     controlplane.PlanOptions
	Progress io.Writer
	// ControllerArgs are extra flags for `berth controller`.
	ControllerArgs []string
	// ConfiguredKinds is a --configured-kinds file for the controller,
	// which is also granted what those kinds need (configured.Rules).
	ConfiguredKinds string
	// SimArgs are extra flags for `berth sim` (--nodes and the like).
	SimArgs []string
	// RealNode adds a real node (package realnode): containerd, a kubelet
	// and kube-proxy, beside the simulator's nodes.
	RealNode bool
	// NoController runs no berth controller: the instance is a cluster to
	// install berth in from its image.
	NoController bool
	// With are other projects' controllers to run beside berth's (package
	// addon), their CRDs and RBAC installed first.
	With []addon.Addon
}

// Options turns a Config into the control plane's options.
func Options(c Config) controlplane.Options {
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	// Read once: the file may change or go while the instance runs.
	kinds, kindsErr := configuredKinds(c)
	identities := []controlplane.Identity{ControllerIdentity, SimIdentity}
	if c.RealNode {
		identities = append(identities, realnode.Identity, realnode.ProxyIdentity)
	}
	for _, a := range c.With {
		identities = append(identities, a.Identity)
	}
	var tools realnode.Tools
	var stopForward func()
	bin := c.Binary
	plan := c.Plan
	if c.RealNode {
		plan.AdvertiseAddress = realnode.NodeIP // pods find the API server there (ForwardAPI)
	}
	return controlplane.Options{
		Name: c.Name, DataDir: c.DataDir, Binary: c.Binary, Port: c.Port, Plan: plan, Progress: c.Progress,
		Identities: identities,
		AfterCore: func(ctx context.Context, l controlplane.Layout) error {
			began := time.Now()
			what := "berth's CRDs, RBAC and admission policies"
			if c.NoController {
				what = "the simulator's CRDs and RBAC (berth's are for its chart to install)"
			}
			fmt.Fprintln(progress, "installing "+what)
			cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig())
			if err != nil {
				return err
			}
			if err := manifests.CRDs(ctx, cfg, !c.NoController); err != nil {
				return fmt.Errorf("installing CRDs: %w", err)
			}
			if err := manifests.LocalRBAC(ctx, cfg, !c.NoController); err != nil {
				return fmt.Errorf("installing RBAC: %w", err)
			}
			if !c.NoController {
				// Before any workload can be queued: the API server refuses
				// edits that would run a queued one past its quota.
				if err := manifests.Guard(ctx, cfg, guard.Options{Identity: ControllerIdentity.User, Namespace: manifests.ControllerNamespace,
					Controllers: map[string][]string{"JobSet": {addon.JobSet.Identity.User}, "TrainJob": {addon.Trainer.Identity.User}}}); err != nil {
					return fmt.Errorf("installing the admission policies of queued objects: %w", err)
				}
				if kindsErr != nil {
					return kindsErr
				}
				if err := configuredKindsRBAC(ctx, cfg, kinds); err != nil {
					return err
				}
				if err := manifests.WebhookConfiguration(ctx, cfg, "berth"); err != nil {
					return fmt.Errorf("installing berth's webhook configuration: %w", err)
				}
				if err := manifests.VisibilityAPIService(ctx, cfg, manifests.ControllerNamespace); err != nil {
					return fmt.Errorf("installing berth's visibility APIService: %w", err)
				}
			}
			fmt.Fprintf(progress, "%s installed after %.1fs\n", what, time.Since(began).Seconds())
			for _, a := range c.With {
				docs, err := a.Manifests()
				if err == nil {
					var objs []*unstructured.Unstructured
					if objs, err = manifests.Decode(docs...); err == nil {
						err = manifests.ApplyEstablished(ctx, cfg, objs...)
					}
				}
				if err != nil {
					return fmt.Errorf("installing %s's CRDs and RBAC: %w", a.Name, err)
				}
				fmt.Fprintf(progress, "%s's CRDs and RBAC installed\n", a.Name)
			}
			return nil
		},
		Extra: func(l controlplane.Layout, cp controlplane.Ports) ([]controlplane.Component, error) {
			var node []controlplane.Component
			if c.RealNode {
				var err error
				if bin == "" {
					if bin, err = os.Executable(); err != nil {
						return nil, err
					}
				}
				if tools, err = realnode.Check(); err != nil {
					return nil, err
				}
				if node, err = realNode(l, bin, tools, progress); err == nil {
					stopForward, err = realnode.ForwardAPI(cp.APIServer)
				}
				if err != nil {
					// No instance yet, so no AfterStop: undo the bridge here.
					_ = realnode.Teardown(realnode.LayoutOf(l), bin, tools)
					return nil, err
				}
			}
			ports, err := controlplane.FreePorts(4)
			if err != nil {
				return nil, err
			}
			health, metrics, webhook, simHealth := ports[0], ports[1], ports[2], ports[3]
			args := append(ControllerArgs(l, health, metrics, webhook, "webhook-certs"), "--leader-elect=false")
			args = append(args, c.ControllerArgs...)
			if kindsErr != nil {
				return nil, kindsErr
			}
			if kinds != nil {
				data := kinds
				own := filepath.Join(l.Dir, "controller", "configured-kinds.yaml")
				if err := os.MkdirAll(filepath.Dir(own), 0o700); err != nil {
					return nil, err
				}
				if err := os.WriteFile(own, data, 0o600); err != nil { //nolint:gosec // G703: a fixed name in the instance's own data directory
					return nil, err
				}
				args = append(args, "--configured-kinds="+own)
			}
			simArgs := append([]string{"sim",
				"--kubeconfig=" + l.ComponentKubeconfig(SimIdentity.Name),
				"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(simHealth),
			}, c.SimArgs...)
			comps := append(node, controlplane.Component{
				// Ready once its node pool exists: creating thousands of nodes takes a while.
				Name: "berth-sim", Stage: 5, Args: simArgs, Port: simHealth,
				HealthURL:    "http://127.0.0.1:" + strconv.Itoa(simHealth) + "/readyz",
				StartTimeout: 5 * time.Minute, StopGrace: 10 * time.Second,
			})
			for _, a := range c.With {
				ports, err := controlplane.FreePorts(2)
				if err != nil {
					return nil, err
				}
				comps = append(comps, controlplane.Component{
					Name: a.Component, Stage: 8, Port: ports[1],
					Args: []string{"component", a.Component,
						"--kubeconfig=" + l.ComponentKubeconfig(a.Identity.Name),
						"--health-port=" + strconv.Itoa(ports[0]),
						"--webhook-port=" + strconv.Itoa(ports[1]),
						"--cert-dir=" + filepath.Join(l.Dir, a.Component, "webhook-certs")},
					HealthURL:    "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/readyz",
					StartTimeout: 60 * time.Second, StopGrace: 10 * time.Second,
				})
			}
			if c.NoController {
				return comps, nil
			}
			return append(comps, controlplane.Component{
				Name: "berth-controller", Stage: 10, Args: args, Port: metrics,
				HealthURL:    "http://127.0.0.1:" + strconv.Itoa(health) + "/readyz",
				StartTimeout: 60 * time.Second, StopGrace: 10 * time.Second,
			}), nil
		},
		AfterStop: func(l controlplane.Layout) error {
			if stopForward != nil {
				stopForward()
			}
			if !c.RealNode || tools.Containerd == "" {
				return nil
			}
			fmt.Fprintln(progress, "removing what the real node set up on this machine")
			return realnode.Teardown(realnode.LayoutOf(l), bin, tools)
		},
	}
}

// realNode prepares the real node and returns its components: containerd,
// once ready given the pause image, then the kubelet and kube-proxy (before
// the simulator and berth's controller). Its pods are removed through
// containerd before containerd stops.
func realNode(l controlplane.Layout, bin string, tools realnode.Tools, progress io.Writer) ([]controlplane.Component, error) {
	nl := realnode.LayoutOf(l)
	free, err := controlplane.FreePorts(5)
	if err != nil {
		return nil, err
	}
	p := realnode.Ports{ContainerdMetrics: free[0], Kubelet: free[1], KubeletHealth: free[2], ProxyHealth: free[3], ProxyMetrics: free[4]}
	if err := realnode.Prepare(nl, l, p, tools); err != nil {
		return nil, fmt.Errorf("the real node: %w", err)
	}
	fmt.Fprintln(progress, "making the real node's pause image")
	pause, err := realnode.PauseArchive(nl, bin)
	if err != nil {
		return nil, err
	}
	comps := realnode.Components(nl, l, p, 3, tools.Containerd)
	comps[0].AfterReady = func(ctx context.Context) error { return realnode.LoadImage(ctx, nl, tools.Ctr, pause) }
	comps[0].BeforeStop = func(ctx context.Context) error { return realnode.RemovePods(ctx, nl) }
	return comps, nil
}

// configuredKindsRBAC lets the controller read and update the kinds it
// queues from configuration (file), and apply their admission policies.
// configuredKinds is the controller's --configured-kinds file: the kinds
// of c.ConfiguredKinds and those of its addons (--with ray), checked; nil
// when there are none.
func configuredKinds(c Config) ([]byte, error) {
	var files [][]byte
	if c.ConfiguredKinds != "" {
		data, err := os.ReadFile(c.ConfiguredKinds)
		if err != nil {
			return nil, fmt.Errorf("--configured-kinds: %w", err)
		}
		files = append(files, data)
	}
	for _, a := range c.With {
		data, err := a.Kinds()
		if err != nil {
			return nil, err
		}
		if data != nil {
			// Its kinds' controller is the addon this instance runs.
			if data, err = configured.WithControllers(data, a.Identity.User); err != nil {
				return nil, fmt.Errorf("the kinds of --with %s: %w", a.Name, err)
			}
			files = append(files, data)
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	data, err := configured.Merge(files...)
	if err == nil {
		_, err = configured.Parse(data)
	}
	if err != nil {
		return nil, fmt.Errorf("--configured-kinds %s (with the kinds of --with): %w", c.ConfiguredKinds, err)
	}
	return data, nil
}

func configuredKindsRBAC(ctx context.Context, cfg *rest.Config, data []byte) error {
	if data == nil {
		return nil
	}
	kinds, err := configured.Parse(data)
	if err != nil {
		return err
	}
	const name = "berth-configured-kinds"
	role := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: configured.Rules(kinds)}
	binding := &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: ControllerIdentity.User}}}
	var objs []*unstructured.Unstructured
	for _, o := range []any{role, binding} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	if err := manifests.Apply(ctx, cfg, objs...); err != nil {
		return fmt.Errorf("granting berth's controller the configured kinds: %w", err)
	}
	return nil
}
