package realnode

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	kubeproxyv1alpha1 "k8s.io/kube-proxy/config/v1alpha1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/controlplane"
)

var (
	ctl   = controlplane.Layout{Dir: "/data"}
	node  = LayoutOf(ctl)
	ports = Ports{ContainerdMetrics: 1001, Kubelet: 1002, KubeletHealth: 1003, ProxyHealth: 1004, ProxyMetrics: 1005}
)

// The kubelet's and kube-proxy's configs are what their own types read,
// field by field (a misspelt field would be refused), and say what the node
// needs on this machine kind.
func TestConfigsAreWhatTheComponentsRead(t *testing.T) {
	var kc kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict([]byte(KubeletConfig(node, ctl, ports)), &kc); err != nil {
		t.Fatalf("kubelet config: %v", err)
	}
	if kc.FailCgroupV1 == nil || *kc.FailCgroupV1 || kc.CgroupDriver != "cgroupfs" {
		t.Errorf("kubelet: failCgroupV1 %v, cgroupDriver %q; cgroup v1 without systemd needs false and cgroupfs", kc.FailCgroupV1, kc.CgroupDriver)
	}
	if kc.ContainerRuntimeEndpoint != "unix:///data/node/containerd/containerd.sock" || kc.Address != NodeIP || kc.Port != 1002 {
		t.Errorf("kubelet: runtime %q, serving on %s:%d", kc.ContainerRuntimeEndpoint, kc.Address, kc.Port)
	}
	if kc.Authentication.Anonymous.Enabled == nil || *kc.Authentication.Anonymous.Enabled || kc.Authorization.Mode != "Webhook" ||
		kc.Authentication.X509.ClientCAFile != "/data/pki/ca.crt" || kc.ReadOnlyPort != 0 {
		t.Errorf("kubelet: its API must take the cluster CA's clients only, each request authorised by the API server: %+v %+v read-only port %d",
			kc.Authentication, kc.Authorization, kc.ReadOnlyPort)
	}
	if kc.HealthzBindAddress != "127.0.0.1" {
		t.Errorf("kubelet health on %s, want loopback", kc.HealthzBindAddress)
	}

	var pc kubeproxyv1alpha1.KubeProxyConfiguration
	if err := yaml.UnmarshalStrict([]byte(ProxyConfig(ctl, ports)), &pc); err != nil {
		t.Fatalf("kube-proxy config: %v", err)
	}
	if pc.Mode != "iptables" || pc.HostnameOverride != NodeName || pc.ClusterCIDR != PodCIDR ||
		pc.HealthzBindAddress != "127.0.0.1:1004" || pc.MetricsBindAddress != "127.0.0.1:1005" {
		t.Errorf("kube-proxy config: %+v", pc)
	}
	if pc.IPTables.LocalhostNodePorts == nil || *pc.IPTables.LocalhostNodePorts {
		t.Error("kube-proxy would serve node ports on 127.0.0.1, and so open the machine's routing to loopback")
	}

	var cni struct {
		Name    string
		Plugins []struct {
			Type, Bridge string
			IPAM         struct {
				Ranges [][]struct{ Subnet, Gateway string }
			}
		}
	}
	if err := json.Unmarshal([]byte(CNIConfig()), &cni); err != nil {
		t.Fatalf("CNI config: %v", err)
	}
	if cni.Name != Network || cni.Plugins[0].Type != "bridge" || cni.Plugins[0].Bridge != Bridge ||
		cni.Plugins[0].IPAM.Ranges[0][0].Subnet != PodCIDR || cni.Plugins[0].IPAM.Ranges[0][0].Gateway != NodeIP {
		t.Errorf("CNI config: %+v", cni)
	}

	cc := ContainerdConfig(node, ports)
	for _, want := range []string{`root = "/data/node/containerd/root"`, `state = "/data/node/containerd/state"`,
		`address = "/data/node/containerd/containerd.sock"`, `sandbox_image = "` + PauseImage + `"`,
		"restrict_oom_score_adj = true", "SystemdCgroup = false", `conf_dir = "/data/node/cni"`, `address = "127.0.0.1:1001"`} {
		if !strings.Contains(cc, want) {
			t.Errorf("containerd config lacks %s:\n%s", want, cc)
		}
	}
}

// containerd starts first; the kubelet and kube-proxy after it, together,
// each with its config and identity, labelled as the real node.
func TestComponents(t *testing.T) {
	comps := Components(node, ctl, ports, 3, "/usr/bin/containerd")
	if len(comps) != 3 || comps[0].Name != "containerd" || comps[0].Program != "/usr/bin/containerd" || comps[0].Stage != 3 {
		t.Fatalf("components %+v", comps)
	}
	kubelet, proxy := comps[1], comps[2]
	if kubelet.Stage != 4 || proxy.Stage != 4 || kubelet.Program != "" || proxy.Program != "" {
		t.Errorf("the kubelet (stage %d) and kube-proxy (stage %d) are berth's own, after containerd", kubelet.Stage, proxy.Stage)
	}
	for _, want := range []string{"--kubeconfig=/data/pki/kubelet.kubeconfig", "--node-labels=" + Label + "=true",
		"--hostname-override=" + NodeName, "--node-ip=" + NodeIP, "--root-dir=/data/node/kubelet/root"} {
		if !slices.Contains(kubelet.Args, want) {
			t.Errorf("kubelet lacks %s: %v", want, kubelet.Args)
		}
	}
	if kubelet.HealthURL != "http://127.0.0.1:1003/healthz" || proxy.HealthURL != "http://127.0.0.1:1004/healthz" {
		t.Errorf("health %s, %s", kubelet.HealthURL, proxy.HealthURL)
	}
}
