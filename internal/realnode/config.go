// Package realnode is the real node of a local instance (berth up
// --real-node): the distribution's containerd and runc, with containerd's
// config, state and socket under the instance's data directory, a CNI
// bridge network, and a kubelet and kube-proxy built into berth, so that
// pods run real containers beside the simulator's fake nodes. What it
// writes is pure (config.go: configs and components, tested against golden
// files); what it does to the host is in host.go, and everything it sets up
// there, Teardown removes.
package realnode

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/controlplane"
)

const (
	// NodeName is the real node's name.
	NodeName = "berth-real-node"
	// Label marks it (value "true"), to tell it from simulated nodes.
	Label = "berth.dev/real-node"
	// Bridge is the pod network's bridge. Its address, NodeIP, is the
	// pods' gateway and the node's address; PodCIDR is the pods'.
	Bridge  = "berth0"
	NodeIP  = "10.244.0.1"
	PodCIDR = "10.244.0.0/24"
	// Network names the CNI network (and host-local's records of it).
	Network = "berth"
	// PauseImage holds each pod's sandbox: berth itself, running `berth
	// component pause`, as no registry is reached for the usual one.
	PauseImage = "berth.dev/pause:1"
	// Namespace is containerd's namespace for Kubernetes' containers.
	Namespace = "k8s.io"
	// CNIBinDir is where the distribution's CNI plugins are.
	CNIBinDir = "/usr/lib/cni"
)

// Identity is the kubelet's: a node, by the Node authorizer's rules.
var Identity = controlplane.Identity{Name: "kubelet", User: "system:node:" + NodeName, Groups: []string{"system:nodes"}}

// ProxyIdentity is kube-proxy's, bound to system:node-proxier by default.
var ProxyIdentity = controlplane.Identity{Name: "kube-proxy", User: "system:kube-proxy"}

// Layout is where the node keeps its files: <data directory>/node.
type Layout struct{ Dir string }

// LayoutOf is the node's layout in an instance's.
func LayoutOf(l controlplane.Layout) Layout { return Layout{Dir: filepath.Join(l.Dir, "node")} }

func (l Layout) ContainerdConfig() string { return filepath.Join(l.Dir, "containerd", "config.toml") }
func (l Layout) ContainerdRoot() string   { return filepath.Join(l.Dir, "containerd", "root") }
func (l Layout) ContainerdState() string  { return filepath.Join(l.Dir, "containerd", "state") }
func (l Layout) Socket() string           { return filepath.Join(l.Dir, "containerd", "containerd.sock") }
func (l Layout) CNIConfDir() string       { return filepath.Join(l.Dir, "cni") }
func (l Layout) KubeletConfig() string    { return filepath.Join(l.Dir, "kubelet", "config.yaml") }
func (l Layout) KubeletRoot() string      { return filepath.Join(l.Dir, "kubelet", "root") }
func (l Layout) KubeletCertDir() string   { return filepath.Join(l.Dir, "kubelet", "pki") }
func (l Layout) ProxyConfig() string      { return filepath.Join(l.Dir, "kube-proxy.yaml") }
func (l Layout) PauseArchive() string     { return filepath.Join(l.Dir, "pause.tar") }
func (l Layout) SysctlRecord() string     { return filepath.Join(l.Dir, "sysctl-before.json") }

// Ports are the node's loopback ports: containerd's metrics (its health),
// the kubelet's API (on NodeIP) and health, kube-proxy's health and metrics.
type Ports struct {
	ContainerdMetrics, Kubelet, KubeletHealth, ProxyHealth, ProxyMetrics int
}

// ContainerdConfig is containerd's config: everything under the node's
// directory, runc with cgroupfs, pods on the CNI network in CNIConfDir, the
// sandbox from PauseImage. restrict_oom_score_adj: a process here may not
// lower its OOM score (no CAP_SYS_RESOURCE), which runc otherwise does.
func ContainerdConfig(l Layout, p Ports) string {
	return fmt.Sprintf(`# Written by berth up --real-node; rewritten at each start.
version = 2
root = %q
state = %q

[grpc]
  address = %q

[metrics]
  address = "127.0.0.1:%d"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`, l.ContainerdRoot(), l.ContainerdState(), l.Socket(), p.ContainerdMetrics, PauseImage, CNIBinDir, l.CNIConfDir())
}

// CNIConfig is the pod network: a bridge whose address is the pods'
// gateway, addresses from PodCIDR, traffic leaving the node masqueraded,
// and host ports.
func CNIConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, Network, Bridge, PodCIDR, NodeIP)
}

// KubeletConfig is the kubelet's config: cgroupfs on cgroup v1 (which
// Kubernetes 1.36 refuses unless told otherwise), its API on NodeIP for the
// API server only (client certificates of the cluster's CA, each request
// authorised by the API server), its health on loopback, and eviction
// thresholds low enough for a development machine's disk.
func KubeletConfig(l Layout, ctl controlplane.Layout, p Ports) string {
	return fmt.Sprintf(`# Written by berth up --real-node; rewritten at each start.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
podCIDR: %s
failSwapOn: false
resolvConf: /etc/resolv.conf
serializeImagePulls: false
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, l.Socket(), NodeIP, p.Kubelet, p.KubeletHealth, ctl.PKI("ca.crt"), PodCIDR)
}

// ProxyConfig is kube-proxy's: iptables, the node's pods in PodCIDR, health
// and metrics on loopback, conntrack left as it is (setting it needs rights
// a container here lacks), and no node ports on 127.0.0.1, which would have
// it let the whole machine route to loopback (route_localnet).
func ProxyConfig(ctl controlplane.Layout, p Ports) string {
	return fmt.Sprintf(`# Written by berth up --real-node; rewritten at each start.
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %s}
hostnameOverride: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`, ctl.ComponentKubeconfig(ProxyIdentity.Name), NodeName, PodCIDR, p.ProxyHealth, p.ProxyMetrics)
}

// Components are the node's processes: containerd, then the kubelet and
// kube-proxy, after the control plane (stage) and before berth's own.
// afterContainerd runs once containerd answers (loading the pause image).
func Components(l Layout, ctl controlplane.Layout, p Ports, stage int, containerd string) []controlplane.Component {
	health := func(port int, path string) string { return "http://127.0.0.1:" + strconv.Itoa(port) + path }
	return []controlplane.Component{{
		Name: "containerd", Program: containerd, Stage: stage, Port: p.ContainerdMetrics,
		Args:      []string{"--config", l.ContainerdConfig()},
		HealthURL: health(p.ContainerdMetrics, "/v1/metrics"), StartTimeout: 30 * time.Second, StopGrace: 10 * time.Second,
	}, {
		Name: "kubelet", Stage: stage + 1, Port: p.Kubelet,
		Args: []string{"component", "kubelet",
			"--config=" + l.KubeletConfig(),
			"--kubeconfig=" + ctl.ComponentKubeconfig(Identity.Name),
			"--hostname-override=" + NodeName,
			"--node-ip=" + NodeIP,
			"--root-dir=" + l.KubeletRoot(),
			"--cert-dir=" + l.KubeletCertDir(),
			"--node-labels=" + strings.Join([]string{Label + "=true"}, ","),
		},
		HealthURL: health(p.KubeletHealth, "/healthz"), StartTimeout: 60 * time.Second, StopGrace: 15 * time.Second,
	}, {
		Name: "kube-proxy", Stage: stage + 1, Port: p.ProxyHealth,
		Args:      []string{"component", "kube-proxy", "--config=" + l.ProxyConfig()},
		HealthURL: health(p.ProxyHealth, "/healthz"), StartTimeout: 60 * time.Second, StopGrace: 10 * time.Second,
	}}
}
