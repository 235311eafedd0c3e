package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// CreateReadyNode registers a Node as a kubelet would (4 cpu, 8Gi, 110 pods,
// Ready) with the given labels plus kubernetes.io/hostname, and deletes it when
// the test ends. Nothing renews its heartbeat: it serves tests that finish
// well within the node lifecycle controller's grace period.
func (e *Env) CreateReadyNode(t testing.TB, name string, labels map[string]string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	l := map[string]string{"kubernetes.io/hostname": name}
	for k, v := range labels {
		l[k] = v
	}
	_, err := e.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	// The node lifecycle controller may taint the new node meanwhile: retry on conflict.
	var n *corev1.Node
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "Test", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		n, err = e.Kube.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// SimNodeTaintKey taints the nodes CreateSimNode makes, with the test's
// namespace as value, so other tests' pods are not scheduled there.
const SimNodeTaintKey = "berth.dev/test-namespace"

// CreateSimNode creates a node that the simulator `berth up` runs manages
// (labelled berth.dev/sim-node=true, capacity from the sim-capacity
// annotation: 8 cpu, 32Gi, 110 pods), waits until it is Ready and deletes it
// when the test ends. Unlike CreateReadyNode's, its lease is renewed, so it
// stays Ready. It is tainted NoSchedule for other tests: pods scheduled to it
// need Toleration; pods bound by nodeName do not.
func (e *Env) CreateSimNode(t testing.TB, name string, labels map[string]string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	l := map[string]string{"kubernetes.io/hostname": name, "berth.dev/sim-node": "true"}
	for k, v := range labels {
		l[k] = v
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l,
			Annotations: map[string]string{"berth.dev/sim-capacity": `{"cpu":"8","memory":"32Gi","pods":"110"}`}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: SimNodeTaintKey, Value: e.Namespace, Effect: corev1.TaintEffectNoSchedule}}},
	}
	if _, err := e.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	var ready *corev1.Node
	Eventually(t, time.Minute, func() error {
		got, err := e.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = got
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready: the simulator has not initialised it", name)
	})
	return ready
}

// Toleration lets a pod onto this test's CreateSimNode nodes.
func (e *Env) Toleration() corev1.Toleration {
	return corev1.Toleration{Key: SimNodeTaintKey, Operator: corev1.TolerationOpEqual, Value: e.Namespace, Effect: corev1.TaintEffectNoSchedule}
}
