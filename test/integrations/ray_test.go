package integrations

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
	"github.com/berth-dev/berth/test/standin"
)

// A RayCluster, queued by berth with KubeRay's own operator running (berth
// up --with ray): held until its head and workers fit, counted as KubeRay
// counts them (replicas kept within minReplicas), started on its flavor's
// nodes, where KubeRay makes its pods; its user cannot grow it or hide a
// pod from KubeRay while it runs, nor turn autoscaling on; its Workload
// deleted, it is suspended and KubeRay takes its pods away.
func TestKubeRaysRayClusterIsQueuedAndItsOperatorMakesThePods(t *testing.T) {
	env := testenv.New(t)
	rayEditors(t, env)
	// Installed by --with ray already: this waits for berth to turn it on.
	standin.InstallCRD(t, env, "../../config/addons/ray/crd/ray.io_rayclusters.yaml", "rayclusters.ray.io.berth.dev")

	pool, cq := poolQueue(t, env, "4", "8Gi")
	rc := readExample(t, "../../examples/configured/raycluster.yaml")
	rc.SetNamespace(env.Namespace)
	// KubeRay runs at least minReplicas: two workers, not one.
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	groups[0].(map[string]any)["replicas"] = int64(1)
	groups[0].(map[string]any)["minReplicas"] = int64(2)
	_ = unstructured.SetNestedSlice(rc.Object, groups, "spec", "workerGroupSpecs")

	autoscaled := rc.DeepCopy()
	autoscaled.SetName("autoscaled")
	_ = unstructured.SetNestedField(autoscaled.Object, true, "spec", "enableInTreeAutoscaling")
	if err := env.Client.Create(ctx, autoscaled); err == nil || !strings.Contains(err.Error(), "spec.enableInTreeAutoscaling: is set; berth does not follow it") {
		t.Fatalf("a queued RayCluster with autoscaling on was not refused: %v", err)
	}

	env.Create(t, rc)
	kind := rayKind(t, "RayCluster")
	if !kind.C.Suspended(rc) {
		t.Fatal("a queued RayCluster was not created suspended")
	}
	get := func() *unstructured.Unstructured { return current(t, env, rc) }
	pods := func() []corev1.Pod {
		t.Helper()
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace), client.MatchingLabels{"ray.io/cluster": rc.GetName()}); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, kind, rc)
		if err != nil {
			return err
		}
		ps := wl.Spec.PodSets
		if len(ps) != 2 || ps[0].Name != "head" || ps[0].Count != 1 || ps[1].Name != "workers" || ps[1].Count != 2 {
			return fmt.Errorf("pod sets %+v, want head 1 and workers 2", ps)
		}
		if !workload.IsAdmitted(wl) {
			return fmt.Errorf("not admitted")
		}
		if kind.C.Suspended(get()) {
			return fmt.Errorf("not started")
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		ps := pods()
		if len(ps) != 3 {
			return fmt.Errorf("KubeRay made %d pods, want 3", len(ps))
		}
		for _, p := range ps {
			if p.Spec.NodeSelector["pool"] != pool || p.Labels[berthv1.OwnerUIDLabel] != string(rc.GetUID()) {
				return fmt.Errorf("pod %s: node selector %v, labels %v", p.Name, p.Spec.NodeSelector, p.Labels)
			}
		}
		return nil
	})

	alice := env.AsEditor(t, "alice")
	refused(t, alice, get(), func(u *unstructured.Unstructured) {
		groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "workerGroupSpecs")
		groups[0].(map[string]any)["minReplicas"] = int64(4)
		_ = unstructured.SetNestedSlice(u.Object, groups, "spec", "workerGroupSpecs")
	}, "spec.workerGroupSpecs: may change on a queued RayCluster only in an update that leaves it suspended")
	refused(t, alice, get(), func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, true, "spec", "enableInTreeAutoscaling")
	}, "spec.enableInTreeAutoscaling: may not change on a queued RayCluster")
	worker := pods()[0]
	for _, p := range pods() {
		if p.Labels["ray.io/node-type"] == "worker" {
			worker = p
		}
	}
	podLabelRefused(t, alice, &worker, "ray.io/group", "metadata.labels[ray.io/group]: the RayCluster finds its Pods by it")

	// Evicted (its ClusterQueue stopped and drained), it is suspended with
	// its own templates, and KubeRay deletes its pods.
	drain(t, env, cq)
	testenv.Eventually(t, wait, func() error {
		now := get()
		if !kind.C.Suspended(now) {
			return fmt.Errorf("not suspended")
		}
		if sel, _, _ := unstructured.NestedStringMap(now.Object, "spec", "headGroupSpec", "template", "spec", "nodeSelector"); sel["pool"] != "" {
			return fmt.Errorf("the head's template keeps its flavor's node selector %v", sel)
		}
		if n := len(pods()); n != 0 {
			return fmt.Errorf("%d pods left", n)
		}
		return nil
	})
}

// A RayCluster whose worker group requires a rack: on 2 racks of 2 nodes
// of 8 cpu, its 4 workers of 3 cpu (which kube-scheduler alone would
// spread over all four nodes) run in one rack, each created gated by berth
// and given its domain; its head, which asks for no placement, runs where
// kube-scheduler puts it.
func TestARayClustersWorkerGroupIsPlacedInOneRack(t *testing.T) {
	env := testenv.New(t)
	rayEditors(t, env)
	standin.InstallCRD(t, env, "../../config/addons/ray/crd/ray.io_rayclusters.yaml", "rayclusters.ray.io.berth.dev")
	const rackLabel = "topology.berth.dev/rack"
	pool := env.Name("pool")
	rackOf := map[string]string{}
	for r := range 2 {
		for h := range 2 {
			name := env.Name(fmt.Sprintf("r%d-h%d", r, h))
			rack := fmt.Sprintf("r%d", r)
			env.CreateSimNode(t, name, map[string]string{"pool": pool, rackLabel: rack})
			rackOf[name] = rack
		}
	}
	topo := &berthv1.Topology{Spec: berthv1.TopologySpec{Levels: []berthv1.TopologyLevel{
		{NodeLabel: rackLabel}, {NodeLabel: corev1.LabelHostname}}}}
	topo.Name = env.Name("dc")
	env.Create(t, topo)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).NodeLabel("pool", pool).Toleration(env.Toleration()).Topology(topo.Name).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "32").Resource("memory", "64Gi").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	rc := readExample(t, "../../examples/configured/raycluster.yaml")
	rc.SetNamespace(env.Namespace)
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	g := groups[0].(map[string]any)
	g["replicas"], g["maxReplicas"] = int64(4), int64(4)
	_ = unstructured.SetNestedField(g, rackLabel, "template", "metadata", "annotations", "berth.dev/podset-required-topology")
	containers, _, _ := unstructured.NestedSlice(g, "template", "spec", "containers")
	_ = unstructured.SetNestedField(containers[0].(map[string]any), "3", "resources", "requests", "cpu")
	_ = unstructured.SetNestedSlice(g, containers, "template", "spec", "containers")
	_ = unstructured.SetNestedSlice(rc.Object, groups, "spec", "workerGroupSpecs")
	env.Create(t, rc)

	testenv.Eventually(t, 2*time.Minute, func() error {
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace), client.MatchingLabels{"ray.io/cluster": rc.GetName()}); err != nil {
			return err
		}
		racks := map[string]bool{}
		var states []string
		workers, head := 0, 0
		for _, p := range l.Items {
			states = append(states, fmt.Sprintf("%s gated=%v node=%q %s", p.Name, len(p.Spec.SchedulingGates) > 0, p.Spec.NodeName, p.Status.Phase))
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			switch p.Labels["ray.io/node-type"] {
			case "worker":
				if p.Labels[berthv1.TopologyPlacedLabel] != "true" || p.Annotations[berthv1.PodSetAnnotation] != "workers" {
					return fmt.Errorf("worker %s is not marked for placement: labels %v, annotations %v", p.Name, p.Labels, p.Annotations)
				}
				workers++
				racks[rackOf[p.Spec.NodeName]] = true
			case "head":
				if p.Labels[berthv1.TopologyPlacedLabel] != "" {
					return fmt.Errorf("the head, which asks for no placement, is marked: %v", p.Labels)
				}
				head++
			}
		}
		if workers != 4 || head != 1 {
			return fmt.Errorf("%d workers and %d head running, want 4 and 1: %v", workers, head, states)
		}
		if len(racks) != 1 {
			return fmt.Errorf("the workers run in racks %v, want one", racks)
		}
		return nil
	})
	wl, err := workloadOf(env, rayKind(t, "RayCluster"), rc)
	if err != nil {
		t.Fatal(err)
	}
	if psa := wl.Status.Admission.PodSetAssignments; len(psa) != 2 || psa[0].TopologyAssignment != nil || psa[1].TopologyAssignment == nil {
		t.Errorf("admission %+v: want the workers placed and the head not", wl.Status.Admission)
	}
}

// A RayCluster that allows partial admission (berth.dev/partial-admission),
// of a head and 4 workers of 1 cpu with minReplicas 2, in 3 cpu of quota:
// admitted with 2 workers, it runs with replicas 2 and KubeRay makes 2
// workers, and its user cannot raise them; evicted, it is suspended with
// its own 4 back.
func TestARayClusterAllowingPartialAdmissionRunsTheWorkersThatFit(t *testing.T) {
	env := testenv.New(t)
	rayEditors(t, env)
	standin.InstallCRD(t, env, "../../config/addons/ray/crd/ray.io_rayclusters.yaml", "rayclusters.ray.io.berth.dev")
	pool, cq := poolQueue(t, env, "3", "16Gi")
	env.CreateSimNode(t, env.Name("n"), map[string]string{"pool": pool})
	rc := readExample(t, "../../examples/configured/raycluster.yaml")
	rc.SetNamespace(env.Namespace)
	rc.SetAnnotations(map[string]string{berthv1.PartialAdmissionAnnotation: "true"})
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	groups[0].(map[string]any)["replicas"], groups[0].(map[string]any)["minReplicas"] = int64(4), int64(2)
	_ = unstructured.SetNestedSlice(rc.Object, groups, "spec", "workerGroupSpecs")
	alice := env.AsEditor(t, "alice")
	testenv.Eventually(t, wait, func() error { return alice.Create(ctx, rc) }) // once the edit role has RayClusters
	kind := rayKind(t, "RayCluster")
	replicas := func(u *unstructured.Unstructured) int64 {
		groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "workerGroupSpecs")
		n, _, _ := unstructured.NestedInt64(groups[0].(map[string]any), "replicas")
		return n
	}
	get := func() *unstructured.Unstructured { return current(t, env, rc) }
	workers := func() (running int, err error) {
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace), client.MatchingLabels{"ray.io/cluster": rc.GetName(), "ray.io/node-type": "worker"}); err != nil {
			return 0, err
		}
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running, nil
	}
	testenv.Eventually(t, 2*time.Minute, func() error {
		wl, err := workloadOf(env, kind, rc)
		if err != nil {
			return err
		}
		if !workload.IsAdmitted(wl) {
			return fmt.Errorf("not admitted")
		}
		if n := wl.Status.Admission.PodSetAssignments[1].Count; n != 2 {
			return fmt.Errorf("admitted with %d workers, want 2", n)
		}
		if now := get(); kind.C.Suspended(now) || replicas(now) != 2 {
			return fmt.Errorf("suspended %v, replicas %d; want running with 2", kind.C.Suspended(now), replicas(now))
		}
		if n, err := workers(); err != nil || n != 2 {
			return fmt.Errorf("%d workers running (%v), want 2", n, err)
		}
		return nil
	})
	// Its user may not take back the workers berth left out.
	refused(t, alice, get(), func(u *unstructured.Unstructured) {
		groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "workerGroupSpecs")
		groups[0].(map[string]any)["replicas"] = int64(4)
		_ = unstructured.SetNestedSlice(u.Object, groups, "spec", "workerGroupSpecs")
	}, "spec.workerGroupSpecs: may change on a queued RayCluster only in an update that leaves it suspended")

	drain(t, env, cq)
	testenv.Eventually(t, wait, func() error {
		now := get()
		if !kind.C.Suspended(now) || replicas(now) != 4 {
			return fmt.Errorf("evicted: suspended %v, replicas %d; want suspended with its own 4", kind.C.Suspended(now), replicas(now))
		}
		return nil
	})
}

// current reads obj as the API server has it now.
func current(t *testing.T, env *testenv.Env, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	now := obj.DeepCopy()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), now); err != nil {
		t.Fatal(err)
	}
	return now
}

// drain stops ClusterQueue cq and evicts what it admitted
// (HoldAndDrain).
func drain(t *testing.T, env *testenv.Env, cq string) {
	t.Helper()
	var q berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &q); err != nil {
		t.Fatal(err)
	}
	orig := q.DeepCopy()
	q.Spec.StopPolicy = berthv1.HoldAndDrain
	if err := env.Client.Patch(ctx, &q, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

// rayEditors lets the edit role write KubeRay's kinds, as KubeRay's own
// install does.
func rayEditors(t *testing.T, env *testenv.Env) {
	t.Helper()
	editors(t, env, "ray-edit", "ray.io", "rayclusters", "rayjobs", "rayservices")
}

// rayKind is a kind as config/addons/ray/kinds.yaml describes it.
func rayKind(t *testing.T, name string) configured.Kind {
	t.Helper()
	return kindIn(t, "../../config/addons/ray/kinds.yaml", name)
}

// A RayJob, queued by berth with KubeRay's operator running: a RayJob
// KubeRay could not suspend, or that asks for placement, is refused; one that fits is held until its
// cluster and submitter fit, then KubeRay makes its RayCluster (queued with
// the RayJob, not on its own) and its pods on the flavor's nodes, and a
// user cannot make such a cluster themselves; on simulated nodes the Ray
// job runs its berth.dev/sim-duration, KubeRay deletes the cluster, the
// Workload finishes and its quota comes back.
func TestKubeRaysRayJobIsQueuedWholeAndRunsToItsEnd(t *testing.T) {
	env := testenv.New(t)
	rayEditors(t, env)
	standin.InstallCRD(t, env, "../../config/addons/ray/crd/ray.io_rayjobs.yaml", "rayjobs.ray.io.berth.dev")
	pool, cq := poolQueue(t, env, "4", "8Gi")
	env.CreateSimNode(t, env.Name("n1"), map[string]string{"pool": pool}) // where its pods run
	kind := rayKind(t, "RayJob")
	rj := readExample(t, "../../examples/configured/rayjob.yaml")
	rj.SetNamespace(env.Namespace)
	// Long enough a Ray job for its cluster to be edited while it runs.
	rj.SetAnnotations(map[string]string{"berth.dev/sim-duration": "20s"})
	_ = unstructured.SetNestedField(rj.Object, "20s", "spec", "submitterPodTemplate", "metadata", "annotations", "berth.dev/sim-duration")

	alice := env.AsEditor(t, "alice")
	for _, tc := range []struct {
		edit func(*unstructured.Unstructured)
		want string
	}{
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, false, "spec", "shutdownAfterJobFinishes")
		},
			"spec.shutdownAfterJobFinishes: is false; a queued RayJob has true"},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "SidecarMode", "spec", "submissionMode")
			unstructured.RemoveNestedField(u.Object, "spec", "submitterPodTemplate")
		}, `spec.submissionMode: is "SidecarMode"`},
		{func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "kubernetes.io/hostname", "spec", "rayClusterSpec", "headGroupSpec", "template", "metadata", "annotations", "berth.dev/podset-required-topology")
		}, "spec.rayClusterSpec.headGroupSpec.template.metadata.annotations: topology-aware placement of a RayJob is not supported yet"},
	} {
		bad := rj.DeepCopy()
		bad.SetName("bad")
		tc.edit(bad)
		testenv.Eventually(t, wait, func() error {
			if err := alice.Create(ctx, bad.DeepCopy(), client.DryRunAll); err == nil || !strings.Contains(err.Error(), tc.want) {
				return fmt.Errorf("not refused with %q: %v", tc.want, err)
			}
			return nil
		})
	}

	if err := alice.Create(ctx, rj); err != nil {
		t.Fatal(err)
	}
	get := func() *unstructured.Unstructured { return current(t, env, rj) }
	if !kind.C.Suspended(get()) {
		t.Fatal("a queued RayJob was not created suspended")
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf(env, kind, rj)
		if err != nil {
			return err
		}
		var got []string
		for _, ps := range wl.Spec.PodSets {
			got = append(got, fmt.Sprintf("%s:%d", ps.Name, ps.Count))
		}
		if strings.Join(got, ",") != "head:1,workers:2,submitter:1" {
			return fmt.Errorf("pod sets %v, want the head, two workers and the submitter", got)
		}
		if !workload.IsAdmitted(wl) {
			return fmt.Errorf("not admitted")
		}
		return nil
	})

	// KubeRay makes the cluster from the started RayJob: not held, no
	// Workload of its own, its pods on the flavor's nodes and counted by
	// the RayJob's.
	rcKind := rayKind(t, "RayCluster")
	var rc *unstructured.Unstructured
	testenv.Eventually(t, wait, func() (err error) {
		rc, err = theRayCluster(env, rcKind)
		return err
	})
	if rcKind.C.Suspended(rc) || !metav1.IsControlledBy(rc, rj) {
		t.Errorf("the RayJob's cluster: suspended %v, owners %v", rcKind.C.Suspended(rc), rc.GetOwnerReferences())
	}
	testenv.Eventually(t, wait, func() error {
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace), client.MatchingLabels{berthv1.OwnerUIDLabel: string(rj.GetUID())}); err != nil {
			return err
		}
		if len(l.Items) < 3 {
			return fmt.Errorf("%d of the RayJob's pods, want at least its head and two workers", len(l.Items))
		}
		for _, p := range l.Items {
			if p.Spec.NodeSelector["pool"] != pool {
				return fmt.Errorf("pod %s: node selector %v", p.Name, p.Spec.NodeSelector)
			}
		}
		return nil
	})
	var own berthv1.Workload
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: rcKind.WorkloadName(rc)}, &own); !apierrors.IsNotFound(err) {
		t.Errorf("the RayJob's cluster has a Workload of its own: %v", err)
	}
	// Asked about the cluster, berth why points at the RayJob.
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	why, err := exec.Command(bin, "why", "raycluster", rc.GetName(), "-n", env.Namespace, "--kubeconfig", env.Kubeconfig).CombinedOutput()
	if err == nil || !strings.Contains(string(why), "has no Workload of its own: it is queued with its RayJob rayjob-small (Workload "+kind.WorkloadName(rj)) {
		t.Errorf("berth why raycluster %s: %v\n%s", rc.GetName(), err, why)
	}

	// Its user cannot take the cluster out of its queue (it would then be
	// an unqueued RayCluster, free to grow), even suspending it, when the
	// RayCluster's own policy would let the label go ...
	refused(t, alice, rc, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, true, "spec", "suspend")
		labels := u.GetLabels()
		delete(labels, berthv1.QueueNameLabel)
		u.SetLabels(labels)
	}, "metadata.labels[berth.dev/queue-name]: a RayJob's RayCluster keeps the label it was made with")

	// ... nor make one: a cluster that claims the RayJob as its controller
	// is KubeRay's to make, not its user's, whose pods would run outside the
	// RayJob's quota.
	forged := readExample(t, "../../examples/configured/raycluster.yaml")
	forged.SetNamespace(env.Namespace)
	forged.SetName("forged")
	yes := true
	forged.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: rj.GetName(), UID: rj.GetUID(), Controller: &yes}})
	if err := alice.Create(ctx, forged); err == nil || !strings.Contains(err.Error(), "only the RayJob controller makes the RayClusters of a RayJob") {
		t.Errorf("a user's RayCluster under the RayJob was not refused: %v", err)
	}

	// The simulated Ray job and its submitter end after 5s: KubeRay says
	// Complete and deletes the cluster; the Workload finishes and the
	// ClusterQueue has its quota back once the pods are gone.
	testenv.Eventually(t, 2*wait, func() error {
		now := get()
		if f, failed := kind.Finished(now); !f || failed {
			s, _, _ := unstructured.NestedString(now.Object, "status", "jobDeploymentStatus")
			state, _, _ := unstructured.NestedString(now.Object, "status", "rayClusterStatus", "state")
			var events corev1.EventList
			_ = env.Client.List(ctx, &events, client.InNamespace(env.Namespace))
			var said []string
			for _, e := range events.Items {
				said = append(said, e.InvolvedObject.Kind+" "+e.Reason+": "+e.Message)
			}
			return fmt.Errorf("jobDeploymentStatus %q (its cluster %q), want Complete; events: %s", s, state, strings.Join(said, "; "))
		}
		wl, err := workloadOf(env, kind, rj)
		if err != nil {
			return err
		}
		if !workload.IsFinished(wl) {
			return fmt.Errorf("its Workload is not finished")
		}
		var q berthv1.ClusterQueue
		if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &q); err != nil {
			return err
		}
		if q.Status.ReservingWorkloads != 0 {
			return fmt.Errorf("ClusterQueue %s still reserves quota for %d workloads", cq, q.Status.ReservingWorkloads)
		}
		return nil
	})
}

// A RayService has no suspend field: it is not queued itself, but each
// RayCluster KubeRay makes for it carries its queue label and is queued as
// any RayCluster, held until it fits, then run on its flavor's nodes.
func TestARayServicesClusterIsQueuedAsAnyRayCluster(t *testing.T) {
	env := testenv.New(t)
	standin.InstallCRD(t, env, "../../config/addons/ray/crd/ray.io_rayclusters.yaml", "rayclusters.ray.io.berth.dev")
	// Too small for the head and the worker at first.
	pool, cq := poolQueue(t, env, "1", "8Gi")
	env.CreateSimNode(t, env.Name("n1"), map[string]string{"pool": pool})
	svc := readExample(t, "../../examples/configured/rayservice.yaml")
	svc.SetNamespace(env.Namespace)
	env.Create(t, svc)

	kind := rayKind(t, "RayCluster")
	testenv.Eventually(t, wait, func() error {
		rc, err := theRayCluster(env, kind)
		if err != nil {
			return err
		}
		if !metav1.IsControlledBy(rc, svc) || !kind.C.Suspended(rc) {
			return fmt.Errorf("cluster %s: suspended %v, owners %v", rc.GetName(), kind.C.Suspended(rc), rc.GetOwnerReferences())
		}
		wl, err := workloadOf(env, kind, rc)
		if err != nil {
			return err
		}
		if workload.IsAdmitted(wl) || len(wl.Spec.PodSets) != 2 {
			return fmt.Errorf("Workload %s: admitted %v, pod sets %+v; want it waiting for two", wl.Name, workload.IsAdmitted(wl), wl.Spec.PodSets)
		}
		return nil
	})

	// Room for both: admitted, KubeRay makes its pods on the flavor's nodes.
	var q berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &q); err != nil {
		t.Fatal(err)
	}
	orig := q.DeepCopy()
	q.Spec.ResourceGroups[0].Flavors[0].Resources[0].NominalQuota = resource.MustParse("2")
	if err := env.Client.Patch(ctx, &q, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		rc, err := theRayCluster(env, kind)
		if err != nil {
			return err
		}
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace), client.MatchingLabels{"ray.io/cluster": rc.GetName()}); err != nil {
			return err
		}
		if kind.C.Suspended(rc) || len(l.Items) != 2 {
			return fmt.Errorf("suspended %v, %d pods", kind.C.Suspended(rc), len(l.Items))
		}
		for _, p := range l.Items {
			if p.Spec.NodeSelector["pool"] != pool || p.Labels[berthv1.OwnerUIDLabel] != string(rc.GetUID()) {
				return fmt.Errorf("pod %s: node selector %v, labels %v", p.Name, p.Spec.NodeSelector, p.Labels)
			}
		}
		return nil
	})
}

// theRayCluster is the one RayCluster (kind) of env's namespace, or an
// error saying how many there are.
func theRayCluster(env *testenv.Env, kind configured.Kind) (*unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(kind.C.GVK.GroupVersion().WithKind(kind.C.Kind + "List"))
	if err := env.Client.List(ctx, l, client.InNamespace(env.Namespace)); err != nil {
		return nil, err
	}
	if len(l.Items) != 1 {
		return nil, fmt.Errorf("%d RayClusters, want one", len(l.Items))
	}
	return &l.Items[0], nil
}

// A running RayJob preempted by a Job of a higher priority is suspended;
// KubeRay takes its cluster and submitter away, and only once none of its
// pods runs does the Job get the quota. The RayJob waits whole, and once
// the Job has run to its end, it is admitted again and KubeRay makes its
// cluster again.
func TestAPreemptedRayJobIsSuspendedAndRunsAgainWhole(t *testing.T) {
	env := testenv.New(t)
	standin.InstallCRD(t, env, "../../config/addons/ray/crd/ray.io_rayjobs.yaml", "rayjobs.ray.io.berth.dev")
	pool, cq := poolQueue(t, env, "4", "8Gi")
	var q berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &q); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(q.DeepCopy())
	q.Spec.Preemption = &berthv1.ClusterQueuePreemption{WithinClusterQueue: berthv1.PreemptionLowerPriority}
	if err := env.Client.Patch(ctx, &q, patch); err != nil {
		t.Fatal(err)
	}
	env.CreateSimNode(t, env.Name("n1"), map[string]string{"pool": pool})
	kind := rayKind(t, "RayJob")
	rj := readExample(t, "../../examples/configured/rayjob.yaml")
	rj.SetNamespace(env.Namespace)
	rj.SetName("long")
	rj.SetAnnotations(map[string]string{"berth.dev/sim-duration": "1h"})
	_ = unstructured.SetNestedField(rj.Object, "1h", "spec", "submitterPodTemplate", "metadata", "annotations", "berth.dev/sim-duration")
	env.Create(t, rj)

	// rayPods are the RayJob's pods that have not ended.
	rayPods := func() ([]string, error) {
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace), client.MatchingLabels{berthv1.OwnerUIDLabel: string(rj.GetUID())}); err != nil {
			return nil, err
		}
		var out []string
		for _, p := range l.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				out = append(out, p.Name+" "+string(p.Status.Phase))
			}
		}
		return out, nil
	}
	running := func(what string, requeued int32) {
		t.Helper()
		testenv.Eventually(t, 2*wait, func() error {
			wl, err := workloadOf(env, kind, rj)
			if err != nil {
				return err
			}
			if rs := wl.Status.RequeueState; !workload.IsAdmitted(wl) || requeued > 0 && (rs == nil || rs.Count == nil || *rs.Count != requeued) {
				return fmt.Errorf("%s: its Workload is not admitted (requeued %d times): %+v", what, requeued, wl.Status.Conditions)
			}
			pods, err := rayPods()
			if err != nil {
				return err
			}
			n := 0
			for _, p := range pods {
				if strings.HasSuffix(p, " Running") {
					n++
				}
			}
			if n < 3 {
				return fmt.Errorf("%s: pods %v, want its head and two workers running", what, pods)
			}
			return nil
		})
	}
	running("first run", 0)

	high := env.Name("high")
	env.Create(t, &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: high}, Value: 100})
	urgent := MakeJob("urgent", env.Namespace).Queue("main").Label(berthv1.PriorityClassLabel, high).Request("cpu", "3").
		PodAnnotation("berth.dev/sim-duration", "3s").Obj()
	env.Create(t, urgent)
	testenv.Eventually(t, 2*wait, func() error {
		var wls berthv1.WorkloadList
		if err := env.Client.List(ctx, &wls, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, wl := range wls.Items {
			ref := metav1.GetControllerOf(&wl)
			if ref == nil || ref.UID != urgent.UID || !workload.HasQuota(&wl) {
				continue
			}
			// The Job holds the quota: the RayJob is suspended and none of
			// its pods runs.
			now := rj.DeepCopy()
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rj), now); err != nil {
				return err
			}
			pods, err := rayPods()
			if err != nil {
				return err
			}
			if !kind.C.Suspended(now) || len(pods) > 0 {
				t.Fatalf("the Job holds quota while the RayJob is suspended %v with pods %v", kind.C.Suspended(now), pods)
			}
			return nil
		}
		return fmt.Errorf("the Job holds no quota yet")
	})
	running("after the Job", 1)
}
