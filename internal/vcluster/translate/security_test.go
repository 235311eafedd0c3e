package translate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Each way out of a container that Pod Security's baseline level forbids is
// refused by default, naming the field, and let through only with
// --allow-host-access.
func TestHostPodRefusesWhatBaselineForbids(t *testing.T) {
	yes := true
	for _, c := range []struct {
		name, want string
		mutate     func(*corev1.Pod)
	}{
		{"added capability", `"SYS_ADMIN" in securityContext.capabilities.add`, func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		}},
		{"pod seccomp unconfined", "seccompProfile", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}},
		{"container seccomp unconfined", "seccompProfile", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}},
		{"AppArmor unconfined", `AppArmor profile type to "Unconfined"`, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
		}},
		{"AppArmor annotation unconfined", "unconfined", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}
		}},
		{"SELinux options", "seLinuxOptions", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
		}},
		{"unmasked /proc", "procMount", func(p *corev1.Pod) {
			unmasked := corev1.UnmaskedProcMount
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: &unmasked}
		}},
		{"Windows host process", "hostProcess", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: &yes}}
		}},
		{"unsafe sysctl", "kernel.msgmax", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
		}},
		{"probe of another host", "host", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/"}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := makePod("p", "ns").Obj()
			c.mutate(v)
			_, err := HostPod(v, opts, nil)
			if err == nil {
				t.Fatal("HostPod let it through")
			}
			for _, want := range []string{"pod ns/p", c.want, `Pod Security level "baseline"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %s", err, want)
				}
			}
			o := opts
			o.AllowHostAccess = true
			if _, err := HostPod(v, o, nil); err != nil {
				t.Errorf("with host access allowed: %v", err)
			}
		})
	}
}

func TestHostPodAllowsWhatBaselineAllows(t *testing.T) {
	v := makePod("p", "ns").Obj()
	v.Spec.SecurityContext = &corev1.PodSecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Sysctls:        []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}},
	}
	v.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
	if _, err := HostPod(v, opts, nil); err != nil {
		t.Fatalf("a pod baseline allows was refused: %v", err)
	}
}

func TestHostPodAtRestrictedLevel(t *testing.T) {
	o := opts
	o.PodSecurity = PodSecurityRestricted
	loose := makePod("p", "ns").Obj()
	_, err := HostPod(loose, o, nil)
	if err == nil || !strings.Contains(err.Error(), "runAsNonRoot") || !strings.Contains(err.Error(), `"restricted"`) {
		t.Fatalf("HostPod = %v; want a pod that may run as root refused at level restricted", err)
	}
	tight := makePod("p", "ns").Obj()
	no := false
	tight.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: new(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	tight.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	if _, err := HostPod(tight, o, nil); err != nil {
		t.Fatalf("a pod restricted allows was refused: %v", err)
	}
}

func TestHostPodRuntimeClassOnlyFromTheHostsList(t *testing.T) {
	v := makePod("p", "ns").Obj()
	v.Spec.RuntimeClassName = new("kata")
	_, err := HostPod(v, opts, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.runtimeClassName") || !strings.Contains(err.Error(), "allowed: none") {
		t.Fatalf("HostPod = %v; want runtime class kata refused, none allowed", err)
	}
	o := opts
	o.RuntimeClasses = []string{"gvisor"}
	if _, err := HostPod(v, o, nil); err == nil || !strings.Contains(err.Error(), "allowed: gvisor") {
		t.Fatalf("HostPod = %v; want runtime class kata refused, gvisor allowed", err)
	}
	o.RuntimeClasses = []string{"gvisor", "kata"}
	h, err := HostPod(v, o, nil)
	if err != nil || *h.Spec.RuntimeClassName != "kata" {
		t.Fatalf("HostPod = %v, %v; want runtime class kata kept", h, err)
	}
}

// Labels and annotations of Kubernetes' own domains steer host components
// (Pod Security, the kubelet, controllers): a tenant's never reach the host.
func TestHostPodDropsKubernetesDomains(t *testing.T) {
	v := makePod("p", "ns").Label("app.kubernetes.io/name", "web").Label("pod-security.kubernetes.io/enforce", "privileged").
		Label("kubernetes.io/metadata.name", "kube-system").Label("node.k8s.io/x", "1").Label("k8s.io/y", "2").
		Label("example.com/team", "a").Label("kubernetesXio/z", "kept").
		Annotation("controller.kubernetes.io/pod-deletion-cost", "-1000").Annotation("cluster-autoscaler.kubernetes.io/safe-to-evict", "false").
		Annotation("note", "kept").Obj()
	h, err := HostPod(v, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range h.Labels {
		if strings.Contains(k, "kubernetes.io") || strings.Contains(k, "k8s.io") {
			t.Errorf("host label %s carried", k)
		}
	}
	for k := range h.Annotations {
		if strings.Contains(k, "kubernetes.io") {
			t.Errorf("host annotation %s carried", k)
		}
	}
	if h.Labels["example.com/team"] != "a" || h.Labels["kubernetesXio/z"] != "kept" || h.Annotations["note"] != "kept" {
		t.Errorf("tenant's own keys lost: labels %v annotations %v", h.Labels, h.Annotations)
	}
}

// A tenant cannot pick its host queue or raise its priority: the host's
// admin gives both, per virtual cluster.
func TestHostPodQueueAndPriorityAreTheHosts(t *testing.T) {
	prio := int32(1_000_000)
	v := makePod("p", "ns").Label(berthv1.QueueNameLabel, "vip").Label(berthv1.KueueQueueNameLabel, "vip").
		Label(berthv1.PriorityClassLabel, "highest").Label(berthv1.KueuePriorityClassLabel, "highest").Obj()
	v.Spec.PriorityClassName, v.Spec.Priority = "system-cluster-critical", &prio
	for _, c := range []struct {
		name      string
		policy    Policy
		wantQueue string
		wantPrio  string
	}{
		{"no queue: not queued", Policy{}, "", ""},
		{"queue only", Policy{Queue: "tenants"}, "tenants", ""},
		{"queue and priority", Policy{Queue: "tenants", PriorityClass: "batch-low"}, "tenants", "batch-low"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := opts
			o.Policy = c.policy
			h, err := HostPod(v, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h.Labels[berthv1.QueueNameLabel] != c.wantQueue || h.Labels[berthv1.KueueQueueNameLabel] != "" {
				t.Errorf("queue labels %v, want queue %q only", h.Labels, c.wantQueue)
			}
			if h.Labels[berthv1.PriorityClassLabel] != c.wantPrio || h.Labels[berthv1.KueuePriorityClassLabel] != "" {
				t.Errorf("priority labels %v, want class %q only", h.Labels, c.wantPrio)
			}
			if h.Spec.PriorityClassName != "" || h.Spec.Priority != nil {
				t.Errorf("host pod priority %q %v: the tenant's class reached the host", h.Spec.PriorityClassName, h.Spec.Priority)
			}
		})
	}
}

func TestPolicyValidateAndArgs(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{}, ""},
		{Policy{Queue: "q", PriorityClass: "low", PodSecurity: "restricted", RuntimeClasses: []string{"a", "b"}}, ""},
		{Policy{PodSecurity: "privileged"}, "--pod-security"},
		{Policy{PriorityClass: "low"}, "--queue"},
		{Policy{AllowHostAccess: true, PodSecurity: "baseline"}, "--allow-host-access"},
	} {
		err := c.p.Validate()
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Validate() = %v, want %q", c.p, err, c.want)
		}
	}
	p := Policy{Queue: "q", PriorityClass: "low", PodSecurity: "restricted", RuntimeClasses: []string{"a", "b"}}
	want := "--queue=q --priority-class=low --pod-security=restricted --runtime-class=a,b"
	if got := strings.Join(p.Args(), " "); got != want {
		t.Errorf("Args() = %s, want %s", got, want)
	}
	if got := NamespaceLabels(Policy{AllowHostAccess: true})["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("host access: enforce %q, want privileged", got)
	}
	if got := NamespaceLabels(Policy{})["pod-security.kubernetes.io/enforce"]; got != "baseline" {
		t.Errorf("default: enforce %q, want baseline", got)
	}
}

func TestHostNamespaceIsTheVirtualClustersAlone(t *testing.T) {
	for _, ns := range []string{"default", "kube-system", "kube-public", "berth-system"} {
		if err := ValidateHostNamespace(ns); err == nil {
			t.Errorf("host namespace %s accepted", ns)
		}
	}
	if err := ValidateHostNamespace("vcluster-a"); err != nil {
		t.Error(err)
	}
	if why := HostNamespaceInUse("t", "a", []string{"a"}, []string{"a", "a"}); why != "" {
		t.Errorf("its own objects: %s", why)
	}
	if why := HostNamespaceInUse("t", "a", []string{"a", "b"}, nil); !strings.Contains(why, "virtual cluster b runs there") {
		t.Errorf("shared with b: %q", why)
	}
	if why := HostNamespaceInUse("t", "a", nil, []string{"a", "", "b"}); !strings.Contains(why, "2 Secrets") {
		t.Errorf("foreign secrets: %q", why)
	}
}

func TestRefusedSaysWhyOnceAndIsNotAHostPod(t *testing.T) {
	v := makePod("p", "ns").Obj()
	status, changed := Refused(v.Status, "spec.runtimeClassName: Forbidden")
	if !changed || len(status.Conditions) != 1 || status.Conditions[0].Reason != RefusedReason {
		t.Fatalf("Refused = %+v, %v", status, changed)
	}
	v.Status = status
	if _, changed := Refused(v.Status, "spec.runtimeClassName: Forbidden"); changed {
		t.Error("the same refusal written twice")
	}
	if HadHostPod(v) {
		t.Error("a refused pod counts as having had a host pod: the syncer would delete it")
	}
	v.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if !HadHostPod(v) {
		t.Error("a scheduled pod does not count as having had a host pod")
	}
}
