package vcluster

import (
	"fmt"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/vcluster/syncer"
	"github.com/berth-dev/berth/internal/vcluster/translate"
	. "github.com/berth-dev/berth/test/fixtures"
)

// runtimeClass makes runtime class name in the tenant's virtual cluster, as
// its admin may: the virtual API server admits only Pods whose class exists.
func (tn *tenant) runtimeClass(t *testing.T, name string) {
	t.Helper()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: name}
	if _, err := tn.kube.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// refused waits until the tenant's Pod says, in its PodScheduled condition
// and in a SyncError event, that the host refused it for want, and checks
// it has no host Pod.
func (tn *tenant) refused(t *testing.T, env *testenv.Env, name, want string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		p, err := tn.kube.CoreV1().Pods(tn.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var cond *corev1.PodCondition
		for i, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				cond = &p.Status.Conditions[i]
			}
		}
		if cond == nil || cond.Reason != translate.RefusedReason || !strings.Contains(cond.Message, want) {
			return fmt.Errorf("virtual pod %s: condition %+v, want %s refused", name, cond, want)
		}
		for _, e := range tn.syncErrors(t) {
			if strings.HasPrefix(e, name+": ") && strings.Contains(e, want) {
				return nil
			}
		}
		return fmt.Errorf("no SyncError event on %s naming %s: %q", name, want, tn.syncErrors(t))
	})
	if h := tn.hostPod(t, env, name); h != nil {
		t.Errorf("host pod %s made for refused pod %s", h.Name, name)
	}
}

// Tried as a tenant would: what Pod Security's baseline level forbids is
// refused on the tenant's side, and the host namespace enforces it too.
func TestTenantCannotEscapeToTheHost(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	tn := inVirtual(t, va, env.Namespace)

	sysAdmin := corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
	tn.create(t, MakePod("sysadmin", "").Toleration(env.Toleration()).ContainerSecurity(sysAdmin).Obj())
	tn.create(t, MakePod("unconfined", "").Toleration(env.Toleration()).
		PodSecurity(corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}).Obj())
	tn.runtimeClass(t, "kata")
	tn.create(t, MakePod("sandbox", "").Toleration(env.Toleration()).RuntimeClass("kata").Obj())
	// What a tenant writes to steer the host: Kubernetes' own keys, a queue
	// and a priority of its choosing.
	tn.create(t, MakePod("steer", "").Toleration(env.Toleration()).
		Label("pod-security.kubernetes.io/enforce", "privileged").Label("app.kubernetes.io/name", "web").
		Label(berthv1.QueueNameLabel, "vip").Label(berthv1.PriorityClassLabel, "highest").
		Annotation("controller.kubernetes.io/pod-deletion-cost", "-1000").Label("team", "a").Obj())

	tn.refused(t, env, "sysadmin", `"SYS_ADMIN" in securityContext.capabilities.add`)
	tn.refused(t, env, "unconfined", "seccompProfile")
	tn.refused(t, env, "sandbox", "spec.runtimeClassName")

	tn.running(t, "steer")
	h := tn.hostPod(t, env, "steer")
	for k := range h.Labels {
		if strings.Contains(k, "kubernetes.io") || k == berthv1.QueueNameLabel || k == berthv1.PriorityClassLabel {
			t.Errorf("host pod carries the tenant's label %s=%s", k, h.Labels[k])
		}
	}
	if _, ok := h.Annotations["controller.kubernetes.io/pod-deletion-cost"]; ok || h.Labels["team"] != "a" {
		t.Errorf("host pod labels %v annotations %v: want the tenant's own label only", h.Labels, h.Annotations)
	}
	if len(h.Spec.SchedulingGates) > 0 || h.Finalizers != nil {
		t.Errorf("host pod of a virtual cluster without --queue was queued: gates %v finalizers %v", h.Spec.SchedulingGates, h.Finalizers)
	}

	// The host's API server enforces the same level in the host namespace,
	// whoever creates the Pod.
	ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, nsA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "baseline" {
		t.Errorf("host namespace %s labels %v: want Pod Security baseline enforced", nsA, ns.Labels)
	}
	direct := MakePod(env.Name("direct"), nsA).ContainerSecurity(sysAdmin).Obj()
	_, err = env.Kube.CoreV1().Pods(nsA).Create(ctx, direct, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "baseline") {
		t.Errorf("the host API server took a SYS_ADMIN pod in %s: %v", nsA, err)
	}
}

// A virtual cluster at level restricted refuses a Pod that may run as root;
// one that meets restricted, with the runtime class the host allowed, runs.
func TestRestrictedVirtualCluster(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	env.Create(t, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: allowedRuntime}, Handler: "runc"})
	tn := inVirtual(t, vr, env.Namespace)

	tn.runtimeClass(t, allowedRuntime)
	tn.create(t, MakePod("root", "").Toleration(env.Toleration()).Obj())
	no := false
	tn.create(t, MakePod("tight", "").Toleration(env.Toleration()).RuntimeClass(allowedRuntime).
		PodSecurity(corev1.PodSecurityContext{RunAsNonRoot: new(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}).
		ContainerSecurity(corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}).Obj())
	tn.refused(t, env, "root", "runAsNonRoot")
	tn.running(t, "tight")
	if h := tn.hostPod(t, env, "tight"); h == nil || h.Spec.RuntimeClassName == nil || *h.Spec.RuntimeClassName != allowedRuntime {
		t.Errorf("host pod %v: want runtime class %s", h, allowedRuntime)
	}
	ns, err := env.Kube.CoreV1().Namespaces().Get(ctx, restrictedNS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("host namespace %s labels %v: want Pod Security restricted enforced", restrictedNS, ns.Labels)
	}
}

// Each syncer reaches its own host namespace's Secrets alone: not another
// tenant's, not berth's; and a host namespace is one virtual cluster's.
func TestSyncerReadsNoOneElsesSecrets(t *testing.T) {
	env := testenv.New(t)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(running[va].hostKC)
	if err != nil {
		t.Fatal(err)
	}
	asSyncer := kubernetes.NewForConfigOrDie(cfg)
	if _, err := asSyncer.CoreV1().Secrets(nsA).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the syncer of %s cannot list the Secrets of its own host namespace: %v", va, err)
	}
	for _, ns := range []string{nsB, translate.BerthNamespace, "kube-system"} {
		if _, err := asSyncer.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the syncer of %s listed the Secrets of %s: %v", va, ns, err)
		}
		if _, err := asSyncer.CoreV1().Secrets(ns).Get(ctx, "any", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the syncer of %s read a Secret in %s: %v", va, ns, err)
		}
	}

	admin, err := clientcmd.BuildConfigFromFlags("", testenv.Instance().Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	busy := env.Name("busy")
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: busy}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().Namespaces().Delete(ctx, busy, metav1.DeleteOptions{}) })
	if _, err := env.Kube.CoreV1().Secrets(busy).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]string{
		nsA:                      "virtual cluster va runs there",
		busy:                     "1 Secrets",
		translate.BerthNamespace: "may not be default",
		"kube-system":            "may not be default",
		"default":                "may not be default",
		env.Name("fresh-vx-ns"):  "",
	} {
		h := syncer.Host{Admin: admin, VCluster: "vx", Namespace: ns}
		_, created, err := h.Prepare(ctx)
		if want == "" {
			if err != nil || !created {
				t.Errorf("a new host namespace %s for vx: created %v, %v", ns, created, err)
			}
			if err := h.Clean(ctx, created, io.Discard); err != nil {
				t.Error(err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("virtual cluster vx in host namespace %s: %v, want refused: %s", ns, err, want)
		}
		if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, syncer.ServiceAccountName("vx"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("refused in %s, yet its syncer account is there: %v", ns, err)
		}
	}
}

// Tried as a tenant would: nothing of the host's nodes is theirs to pick
// beyond what the host's admin allowed (here, the test's own taint). A
// node selector on a host node's name, a toleration of a taint kept for
// others, another scheduler, and affinity to the Pods of other namespaces
// are refused on the tenant's side, naming the field; no host Pod is made.
func TestTenantCannotPickHostNodes(t *testing.T) {
	env := testenv.New(t)
	node := env.Name("n1")
	env.CreateSimNode(t, node, nil)
	tn := inVirtual(t, va, env.Namespace)

	tn.create(t, MakePod("pinned", "").Toleration(env.Toleration()).NodeSelector(corev1.LabelHostname, node).Obj())
	tn.create(t, MakePod("squatter", "").Toleration(env.Toleration()).
		Toleration(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "team-b", Effect: corev1.TaintEffectNoSchedule}).Obj())
	tn.create(t, MakePod("own-scheduler", "").Toleration(env.Toleration()).SchedulerName("my-scheduler").Obj())
	neighbour := MakePod("neighbour", "").Toleration(env.Toleration()).Obj()
	neighbour.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: corev1.LabelHostname, NamespaceSelector: &metav1.LabelSelector{}, LabelSelector: &metav1.LabelSelector{}}}}}
	tn.create(t, neighbour)
	tn.create(t, MakePod("placed-by-the-host", "").Toleration(env.Toleration()).Obj())

	tn.refused(t, env, "pinned", "spec.nodeSelector[kubernetes.io/hostname]: Forbidden: the host places virtual cluster va's Pods by their queue")
	tn.refused(t, env, "squatter", "spec.tolerations[1]: Forbidden: taint dedicated: virtual cluster va's Pods may choose taints to tolerate "+testenv.SimNodeTaintKey+" only")
	tn.refused(t, env, "own-scheduler", "spec.schedulerName: Forbidden")
	tn.refused(t, env, "neighbour", "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: Forbidden: namespaces and namespaceSelector")
	tn.running(t, "placed-by-the-host")
}
