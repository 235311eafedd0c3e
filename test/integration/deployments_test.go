package integration

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/testenv"
)

// A Deployment with a queue label (Kueue's here) has its pods queued one by
// one by kube-controller-manager's own Deployment controller: as many run
// as the quota covers, the rest wait gated; scaled down, its quota goes
// back; scaled up, the new pods are admitted as quota allows; rolled out,
// its new pods take the quota its old ones give back. A pod template asking
// for another queue is refused.
func TestDeploymentPodsAreQueuedOneByOne(t *testing.T) {
	env := testenv.New(t)
	_, cq, _ := podQueue(t, env, "2")
	d := makeDeployment(env.Namespace, 3, berthv1.KueueQueueNameLabel)
	env.Create(t, d)
	if q := d.Spec.Template.Labels[berthv1.QueueNameLabel]; q != "main" {
		t.Fatalf("pod template labels %v: want the Deployment's queue on it", d.Spec.Template.Labels)
	}
	waitWebPods(t, env, 2, 1)
	waitUsage(t, env, cq, "2")

	scale(t, env, d, 1)
	waitWebPods(t, env, 1, 0)
	waitUsage(t, env, cq, "1")
	scale(t, env, d, 2)
	waitWebPods(t, env, 2, 0)
	waitUsage(t, env, cq, "2")

	// A rolling update that replaces a pod before it adds one fits in the
	// quota the old pods held: the new pods are admitted as the old go.
	rollout := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{
		"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1}},
		"template":{"metadata":{"annotations":{"rollout":"2"}}}}}`))
	if err := env.Client.Patch(ctx, d, rollout); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, func() error {
		var cur appsv1.Deployment
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), &cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation || cur.Status.UpdatedReplicas != 2 || cur.Status.AvailableReplicas != 2 ||
			cur.Status.Replicas != 2 {
			return fmt.Errorf("rollout: %d updated, %d available, %d in all; want 2 of each", cur.Status.UpdatedReplicas,
				cur.Status.AvailableReplicas, cur.Status.Replicas)
		}
		return nil
	})
	waitWebPods(t, env, 2, 0)
	waitUsage(t, env, cq, "2")

	bad := d.DeepCopy()
	bad.ObjectMeta = metav1.ObjectMeta{Name: "bad", Namespace: env.Namespace, Labels: map[string]string{berthv1.QueueNameLabel: "main"}}
	bad.Spec.Template.Labels = map[string]string{"app": "bad", berthv1.QueueNameLabel: "other"}
	bad.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bad"}}
	if err := env.Client.Create(ctx, bad); err == nil {
		t.Fatal("a Deployment whose pod template asks for another queue was accepted")
	}
}

// A Deployment's pod preempted by a Pod of higher priority is deleted; the
// Deployment makes another, which waits gated until the quota is free and
// then runs on the flavor's node; deleted, the Deployment gives all its
// quota back.
func TestDeploymentPodPreemptedAndResumed(t *testing.T) {
	env := testenv.New(t)
	_, cq, node := podQueue(t, env, "2")
	high := preemptLowerPriority(t, env, cq)
	d := makeDeployment(env.Namespace, 2, berthv1.QueueNameLabel)
	labels := d.Spec.Selector.MatchLabels
	env.Create(t, d)
	waitPodsOf(t, env, "Deployment web", labels, node.Name, 2, 0)

	urgent := plainPod("urgent", env.Namespace, "1", "1h", map[string]string{
		berthv1.QueueNameLabel: "main", berthv1.PriorityClassLabel: high})
	env.Create(t, urgent)
	testenv.Eventually(t, wait, func() error { return runsOn(env, urgent.Name, node.Name) })
	waitPodsOf(t, env, "Deployment web", labels, node.Name, 1, 1)

	if err := env.Client.Delete(ctx, urgent); err != nil {
		t.Fatal(err)
	}
	waitPodsOf(t, env, "Deployment web", labels, node.Name, 2, 0)
	waitUsage(t, env, cq, "2")

	if err := env.Client.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	waitUsage(t, env, cq, "0")
}

// makeDeployment is Deployment web of replicas pods of 1 cpu, queued in
// LocalQueue main by the queue label queueLabel (berth's or Kueue's).
func makeDeployment(ns string, replicas int32, queueLabel string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{queueLabel: "main"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}},
			},
		},
	}
}

func scale(t *testing.T, env *testenv.Env, d *appsv1.Deployment, n int32) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)))
	if err := env.Client.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
}

// waitWebPods waits until the Deployment's pods not being deleted are
// running Running and gated Gated.
func waitWebPods(t *testing.T, env *testenv.Env, running, gated int) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace), client.MatchingLabels{"app": "web"}); err != nil {
			return err
		}
		r, g, other := 0, 0, 0
		for _, p := range list.Items {
			switch {
			case p.DeletionTimestamp != nil:
			case pods.Gated(&p):
				g++
			case p.Status.Phase == corev1.PodRunning:
				r++
			default:
				other++
			}
		}
		if r != running || g != gated || other != 0 {
			return fmt.Errorf("%d pods running, %d gated, %d else; want %d running and %d gated", r, g, other, running, gated)
		}
		return nil
	})
}

func waitUsage(t *testing.T, env *testenv.Env, cq, cpu string) {
	t.Helper()
	testenv.Eventually(t, wait, func() error {
		q, err := clusterQueue(env, cq)
		if err != nil {
			return err
		}
		for _, f := range q.Status.FlavorsUsage {
			for _, r := range f.Resources {
				if r.Name == "cpu" && r.Total.String() == cpu {
					return nil
				}
			}
		}
		return fmt.Errorf("ClusterQueue %s uses %+v; want %s cpu", cq, q.Status.FlavorsUsage, cpu)
	})
}
