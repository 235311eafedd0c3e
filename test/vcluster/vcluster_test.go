package vcluster

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/vcluster/translate"
	. "github.com/berth-dev/berth/test/fixtures"
)

// hostPod is the host Pod of a tenant's Pod, nil while there is none.
func (tn *tenant) hostPod(t *testing.T, env *testenv.Env, name string) *corev1.Pod {
	t.Helper()
	p, err := env.Kube.CoreV1().Pods(tn.spec.hostNS).Get(ctx, translate.HostName(name, tn.ns, tn.spec.name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (tn *tenant) create(t *testing.T, p *corev1.Pod) {
	t.Helper()
	p.Namespace = tn.ns
	if _, err := tn.kube.CoreV1().Pods(tn.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s in virtual cluster %s: %v", p.Name, tn.spec.name, err)
	}
}

// running waits until the tenant's Pod runs, and returns it.
func (tn *tenant) running(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	testenv.Eventually(t, wait, func() error {
		p, err := tn.kube.CoreV1().Pods(tn.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("virtual pod %s is %s on %q", name, p.Status.Phase, p.Spec.NodeName)
		}
		got = p
		return nil
	})
	return got
}

func (tn *tenant) gone(t *testing.T, name string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		_, err := tn.kube.CoreV1().Pods(tn.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("virtual pod %s still there (%v)", name, err)
	})
}

// syncErrors are the syncer's warnings about the tenant's objects.
func (tn *tenant) syncErrors(t *testing.T) []string {
	t.Helper()
	evs, err := tn.kube.CoreV1().Events(tn.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=SyncError"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.InvolvedObject.Name+": "+e.Message)
	}
	return out
}

func TestDeploymentAndJobRunOnHostNodes(t *testing.T) {
	env := testenv.New(t)
	node := env.CreateSimNode(t, env.Name("n1"), map[string]string{"zone": "z1"})
	tn := inVirtual(t, va, env.Namespace)
	replicas := int32(2)
	tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}, Tolerations: []corev1.Toleration{env.Toleration()}}}
	_, err := tn.kube.AppsV1().Deployments(tn.ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels}, Template: tpl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: tpl.Labels,
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := tn.kube.CoreV1().Services(tn.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := MakeJob("batch", tn.ns).Parallelism(2).PodAnnotation("berth.dev/sim-duration", "1s").Toleration(env.Toleration()).Obj()
	if _, err := tn.kube.BatchV1().Jobs(tn.ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	testenv.Eventually(t, wait, func() error {
		pods, err := tn.kube.CoreV1().Pods(tn.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == node.Name && p.Status.PodIP != "" {
				running++
			}
		}
		if running != 2 {
			return fmt.Errorf("%d of the Deployment's virtual pods run on %s with an IP, want 2", running, node.Name)
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		j, err := tn.kube.BatchV1().Jobs(tn.ns).Get(ctx, "batch", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("virtual Job not complete: %d succeeded", j.Status.Succeeded)
	})
	// The host node shows inside with its room, but none of its labels
	// (va's tenants may select nodes by none), addresses or versions.
	vn, err := tn.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("virtual node for host node %s: %v", node.Name, err)
	}
	if _, ok := vn.Labels["zone"]; ok || !vn.Status.Allocatable.Cpu().Equal(*node.Status.Allocatable.Cpu()) ||
		len(vn.Status.Addresses) > 0 || vn.Status.NodeInfo.KubeletVersion != "" {
		t.Errorf("virtual node %s: labels %v allocatable %v addresses %v node info %+v; want the host node's room alone",
			vn.Name, vn.Labels, vn.Status.Allocatable, vn.Status.Addresses, vn.Status.NodeInfo)
	}
	// The host Service selects the host Pods of this virtual namespace: the
	// host's endpoint controller finds both.
	hostSvc := translate.HostName("web", tn.ns, va)
	testenv.Eventually(t, wait, func() error {
		slices, err := env.Kube.DiscoveryV1().EndpointSlices(nsA).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + hostSvc})
		if err != nil {
			return err
		}
		n := 0
		for _, s := range slices.Items {
			n += len(s.Endpoints)
		}
		if n != 2 {
			return fmt.Errorf("host service %s has %d endpoints, want the 2 web pods", hostSvc, n)
		}
		return nil
	})
	// The host's events about a Pod show inside, about the virtual Pod.
	testenv.Eventually(t, wait, func() error {
		evs, err := tn.kube.CoreV1().Events(tn.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if p, err := tn.kube.CoreV1().Pods(tn.ns).Get(ctx, e.InvolvedObject.Name, metav1.GetOptions{}); err == nil && p.UID == e.InvolvedObject.UID {
				return nil
			}
		}
		return fmt.Errorf("no Scheduled event about a virtual pod among %d", len(evs.Items))
	})
	if errs := tn.syncErrors(t); len(errs) > 0 {
		t.Errorf("sync errors: %v", errs)
	}
}

// Lesson 4: a host LimitRange makes the host Pod Guaranteed while the
// virtual Pod stays BestEffort. The syncer must not copy qosClass (which
// the virtual API server refuses to change), so the virtual Pod runs.
func TestVirtualPodKeepsItsOwnQoSClass(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	tn := inVirtual(t, va, env.Namespace)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace, Namespace: nsA},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}
	if _, err := env.Kube.CoreV1().LimitRanges(nsA).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Kube.CoreV1().LimitRanges(nsA).Delete(ctx, lr.Name, metav1.DeleteOptions{}) })

	tn.create(t, MakePod("qos", "").Toleration(env.Toleration()).Obj())
	v := tn.running(t, "qos")
	if v.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("virtual pod's QoS class %s, want BestEffort", v.Status.QOSClass)
	}
	if h := tn.hostPod(t, env, "qos"); h == nil || h.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Fatalf("host pod %+v: want it Guaranteed by the LimitRange, or the test shows nothing", h)
	}
	if errs := tn.syncErrors(t); len(errs) > 0 {
		t.Errorf("sync errors: %v", errs)
	}
	// Nothing changes on the host any more, so nothing is written.
	testenv.Consistently(t, 2*time.Second, func() error {
		now, err := tn.kube.CoreV1().Pods(tn.ns).Get(ctx, "qos", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if now.ResourceVersion != v.ResourceVersion {
			return fmt.Errorf("the virtual pod was written again (resourceVersion %s -> %s) with no change on the host", v.ResourceVersion, now.ResourceVersion)
		}
		return nil
	})
}

func TestDeletingOnEitherSideDeletesOnTheOther(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	tn := inVirtual(t, va, env.Namespace)
	for _, n := range []string{"a", "b"} {
		tn.create(t, MakePod(n, "").Toleration(env.Toleration()).Obj())
		tn.running(t, n)
	}
	if err := tn.kube.CoreV1().Pods(tn.ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		if h := tn.hostPod(t, env, "a"); h != nil {
			return fmt.Errorf("host pod %s still there", h.Name)
		}
		return nil
	})
	tn.gone(t, "a")

	if err := env.Kube.CoreV1().Pods(nsA).Delete(ctx, translate.HostName("b", tn.ns, va), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tn.gone(t, "b")
	if h := tn.hostPod(t, env, "b"); h != nil {
		t.Errorf("host pod %s came back after the virtual pod went", h.Name)
	}
}

// Tenants choose every name, label and annotation; none gets the syncer to
// write anything outside its host namespace, or to touch another's objects.
func TestTenantsCannotReachBeyondTheirNamespace(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	tn := inVirtual(t, va, env.Namespace)

	// Labels and annotations that mimic berth's own are not carried.
	tn.create(t, MakePod("mimic", "").Toleration(env.Toleration()).
		Label(translate.Label, vb).Label(berthv1.PrebuiltWorkloadLabel, "someone-elses").
		Label(berthv1.MultiClusterOriginLabel, "manager").
		Annotation(translate.UIDAnnotation, "victim").Annotation(translate.NamespaceAnnotation, "kube-system").Obj())
	tn.running(t, "mimic")
	h := tn.hostPod(t, env, "mimic")
	if h.Labels[translate.Label] != va || h.Labels[berthv1.PrebuiltWorkloadLabel] != "" || h.Labels[berthv1.MultiClusterOriginLabel] != "" ||
		h.Annotations[translate.NamespaceAnnotation] != tn.ns || h.Annotations[translate.UIDAnnotation] == "victim" {
		t.Errorf("host pod carries what the tenant forged: labels %v annotations %v", h.Labels, h.Annotations)
	}
	if ref := metav1.GetControllerOf(h); ref == nil || ref.Kind != "ServiceAccount" || ref.Name != "berth-vcluster-"+va {
		t.Errorf("host pod's controller %+v: want the syncer's ServiceAccount, so no host controller adopts it", ref)
	}

	// Names built so that naive joining would make two Pods one host Pod.
	other := inVirtual(t, va, "b-x-"+tn.ns)
	tn.create(t, MakePod("a-x-b", "").Toleration(env.Toleration()).Obj())
	other.create(t, MakePod("a", "").Toleration(env.Toleration()).Obj())
	long := strings.Repeat("l", 60)
	tn.create(t, MakePod(long+"1", "").Toleration(env.Toleration()).Obj())
	tn.create(t, MakePod(long+"2", "").Toleration(env.Toleration()).Obj())
	uids := map[string]string{}
	for _, p := range []struct {
		tn   *tenant
		name string
	}{{tn, "a-x-b"}, {other, "a"}, {tn, long + "1"}, {tn, long + "2"}} {
		v := p.tn.running(t, p.name)
		h := p.tn.hostPod(t, env, p.name)
		if h == nil || h.Annotations[translate.UIDAnnotation] != string(v.UID) {
			t.Fatalf("host pod of %s/%s is not its own: %v", p.tn.ns, p.name, h)
		}
		if prev, dup := uids[h.Name]; dup {
			t.Fatalf("%s and %s/%s share host pod %s", prev, p.tn.ns, p.name, h.Name)
		}
		uids[h.Name] = p.tn.ns + "/" + p.name
	}

	// A Pod placed by hand is refused, not deleted.
	tn.create(t, MakePod("placed", "").Node(env.Name("n1")).Obj())
	// Host access is refused, and said so, naming the field.
	tn.create(t, MakePod("root", "").Toleration(env.Toleration()).Volume(corev1.Volume{Name: "root",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}).Obj())
	// A token Secret would be filled, on the host, with the token of the
	// host account its annotation names: the syncer's own, say.
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "steal", Annotations: map[string]string{
		corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken}
	if _, err := tn.kube.CoreV1().Secrets(tn.ns).Create(ctx, token, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tn.create(t, MakePod("thief", "").Toleration(env.Toleration()).Volume(corev1.Volume{Name: "t",
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "steal"}}}).Obj())
	testenv.Eventually(t, wait, func() error {
		errs := strings.Join(tn.syncErrors(t), "\n")
		if !strings.Contains(errs, "spec.volumes[0].hostPath") || !strings.Contains(errs, "secret "+tn.ns+"/steal") ||
			!strings.Contains(errs, "placed: pod "+tn.ns+"/placed: spec.nodeName") {
			return fmt.Errorf("sync errors %q: want the placed pod, the hostPath pod and the token secret refused", errs)
		}
		return nil
	})
	if h := tn.hostPod(t, env, "root"); h != nil {
		t.Errorf("host pod %s made with a hostPath volume", h.Name)
	}
	if _, err := tn.kube.CoreV1().Pods(tn.ns).Get(ctx, "placed", metav1.GetOptions{}); err != nil {
		t.Errorf("the pod placed by hand: %v; want it kept, and refused", err)
	}
	_, err := env.Kube.CoreV1().Secrets(nsA).Get(ctx, translate.HostName("steal", tn.ns, va), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("token secret synced to the host: %v", err)
	}

	// The syncer's own credentials reach its namespace alone.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(running[va].hostKC)
	if err != nil {
		t.Fatal(err)
	}
	syncer := kubernetes.NewForConfigOrDie(cfg)
	_, err = syncer.CoreV1().Pods(env.Namespace).Create(ctx, MakePod("escape", env.Namespace).Obj(), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the syncer's host account created a pod outside its namespace: %v", err)
	}
	if _, err := syncer.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the syncer's host account cannot list nodes: %v", err)
	}
	_, err = syncer.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.Name("fake")}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("the syncer's host account created a node: %v", err)
	}
}

func TestSameNamesInTwoVirtualClustersDoNotCollide(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	a, b := inVirtual(t, va, env.Namespace), inVirtual(t, vb, env.Namespace)
	a.create(t, MakePod("web", "").Toleration(env.Toleration()).Label("app", "a").Obj())
	b.create(t, MakePod("web", "").Toleration(env.Toleration()).Label("app", "b").Obj())
	pa, pb := a.running(t, "web"), b.running(t, "web")
	ha, hb := a.hostPod(t, env, "web"), b.hostPod(t, env, "web")
	if ha.Name == hb.Name || ha.Labels["app"] != "a" || hb.Labels["app"] != "b" {
		t.Fatalf("host pods %s (app=%s) and %s (app=%s): want one each", ha.Name, ha.Labels["app"], hb.Name, hb.Labels["app"])
	}
	if pa.Status.PodIP != ha.Status.PodIP || pb.Status.PodIP != hb.Status.PodIP || pa.Status.PodIP == pb.Status.PodIP {
		t.Errorf("pod IPs: virtual %s/%s, host %s/%s: each virtual pod should show its own host pod's",
			pa.Status.PodIP, pb.Status.PodIP, ha.Status.PodIP, hb.Status.PodIP)
	}
}

// queuedTenant is a test's namespace in virtual cluster vq, whose Pods the
// host queues in LocalQueue tenants of a ClusterQueue of cpu (changed by
// change, if not nil), at WorkloadPriorityClass tenants-low (5); with one
// simulated node.
func queuedTenant(t *testing.T, cpu string, change func(*berthv1.ClusterQueue)) (*testenv.Env, *tenant) {
	t.Helper()
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	tn := inVirtual(t, vq, env.Namespace)
	flavor, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(flavor).Obj())
	q := MakeClusterQueue(cq).NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": queuedNS}}).
		ResourceGroup(MakeFlavorQuotas(flavor).Resource("cpu", cpu).Obj()).Obj()
	if change != nil {
		change(q)
	}
	env.Create(t, q)
	lq := MakeLocalQueue(tenantsQueue, queuedNS, cq).Obj()
	env.Create(t, lq)
	t.Cleanup(func() { _ = env.Client.Delete(ctx, lq) })
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: tenantsPriority}, Value: 5})
	return env, tn
}

// A tenant's Job of 4 Pods is one pod group on the host: admitted whole
// against the host's quota, or not at all.
func TestTenantJobIsAdmittedWholeAgainstHostQuota(t *testing.T) {
	env, tn := queuedTenant(t, "5", nil)

	// The virtual cluster queues every Pod in "tenants", at its priority,
	// whatever the tenant asks for.
	for _, name := range []string{"first", "second"} {
		j := MakeJob(name, tn.ns).Parallelism(4).Request("cpu", "1").Toleration(env.Toleration()).
			PodAnnotation("berth.dev/sim-duration", "3s").Obj()
		j.Spec.Template.Labels = map[string]string{berthv1.QueueNameLabel: "vip", berthv1.PriorityClassLabel: "highest"}
		if _, err := tn.kube.BatchV1().Jobs(tn.ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Sampled until both are done: never more than one Job's Pods run at
	// once (5 cpu would let a fifth 1-cpu Pod through if a group could be
	// admitted in part), and at some point one runs while the other waits.
	sawOneWait := false
	testenv.Eventually(t, 2*wait, func() error {
		pods, err := env.Kube.CoreV1().Pods(queuedNS).List(ctx, metav1.ListOptions{LabelSelector: translate.NamespaceLabel + "=" + tn.ns})
		if err != nil {
			return err
		}
		running, gated := map[string]int{}, map[string]int{}
		for _, p := range pods.Items {
			g := p.Labels[berthv1.PodGroupNameLabel]
			if p.Status.Phase == corev1.PodRunning {
				running[g]++
			}
			if len(p.Spec.SchedulingGates) > 0 {
				gated[g]++
			}
		}
		total := 0
		for _, n := range running {
			total += n
		}
		if total > 4 {
			t.Fatalf("%d host pods run at once (%v): more than one 4-pod Job fits in 5 cpu", total, running)
		}
		for g, n := range running {
			for other, m := range gated {
				if other != g && m == 4 && n > 0 {
					sawOneWait = true
				}
			}
		}
		done := 0
		for _, name := range []string{"first", "second"} {
			j, err := tn.kube.BatchV1().Jobs(tn.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if j.Status.Succeeded == 4 {
				done++
			}
		}
		if done < 2 {
			return fmt.Errorf("%d of 2 virtual Jobs done; host pods running %v, gated %v", done, running, gated)
		}
		return nil
	})
	if !sawOneWait {
		t.Error("never saw one Job run while the other's 4 pods waited")
	}
	var wls berthv1.WorkloadList
	if err := env.Client.List(ctx, &wls, client.InNamespace(queuedNS)); err != nil {
		t.Fatal(err)
	}
	whole := 0
	for _, w := range wls.Items {
		n := int32(0)
		for _, ps := range w.Spec.PodSets {
			n += ps.Count
		}
		if n == 4 && w.Spec.QueueName == tenantsQueue {
			whole++
		}
		if w.Spec.PriorityClassName != tenantsPriority || w.Spec.Priority == nil || *w.Spec.Priority != 5 {
			t.Errorf("host Workload %s: priority class %q (%v), want the virtual cluster's %s (5)", w.Name, w.Spec.PriorityClassName, w.Spec.Priority, tenantsPriority)
		}
	}
	if whole != 2 {
		t.Errorf("%d host Workloads of 4 pods in queue %s, want one per virtual Job", whole, tenantsQueue)
	}
}

// Deleting a virtual cluster leaves nothing of it on the host.
func TestDeleteLeavesNothingOnTheHost(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	v, err := startVirtual(vspec{name: "vd", hostNS: env.Name("vd"), policy: translate.Policy{Placement: testNodes}}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = v.inst.Stop()
		}
	})
	if !v.createdN {
		t.Fatalf("host namespace %s existed already", v.spec.hostNS)
	}
	running[v.spec.name] = v
	t.Cleanup(func() { delete(running, v.spec.name) })
	tn := inVirtual(t, "vd", "app")
	if _, err := tn.kube.CoreV1().ConfigMaps(tn.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "conf"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.kube.CoreV1().Services(tn.ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tn.create(t, MakePod("web", "").Label("app", "web").Toleration(env.Toleration()).Volume(corev1.Volume{Name: "conf",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}).Obj())
	tn.running(t, "web")
	testenv.Eventually(t, wait, func() error {
		left, err := v.host.Left(ctx, false)
		if err != nil {
			return err
		}
		for _, kind := range []string{"1 pods,", "1 configmaps,", " 1 services,", "2 serviceaccounts,", "1 networkpolicies,"} {
			if !strings.Contains(left, kind) {
				return fmt.Errorf("host has %q of virtual cluster vd, want %s among them", left, kind)
			}
		}
		return nil
	})

	stopped = true
	if err := v.inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := v.host.Clean(ctx, true, io.Discard); err != nil {
		t.Fatal(err)
	}
	if left, err := v.host.Left(ctx, true); err != nil || left != "" {
		t.Fatalf("after deleting virtual cluster vd the host still has %q (%v)", left, err)
	}
}

// What may change in a running Pod (labels, images) reaches its host Pod;
// what the host added (berth's labels, its finalizer) stays.
func TestRunningPodChangesReachTheHost(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	tn := inVirtual(t, va, env.Namespace)
	tn.create(t, MakePod("web", "").Label("app", "web").Toleration(env.Toleration()).Obj())
	v := tn.running(t, "web")
	v.Labels["tier"] = "front"
	v.Spec.Containers[0].Image = "busybox:2"
	if _, err := tn.kube.CoreV1().Pods(tn.ns).Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		h := tn.hostPod(t, env, "web")
		if h == nil || h.Labels["tier"] != "front" || h.Labels["app"] != "web" || h.Spec.Containers[0].Image != "busybox:2" {
			return fmt.Errorf("host pod %v: want the new label and image", h)
		}
		if h.Labels[translate.Label] != va {
			return fmt.Errorf("host pod lost the syncer's label: %v", h.Labels)
		}
		return nil
	})
}

// A tenant's Job preempted on the host comes back whole: its Pods are marked
// DisruptionTarget, the syncer suspends the virtual Job before they go (so
// none counts as failed, though its backoffLimit is 0), and resumes it once
// they are gone; it queues again and completes.
func TestPreemptedTenantJobComesBackWhole(t *testing.T) {
	env, tn := queuedTenant(t, "2", func(q *berthv1.ClusterQueue) {
		q.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: berthv1.PreemptionLowerPriority}
	})
	urgent := env.Name("urgent")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: urgent}, Value: 100})

	j := MakeJob("train", tn.ns).Parallelism(2).Completions(2).BackoffLimit(0).Request("cpu", "1").
		Toleration(env.Toleration()).PodAnnotation("berth.dev/sim-duration", "8s").Obj()
	if _, err := tn.kube.BatchV1().Jobs(tn.ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := func() (int, error) {
		pods, err := env.Kube.CoreV1().Pods(queuedNS).List(ctx, metav1.ListOptions{LabelSelector: translate.NamespaceLabel + "=" + tn.ns})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n, nil
	}
	testenv.Eventually(t, wait, func() error {
		if n, err := running(); err != nil || n != 2 {
			return fmt.Errorf("%d of the tenant Job's 2 host pods run (%v)", n, err)
		}
		return nil
	})

	// A host Pod of higher priority needs the whole quota.
	preemptor := MakePod(env.Name("urgent"), queuedNS).Label(berthv1.QueueNameLabel, tenantsQueue).
		Label(berthv1.PriorityClassLabel, urgent).Toleration(env.Toleration()).Annotation("berth.dev/sim-duration", "2s").Obj()
	preemptor.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	env.Create(t, preemptor)

	testenv.Eventually(t, 3*wait, func() error {
		vj, err := tn.kube.BatchV1().Jobs(tn.ns).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range vj.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				t.Fatalf("the preempted tenant Job failed: %s: %s", c.Reason, c.Message)
			}
		}
		if vj.Status.Succeeded != 2 {
			return fmt.Errorf("tenant Job: %d of 2 succeeded, %d failed, suspended %v", vj.Status.Succeeded, vj.Status.Failed,
				vj.Spec.Suspend != nil && *vj.Spec.Suspend)
		}
		if vj.Status.Failed != 0 {
			t.Errorf("the preempted tenant Job counts %d failed pods", vj.Status.Failed)
		}
		return nil
	})
	evs, err := tn.kube.CoreV1().Events(tn.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=EvictedByHost"})
	if err != nil || len(evs.Items) == 0 {
		t.Errorf("no EvictedByHost event on the tenant Job (%v): was it preempted at all?", err)
	}
}
