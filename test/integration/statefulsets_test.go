package integration

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/podgroups"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
)

// makeStatefulSet is a StatefulSet queued in LocalQueue main (Kueue's
// label), of replicas Pods of 1 cpu that run until deleted.
func makeStatefulSet(name, ns string, replicas int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{berthv1.KueueQueueNameLabel: "main"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, PodManagementPolicy: policy, ServiceName: name,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "db",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}},
			},
		},
	}
}

func scaleStatefulSet(t *testing.T, env *testenv.Env, s *appsv1.StatefulSet, n int32) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)))
	if err := env.Client.Patch(ctx, s, patch); err != nil {
		t.Fatal(err)
	}
}

// waitStatefulSetPods waits until the StatefulSet's Pods not being deleted
// are running Running on node and gated Gated.
func waitStatefulSetPods(t *testing.T, env *testenv.Env, s *appsv1.StatefulSet, node string, running, gated int) {
	t.Helper()
	waitPodsOf(t, env, "StatefulSet "+s.Name, map[string]string{"app": s.Name}, node, running, gated)
}

// waitPodsOf waits until the Pods of the test's namespace with labels
// (those of what), but for those being deleted, are running Running on node
// and gated Gated, none else.
func waitPodsOf(t *testing.T, env *testenv.Env, what string, labels map[string]string, node string, running, gated int) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace), client.MatchingLabels(labels)); err != nil {
			return err
		}
		r, g := 0, 0
		var other []string
		for _, p := range list.Items {
			switch {
			case p.DeletionTimestamp != nil:
			case pods.Gated(&p):
				g++
			case p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == node:
				r++
			default:
				other = append(other, fmt.Sprintf("%s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName))
			}
		}
		if r != running || g != gated || len(other) > 0 {
			return fmt.Errorf("%s: %d pods running on %s, %d gated, others %v; want %d running and %d gated",
				what, r, node, g, other, running, gated)
		}
		return nil
	})
}

func statefulSetWorkload(s *appsv1.StatefulSet) string {
	return podgroups.WorkloadName(pods.StatefulSetGroup(s.Name))
}

// A StatefulSet with a queue label (Kueue's) is queued whole by berth,
// its Pods made by kube-controller-manager's own StatefulSet controller:
// one at a time (OrderedReady), its one Workload for all its replicas is
// admitted from the first, and each runs on the flavor's node as it comes.
// Another that does not fit waits, its Pods gated. Scaled to 0, the first
// gives its quota back; scaled while admitted, the second queues again whole
// at its new size; deleted, its quota goes back.
func TestStatefulSetIsQueuedWhole(t *testing.T) {
	env := testenv.New(t)
	_, cq, node := podQueue(t, env, "4")
	db := makeStatefulSet("db", env.Namespace, 3, appsv1.OrderedReadyPodManagement)
	env.Create(t, db)
	if g := db.Spec.Template.Labels[berthv1.PodGroupNameLabel]; g != "statefulset-db" || db.Spec.Template.Labels[berthv1.QueueNameLabel] != "main" {
		t.Fatalf("pod template labels %v: want the queue and the StatefulSet's pod group", db.Spec.Template.Labels)
	}
	wl := waitAdmitted(t, env, env.Namespace, statefulSetWorkload(db))
	if ps := wl.Spec.PodSets; len(ps) != 1 || ps[0].Count != 3 || ps[0].Requests.Cpu().String() != "1" {
		t.Errorf("workload pod sets %+v; want one of 3 pods of 1 cpu", ps)
	}
	waitStatefulSetPods(t, env, db, node.Name, 3, 0)
	waitUsage(t, env, cq, "3")

	web := makeStatefulSet("web", env.Namespace, 2, appsv1.ParallelPodManagement)
	env.Create(t, web)
	waitPending(t, env, env.Namespace, statefulSetWorkload(web), "needs 2 cpu")
	waitStatefulSetPods(t, env, web, node.Name, 0, 2)

	scaleStatefulSet(t, env, db, 0)
	testenv.Eventually(t, wait, func() error {
		if _, err := getWorkload(env, env.Namespace, statefulSetWorkload(db)); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Workload of a StatefulSet scaled to 0 is still there (%v)", err)
		}
		return nil
	})
	waitAdmitted(t, env, env.Namespace, statefulSetWorkload(web))
	waitStatefulSetPods(t, env, web, node.Name, 2, 0)
	waitUsage(t, env, cq, "2")

	scaleStatefulSet(t, env, web, 4)
	waitEvent(t, env, statefulSetWorkload(web), "Resized", "StatefulSet web was scaled from 2 to 4 replicas")
	testenv.Eventually(t, wait, func() error {
		wl, err := getWorkload(env, env.Namespace, statefulSetWorkload(web))
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadAdmitted); c == nil || c.Status != metav1.ConditionTrue ||
			wl.Spec.PodSets[0].Count != 4 {
			return fmt.Errorf("workload of web: %s, %d pods; want admitted for 4", describe(wl), wl.Spec.PodSets[0].Count)
		}
		return nil
	})
	waitStatefulSetPods(t, env, web, node.Name, 4, 0)
	waitUsage(t, env, cq, "4")

	// A rolling update replaces each pod within the admission, the quota
	// full all along: a new pod not counted twice.
	resized := waitAdmitted(t, env, env.Namespace, statefulSetWorkload(web))
	rollout := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"template":{"metadata":{"annotations":{"rollout":"2"}}}}}`))
	if err := env.Client.Patch(ctx, web, rollout); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		var cur appsv1.StatefulSet
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(web), &cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation || cur.Status.UpdatedReplicas != 4 || cur.Status.ReadyReplicas != 4 ||
			cur.Status.CurrentRevision != cur.Status.UpdateRevision {
			return fmt.Errorf("rollout: %d updated, %d ready, revision %s of %s; want all 4 updated and ready",
				cur.Status.UpdatedReplicas, cur.Status.ReadyReplicas, cur.Status.CurrentRevision, cur.Status.UpdateRevision)
		}
		return nil
	})
	waitStatefulSetPods(t, env, web, node.Name, 4, 0)
	if wl := waitAdmitted(t, env, env.Namespace, statefulSetWorkload(web)); wl.UID != resized.UID || !workload.IsAdmitted(wl) {
		t.Errorf("after the rollout: Workload %s, %s; want the same one admitted", wl.UID, describe(wl))
	}
	waitUsage(t, env, cq, "4")

	if err := env.Client.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	waitUsage(t, env, cq, "0")
}

// A StatefulSet preempted by a higher priority has its Pods deleted, and
// gives its quota back once they have stopped; made again by the
// StatefulSet controller, they wait gated in the same Workload, which is
// admitted again once the quota is free.
func TestPreemptedStatefulSetQueuesAgain(t *testing.T) {
	env := testenv.New(t)
	_, cq, node := podQueue(t, env, "2")
	high := preemptLowerPriority(t, env, cq)
	db := makeStatefulSet("db", env.Namespace, 2, appsv1.ParallelPodManagement)
	env.Create(t, db)
	first := waitAdmitted(t, env, env.Namespace, statefulSetWorkload(db))
	waitStatefulSetPods(t, env, db, node.Name, 2, 0)

	urgent := plainPod("urgent", env.Namespace, "2", "1h", map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.PriorityClassLabel: high})
	env.Create(t, urgent)
	testenv.Eventually(t, wait, func() error { return runsOn(env, urgent.Name, node.Name) })
	waitStatefulSetPods(t, env, db, node.Name, 0, 2)
	wl := waitPending(t, env, env.Namespace, statefulSetWorkload(db), "needs 2 cpu")
	if wl.UID != first.UID {
		t.Errorf("the preempted StatefulSet's Workload was made again: want the same one queued again")
	}

	if err := env.Client.Delete(ctx, urgent); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, statefulSetWorkload(db))
	waitStatefulSetPods(t, env, db, node.Name, 2, 0)
}

// What could not be queued as asked is refused, naming the field: a pod
// template naming another pod group, and an update of what its Pods need
// of a node while it has replicas.
func TestStatefulSetRefusals(t *testing.T) {
	env := testenv.New(t)
	podQueue(t, env, "2")
	other := makeStatefulSet("other", env.Namespace, 1, appsv1.ParallelPodManagement)
	other.Spec.Template.Labels[berthv1.PodGroupNameLabel] = "mine"
	if err := env.Client.Create(ctx, other); err == nil || !strings.Contains(err.Error(), `spec.template.metadata.labels[berth.dev/pod-group-name]="mine"`) {
		t.Errorf("a StatefulSet naming another pod group: %v; want refused", err)
	}
	db := makeStatefulSet("db", env.Namespace, 1, appsv1.ParallelPodManagement)
	env.Create(t, db)
	bigger := client.RawPatch("application/strategic-merge-patch+json", []byte(
		`{"spec":{"template":{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"2"}}}]}}}}`))
	if err := env.Client.Patch(ctx, db, bigger); err == nil || !strings.Contains(err.Error(), "scale it to 0 first") {
		t.Errorf("bigger Pods while it has replicas: %v; want refused", err)
	}
	scaleStatefulSet(t, env, db, 0)
	if err := env.Client.Patch(ctx, db, bigger); err != nil {
		t.Errorf("bigger Pods once scaled to 0: %v", err)
	}
}

// berth stop statefulset deactivates the StatefulSet's Workload: its pods
// are deleted and made again gated, and it waits out of its queue; berth
// why explains it by the StatefulSet's name; berth resume runs it again.
func TestStopAndResumeAStatefulSet(t *testing.T) {
	env := testenv.New(t)
	berth := berthCLI(t, env)
	_, _, node := podQueue(t, env, "2")
	db := makeStatefulSet("db", env.Namespace, 2, appsv1.ParallelPodManagement)
	env.Create(t, db)
	waitAdmitted(t, env, env.Namespace, statefulSetWorkload(db))
	waitStatefulSetPods(t, env, db, node.Name, 2, 0)

	out, err := berth("stop", "statefulset", "db", "-n", env.Namespace)
	if err != nil || !strings.Contains(out, "StatefulSet "+env.Namespace+"/db (Workload "+statefulSetWorkload(db)+") stopped: it gives its quota back") {
		t.Fatalf("berth stop statefulset: %v\n%s", err, out)
	}
	waitPending(t, env, env.Namespace, statefulSetWorkload(db), "deactivated (spec.active is false)")
	waitStatefulSetPods(t, env, db, node.Name, 0, 2)
	if out, err := berth("why", "sts", "db", "-n", env.Namespace); err != nil ||
		!strings.Contains(out, "Workload "+env.Namespace+"/"+statefulSetWorkload(db)) {
		t.Errorf("berth why sts db: %v\n%s; want its Workload explained", err, out)
	}

	if out, err := berth("resume", "sts", "db", "-n", env.Namespace); err != nil || !strings.Contains(out, "resumed: it queues again") {
		t.Fatalf("berth resume sts: %v\n%s", err, out)
	}
	waitAdmitted(t, env, env.Namespace, statefulSetWorkload(db))
	waitStatefulSetPods(t, env, db, node.Name, 2, 0)
}
