package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// plainPod is a pod of one container requesting cpu that runs for duration
// on the simulated nodes.
func plainPod(name, ns, cpu, duration string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
			Annotations: map[string]string{"berth.dev/sim-duration": duration}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu)}},
		}}},
	}
}

// runsOn says what is wrong, if anything, with the test's Pod name: it
// should be let go by berth and running on node.
func runsOn(env *testenv.Env, name, node string) error {
	p, err := getPod(env, name)
	if err != nil {
		return err
	}
	if pods.Gated(p) || p.Spec.NodeName != node || p.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s gated=%v on %q phase %s; want running on %s", name, pods.Gated(p), p.Spec.NodeName, p.Status.Phase, node)
	}
	return nil
}

func getPod(env *testenv.Env, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, &p)
	return &p, err
}

// podQueue makes a flavor for this test's simulated node (its label, and the
// toleration of its taint) and a queue of cpu quota on it, LocalQueue main.
func podQueue(t *testing.T, env *testenv.Env, cpu string) (flavor, cq string, node *corev1.Node) {
	t.Helper()
	pool := env.Name("pool")
	node = env.CreateSimNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	flavor, cq = env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(flavor).NodeLabel("example.com/pool", pool).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(flavor).Resource("cpu", cpu).Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	return flavor, cq, node
}

// A queued Pod goes the whole way: created gated, with berth's finalizer; a
// Workload made for it and admitted; ungated with its flavor's node selector
// and toleration; run on the flavor's node; finished when it succeeds, its
// quota released and its finalizer gone. A second Pod waits for the quota.
func TestPodRunsThroughTheQueue(t *testing.T) {
	env := testenv.New(t)
	rf, cq, node := podQueue(t, env, "1")
	first := plainPod("first", env.Namespace, "1", "2s", map[string]string{berthv1.QueueNameLabel: "main"})
	env.Create(t, first)
	if !pods.Gated(first) || !slices.Contains(first.Finalizers, berthv1.PodFinalizer) {
		t.Fatalf("created pod: gates %v, finalizers %v; want berth's gate and finalizer", first.Spec.SchedulingGates, first.Finalizers)
	}
	second := plainPod("second", env.Namespace, "1", "1s", map[string]string{berthv1.KueueQueueNameLabel: "main"})
	env.Create(t, second)

	wl := waitAdmitted(t, env, env.Namespace, pods.WorkloadName(first))
	if ps := wl.Spec.PodSets; len(ps) != 1 || ps[0].Count != 1 || ps[0].Requests.Cpu().String() != "1" {
		t.Errorf("workload pod sets %+v, want one pod of 1 cpu", ps)
	}
	testenv.Eventually(t, wait, func() error { return runsOn(env, first.Name, node.Name) })
	waitPending(t, env, env.Namespace, pods.WorkloadName(second), "needs 1 cpu in flavor "+rf)

	// It succeeds: finished, let go, and the second pod gets the quota.
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, pods.WorkloadName(first))
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("workload of the first pod not finished: %s", describe(wl))
		}
		p, err := getPod(env, first.Name)
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodSucceeded || len(p.Finalizers) != 0 {
			return fmt.Errorf("first pod phase %s finalizers %v; want Succeeded, none", p.Status.Phase, p.Finalizers)
		}
		return nil
	})
	waitAdmitted(t, env, env.Namespace, pods.WorkloadName(second))
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if total, _ := usageOf(q, rf, "cpu"); total != "1" || q.Status.AdmittedWorkloads != 1 {
			return fmt.Errorf("ClusterQueue: cpu usage %q, admitted %d; want the second pod's 1 cpu alone", total, q.Status.AdmittedWorkloads)
		}
		return nil
	})
}

// In a namespace labelled berth.dev/manage-pods=true, pods without a queue
// label are queued in its LocalQueue "default"; elsewhere they are left
// alone, and so are the pods of Jobs.
func TestPodsOfAnOptedInNamespace(t *testing.T) {
	env := testenv.New(t)
	_, _, _ = podQueue(t, env, "2")
	env.Create(t, MakeLocalQueue(pods.DefaultLocalQueue, env.Namespace, env.Name("cq")).Obj())
	free := plainPod("before-opt-in", env.Namespace, "1", "1s", nil)
	free.Spec.Tolerations = []corev1.Toleration{env.Toleration()}
	env.Create(t, free)
	if pods.Gated(free) {
		t.Fatal("an unlabelled pod was gated in a namespace that is not opted in")
	}
	var ns corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: env.Namespace}, &ns); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels[berthv1.ManagePodsLabel] = "true"
	if err := env.Client.Patch(ctx, &ns, patch); err != nil {
		t.Fatal(err)
	}
	// The API server's webhook configuration selects by namespace labels
	// at once, but give it the namespace's new labels first.
	var managed *corev1.Pod
	testenv.Eventually(t, wait, func() error {
		managed = plainPod(fmt.Sprintf("opted-in-%d", time.Now().UnixNano()), env.Namespace, "1", "1s", nil)
		if err := env.Client.Create(ctx, managed); err != nil {
			return err
		}
		if !pods.Gated(managed) {
			_ = env.Client.Delete(ctx, managed)
			return fmt.Errorf("pod %s not gated yet", managed.Name)
		}
		return nil
	})
	if q := managed.Labels[berthv1.QueueNameLabel]; q != pods.DefaultLocalQueue {
		t.Errorf("opted-in pod labelled for queue %q, want %q", q, pods.DefaultLocalQueue)
	}
	waitAdmitted(t, env, env.Namespace, pods.WorkloadName(managed))
	// The pod created before the opt-in stays as it was.
	p, err := getPod(env, free.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Finalizers) != 0 || pods.Gated(p) {
		t.Errorf("the earlier pod was taken over: finalizers %v gated %v", p.Finalizers, pods.Gated(p))
	}
}

// A namespace deleted with queued pods inside, some waiting (two of them in
// an incomplete group), one running, is emptied: nothing is left holding a finalizer.
func TestNamespaceWithQueuedPodsIsDeleted(t *testing.T) {
	env := testenv.New(t)
	_, cq, _ := podQueue(t, env, "1")
	for i := range 4 {
		env.Create(t, plainPod(fmt.Sprintf("p%d", i), env.Namespace, "1", "1h", map[string]string{berthv1.QueueNameLabel: "main"}))
	}
	// And two Pods of a group still waiting for its third.
	for i := range 2 {
		env.Create(t, groupPod(fmt.Sprintf("g%d", i), env.Namespace, "g", 3, "1", "1h"))
	}
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if q.Status.AdmittedWorkloads != 1 || q.Status.PendingWorkloads != 3 {
			return fmt.Errorf("admitted %d pending %d; want 1 and 3", q.Status.AdmittedWorkloads, q.Status.PendingWorkloads)
		}
		return nil
	})
	var ns corev1.Namespace
	ns.Name = env.Namespace
	if err := env.Client.Delete(ctx, &ns); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: env.Namespace}, &ns)
		if apierrors.IsNotFound(err) {
			return nil
		}
		var left corev1.PodList
		_ = env.Client.List(ctx, &left, client.InNamespace(env.Namespace))
		var held []string
		for _, p := range left.Items {
			if len(p.Finalizers) > 0 {
				held = append(held, p.Name)
			}
		}
		return fmt.Errorf("namespace still there (%v); pods with finalizers: %v", err, held)
	})
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		if q.Status.AdmittedWorkloads != 0 || q.Status.PendingWorkloads != 0 {
			return fmt.Errorf("after the namespace went: admitted %d pending %d", q.Status.AdmittedWorkloads, q.Status.PendingWorkloads)
		}
		return nil
	})
}

// A preempted Pod cannot be held back again: it is deleted, and the
// higher-priority Pod runs in its place.
func TestPreemptedPodIsDeleted(t *testing.T) {
	env := testenv.New(t)
	_, cqName, node := podQueue(t, env, "1")
	high := preemptLowerPriority(t, env, cqName)
	low := plainPod("low", env.Namespace, "1", "1h", map[string]string{berthv1.QueueNameLabel: "main"})
	env.Create(t, low)
	waitAdmitted(t, env, env.Namespace, pods.WorkloadName(low))
	urgent := plainPod("urgent", env.Namespace, "1", "1h", map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.PriorityClassLabel: high})
	env.Create(t, urgent)
	testenv.Eventually(t, wait, func() error {
		if p, err := getPod(env, low.Name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the preempted pod is still there (%v, phase %s)", err, p.Status.Phase)
		}
		return runsOn(env, urgent.Name, node.Name)
	})
}

// A Pod whose WorkloadPriorityClass appears after it waits at priority 0,
// then gets the class's priority.
func TestPodPriorityClassCreatedLater(t *testing.T) {
	env := testenv.New(t)
	_, _, _ = podQueue(t, env, "1")
	late := env.Name("late")
	p := plainPod("early", env.Namespace, "2", "1s", map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.KueuePriorityClassLabel: late})
	env.Create(t, p)
	wl := waitPending(t, env, env.Namespace, pods.WorkloadName(p), "needs 2 cpu")
	if wl.Spec.Priority != nil {
		t.Fatalf("priority %d before the class exists", *wl.Spec.Priority)
	}
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: late}, Value: 300})
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, pods.WorkloadName(p))
		if err != nil {
			return err
		}
		if wl.Spec.Priority == nil || *wl.Spec.Priority != 300 {
			return fmt.Errorf("workload priority %v, want 300", wl.Spec.Priority)
		}
		return nil
	})
}

// An evicted Pod keeps its quota until it has stopped: here its node has no
// kubelet, so it stops when its grace period is over. Until then the Pod
// that preempted it waits.
func TestEvictedPodHoldsItsQuotaUntilItStops(t *testing.T) {
	env := testenv.New(t)
	pool := env.Name("pool")
	node := env.CreateReadyNode(t, env.Name("node"), map[string]string{"example.com/pool": pool})
	rf, cqName := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("example.com/pool", pool).Obj())
	cq := MakeClusterQueue(cqName).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj()
	cq.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: berthv1.PreemptionLowerPriority}
	env.Create(t, cq)
	env.Create(t, MakeLocalQueue("main", env.Namespace, cqName).Obj())
	high := env.Name("high")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: high}, Value: 100})

	low := plainPod("low", env.Namespace, "1", "1h", map[string]string{berthv1.QueueNameLabel: "main"})
	grace := int64(4)
	low.Spec.TerminationGracePeriodSeconds = &grace
	env.Create(t, low)
	waitAdmitted(t, env, env.Namespace, pods.WorkloadName(low))
	testenv.Eventually(t, wait, func() error {
		p, err := getPod(env, low.Name)
		if err != nil {
			return err
		}
		if p.Spec.NodeName != node.Name {
			return fmt.Errorf("low pod not bound yet (gated %v)", pods.Gated(p))
		}
		return nil
	})
	urgent := plainPod("urgent", env.Namespace, "1", "1h", map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.PriorityClassLabel: high})
	env.Create(t, urgent)
	// The low pod is being deleted, and its quota still counts.
	testenv.Eventually(t, wait, func() error {
		p, err := getPod(env, low.Name)
		if err != nil {
			return err
		}
		if p.DeletionTimestamp == nil {
			return fmt.Errorf("the preempted pod is not being deleted")
		}
		return nil
	})
	testenv.Consistently(t, 2*time.Second, func() error {
		wl, err := getWorkload(env, env.Namespace, pods.WorkloadName(urgent))
		if err != nil {
			return err
		}
		if workload.HasQuota(wl) {
			return fmt.Errorf("the urgent pod was admitted while the preempted one still runs")
		}
		return nil
	})
	// Once its grace period is over it no longer counts.
	waitAdmitted(t, env, env.Namespace, pods.WorkloadName(urgent))
	wl, err := getWorkload(env, env.Namespace, pods.WorkloadName(low))
	if err == nil && !workload.IsFinished(wl) {
		t.Errorf("the preempted pod's workload is neither finished nor gone: %s", describe(wl))
	}
}
