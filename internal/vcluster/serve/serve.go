// Package serve is what `berth vcluster serve` runs for one virtual
// cluster: its control plane (no scheduler: the host schedules) and the
// syncer, supervised as one instance, as `berth up` runs a local cluster.
package serve

import (
	"io"
	"strconv"
	"time"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// Config is what `berth vcluster serve` runs: a virtual cluster's
// control plane and its syncer.
type Config struct {
	// Name is the virtual cluster's name; the instance is named vc-<Name>.
	Name    string
	DataDir string
	Binary  string
	// Port for the virtual API server; 0: the previous run's if free, else any.
	Port int
	Plan controlplane.PlanOptions
	// HostKubeconfig reaches the host ("" for the in-cluster configuration),
	// HostNamespace is where tenant Pods run there.
	HostKubeconfig, HostNamespace string
	// Policy: see `berth vcluster create`.
	Policy   translate.Policy
	Progress io.Writer
}

// SyncerComponent is the syncer's component name in the virtual cluster's instance.
const SyncerComponent = "berth-vcluster-syncer"

// Options turns a Config into the control plane's options:
// etcd, kube-apiserver and kube-controller-manager (no scheduler: the host
// schedules), then the syncer, supervised like every component.
func Options(c Config) controlplane.Options {
	plan := c.Plan.WithDefaults()
	plan.Virtual = true
	return controlplane.Options{
		// Its kubeconfig context is berth-vc-<name>.
		Name: "vc-" + c.Name, DataDir: c.DataDir, Binary: c.Binary, Port: c.Port, Plan: plan, Progress: c.Progress,
		Extra: func(l controlplane.Layout, _ controlplane.Ports) ([]controlplane.Component, error) {
			ports, err := controlplane.FreePorts(2)
			if err != nil {
				return nil, err
			}
			health, metrics := ports[0], ports[1]
			args := []string{"vcluster", "syncer", c.Name,
				"--virtual-kubeconfig=" + l.Kubeconfig(),
				"--host-kubeconfig=" + c.HostKubeconfig,
				"--host-namespace=" + c.HostNamespace,
				"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(health),
				"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
			}
			args = append(args, c.Policy.Args()...)
			return []controlplane.Component{{
				// Its port is the metrics port: berth bench vcluster counts its writes there.
				Name: SyncerComponent, Stage: 5, Args: args, Port: metrics,
				HealthURL:    "http://127.0.0.1:" + strconv.Itoa(health) + "/readyz",
				StartTimeout: 60 * time.Second, StopGrace: 10 * time.Second,
			}}, nil
		},
	}
}
