package integrations

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
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
	editors := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ray-edit",
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters", "rayjobs", "rayservices"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if err := env.Client.Create(ctx, editors); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
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
	kind := firstKind(t, "../../config/addons/ray/kinds.yaml")
	if !kind.C.Suspended(rc) {
		t.Fatal("a queued RayCluster was not created suspended")
	}
	get := func() *unstructured.Unstructured {
		t.Helper()
		now := rc.DeepCopy()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rc), now); err != nil {
			t.Fatal(err)
		}
		return now
	}
	workloadOf := func() (*berthv1.Workload, error) {
		var wl berthv1.Workload
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: kind.WorkloadName(rc)}, &wl)
		return &wl, err
	}
	pods := func() []corev1.Pod {
		t.Helper()
		var l corev1.PodList
		if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace), client.MatchingLabels{"ray.io/cluster": rc.GetName()}); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	testenv.Eventually(t, wait, func() error {
		wl, err := workloadOf()
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
	testenv.Eventually(t, wait, func() error {
		p := worker.DeepCopy()
		if err := alice.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Labels["ray.io/group"] = "elsewhere"
		err := alice.Update(ctx, p, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "metadata.labels[ray.io/group]: the RayCluster finds its Pods by it") {
			return fmt.Errorf("hiding a pod from KubeRay was not refused: %v", err)
		}
		return nil
	})

	// Evicted (its ClusterQueue stopped and drained), it is suspended with
	// its own templates, and KubeRay deletes its pods.
	var q berthv1.ClusterQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Name: cq}, &q); err != nil {
		t.Fatal(err)
	}
	orig := q.DeepCopy()
	q.Spec.StopPolicy = berthv1.HoldAndDrain
	if err := env.Client.Patch(ctx, &q, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
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
