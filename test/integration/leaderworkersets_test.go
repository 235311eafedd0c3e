package integration

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/podgroups"
	"github.com/berth-dev/berth/internal/testenv"
)

// makeLeaderWorkerSet is a LeaderWorkerSet queued in LocalQueue main
// (Kueue's label) of replicas groups of a leader (of 2 cpu) and size-1
// workers (of 1 cpu each), running until deleted.
func makeLeaderWorkerSet(name, ns string, replicas, size int32) *lwsv1.LeaderWorkerSet {
	tmpl := func(role, cpu string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"role": role}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: role, Image: "model",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse(cpu)}}}}},
		}
	}
	leader := tmpl("leader", "2")
	return &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{berthv1.KueueQueueNameLabel: "main"}},
		Spec: lwsv1.LeaderWorkerSetSpec{Replicas: &replicas, StartupPolicy: lwsv1.LeaderCreatedStartupPolicy, LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
			Size: &size, LeaderTemplate: &leader, WorkerTemplate: tmpl("worker", "1")}},
	}
}

// lwsWorkload is the name of the Workload of group index of LeaderWorkerSet
// name.
func lwsWorkload(name string, index int) string {
	return podgroups.WorkloadName(fmt.Sprintf("lws-%s-%d", name, index))
}

// waitLWSPods waits until the LeaderWorkerSet's pods not being deleted are
// running Running on node and gated Gated.
func waitLWSPods(t *testing.T, env *testenv.Env, name, node string, running, gated int) {
	t.Helper()
	waitPodsOf(t, env, "LeaderWorkerSet "+name, map[string]string{lwsv1.SetNameLabelKey: name}, node, running, gated)
}

// Each group of a LeaderWorkerSet (Kueue's queue label), its leader and its
// workers, made by LeaderWorkerSet's own controller, is queued whole as one
// pod group: as many groups run as the quota covers, each with one
// Workload of its leader and workers; a group that does not fit waits with
// all its pods gated; scaled down, the groups removed give their quota
// back; deleted, all of it goes back.
func TestLeaderWorkerSetGroupsAreQueuedWhole(t *testing.T) {
	env := testenv.New(t)
	_, cq, node := podQueue(t, env, "8")
	lws := makeLeaderWorkerSet("infer", env.Namespace, 2, 3)
	env.Create(t, lws)
	for i := range 2 {
		wl := waitAdmitted(t, env, env.Namespace, lwsWorkload("infer", i))
		var n int32
		for _, ps := range wl.Spec.PodSets {
			n += ps.Count
		}
		if len(wl.Spec.PodSets) != 2 || n != 3 || wl.Spec.QueueName != "main" {
			t.Errorf("group %d: queue %q, pod sets %+v; want in main the leader's and the workers', 3 pods", i, wl.Spec.QueueName, wl.Spec.PodSets)
		}
	}
	waitLWSPods(t, env, "infer", node.Name, 6, 0)
	waitUsage(t, env, cq, "8")

	scale := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":3}}`))
	if err := env.Client.Patch(ctx, lws, scale); err != nil {
		t.Fatal(err)
	}
	waitPending(t, env, env.Namespace, lwsWorkload("infer", 2), "needs 2 cpu")
	waitLWSPods(t, env, "infer", node.Name, 6, 3)

	scale = client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`))
	if err := env.Client.Patch(ctx, lws, scale); err != nil {
		t.Fatal(err)
	}
	waitLWSPods(t, env, "infer", node.Name, 3, 0)
	waitUsage(t, env, cq, "4")
	testenv.Eventually(t, wait, func() error {
		if _, err := getWorkload(env, env.Namespace, lwsWorkload("infer", 2)); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Workload of a group scaled away is still there (%v)", err)
		}
		return nil
	})

	if err := env.Client.Delete(ctx, lws); err != nil {
		t.Fatal(err)
	}
	// The garbage collector deletes its StatefulSets, and so its pods, once
	// it knows the kind: it looks for new kinds every 30 s, and the CRD may
	// have been installed just before.
	testenv.Eventually(t, 3*wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		for _, f := range q.Status.FlavorsUsage {
			for _, r := range f.Resources {
				if !r.Total.IsZero() {
					return fmt.Errorf("ClusterQueue %s uses %s %s; want nothing once the LeaderWorkerSet is deleted", cq, r.Total.String(), r.Name)
				}
			}
		}
		return nil
	})
}

// A group preempted by a Pod of higher priority loses all its pods at
// once; LeaderWorkerSet makes them again, and the group waits, gated,
// until the quota is free, then runs whole again.
func TestPreemptedLeaderWorkerSetGroupQueuesAgain(t *testing.T) {
	env := testenv.New(t)
	_, cq, node := podQueue(t, env, "4")
	high := preemptLowerPriority(t, env, cq)
	lws := makeLeaderWorkerSet("infer", env.Namespace, 1, 3)
	env.Create(t, lws)
	waitAdmitted(t, env, env.Namespace, lwsWorkload("infer", 0))
	waitLWSPods(t, env, "infer", node.Name, 3, 0)

	urgent := plainPod("urgent", env.Namespace, "2", "1h", map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.PriorityClassLabel: high})
	env.Create(t, urgent)
	testenv.Eventually(t, wait, func() error { return runsOn(env, urgent.Name, node.Name) })
	waitLWSPods(t, env, "infer", node.Name, 0, 3)
	waitPending(t, env, env.Namespace, lwsWorkload("infer", 0), "needs")

	if err := env.Client.Delete(ctx, urgent); err != nil {
		t.Fatal(err)
	}
	waitAdmitted(t, env, env.Namespace, lwsWorkload("infer", 0))
	waitLWSPods(t, env, "infer", node.Name, 3, 0)
	waitUsage(t, env, cq, "4")
}

// What could never be whole while it waits is refused, naming the field:
// workers made only once the leader is Ready.
func TestLeaderWorkerSetRefusals(t *testing.T) {
	env := testenv.New(t)
	podQueue(t, env, "2")
	lws := makeLeaderWorkerSet("ready", env.Namespace, 1, 2)
	lws.Spec.StartupPolicy = lwsv1.LeaderReadyStartupPolicy
	if err := env.Client.Create(ctx, lws); err == nil || !strings.Contains(err.Error(), "spec.startupPolicy LeaderReady is not supported yet") {
		t.Errorf("LeaderReady: %v; want refused", err)
	}
	lws = makeLeaderWorkerSet("grouped", env.Namespace, 1, 2)
	lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels[berthv1.PodGroupNameLabel] = "mine"
	if err := env.Client.Create(ctx, lws); err == nil ||
		!strings.Contains(err.Error(), "spec.leaderWorkerTemplate.workerTemplate.metadata.labels[berth.dev/pod-group-name]") {
		t.Errorf("a pod group named on a template: %v; want refused", err)
	}
}
