package translate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func makeService(name, ns string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "uid-svc"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.10", Selector: map[string]string{"app": "web", Label: "other"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080}}}}
}

func TestHostServiceSelectsItsOwnPodsOnly(t *testing.T) {
	h, err := HostService(makeService("web", "shop"), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"app": "web", Label: "vc", NamespaceLabel: "shop"}
	if len(h.Spec.Selector) != len(want) {
		t.Fatalf("selector %v, want %v", h.Spec.Selector, want)
	}
	for k, v := range want {
		if h.Spec.Selector[k] != v {
			t.Errorf("selector %s=%q, want %q", k, h.Spec.Selector[k], v)
		}
	}
	if h.Spec.ClusterIP != "" || h.Spec.Ports[0].NodePort != 0 || h.Name != "web-x-shop-x-vc" {
		t.Errorf("host service %s: cluster IP %q node port %d: want the host to assign its own", h.Name, h.Spec.ClusterIP, h.Spec.Ports[0].NodePort)
	}
	// A host pod of the same namespace matches; the tenant's forged label
	// on the Pod side is overwritten there too.
	p, _ := HostPod(makePod("web-0", "shop").Label("app", "web").Label(Label, "other").Obj(), opts, nil)
	for k, v := range h.Spec.Selector {
		if p.Labels[k] != v {
			t.Errorf("host pod label %s=%q does not match the selector's %q", k, p.Labels[k], v)
		}
	}
}

func TestHostServiceRefusesWhatOpensTheHost(t *testing.T) {
	s := makeService("web", "shop")
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.ExternalIPs = []string{"1.2.3.4"}
	_, err := HostService(s, opts)
	if err == nil || !strings.Contains(err.Error(), "spec.type") || !strings.Contains(err.Error(), "spec.externalIPs") {
		t.Fatalf("HostService = %v, want spec.type and spec.externalIPs refused", err)
	}
}

// A selector on labels that stay in the virtual cluster would select
// nothing on the host: it is refused, naming the label, not synced silent.
func TestHostServiceRefusesSelectorsOnLabelsHostPodsLack(t *testing.T) {
	s := makeService("web-0", "shop")
	s.Spec.Selector = map[string]string{"statefulset.kubernetes.io/pod-name": "web-0", "app": "web"}
	_, err := HostService(s, opts)
	if err == nil || !strings.Contains(err.Error(), "spec.selector[statefulset.kubernetes.io/pod-name]") {
		t.Fatalf("HostService = %v, want the kubernetes.io selector refused", err)
	}
}

func TestHostServiceUpdateKeepsTheHostsClusterIP(t *testing.T) {
	want, _ := HostService(makeService("web", "shop"), opts)
	cur := want.DeepCopy()
	cur.Spec.ClusterIP, cur.Spec.ClusterIPs = "10.96.0.5", []string{"10.96.0.5"}
	if _, changed := HostServiceUpdate(want, cur); changed {
		t.Fatal("HostServiceUpdate changed a host service its virtual one matches")
	}
	want.Spec.Ports[0].Port = 81
	got, changed := HostServiceUpdate(want, cur)
	if !changed || got.Spec.Ports[0].Port != 81 || got.Spec.ClusterIP != "10.96.0.5" {
		t.Fatalf("HostServiceUpdate = %v port %d clusterIP %s", changed, got.Spec.Ports[0].Port, got.Spec.ClusterIP)
	}
}

func TestTheVirtualAPIServersServiceIsNotSynced(t *testing.T) {
	if Synced(makeService("kubernetes", "default")) || !Synced(makeService("kubernetes", "shop")) {
		t.Error("Synced: want default/kubernetes alone left out")
	}
}
