// Package standin has stand-ins for other projects' operators, as little of
// each as berth's tests need, for kinds berth queues from configuration
// whose operator is not served here.
package standin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
)

// MPIOperator stands in for the MPI Operator, as little of it as the test
// needs: while an MPIJob of its namespace is not suspended it makes each
// replica's pods from the template (owned by the MPIJob); while it is
// suspended it deletes them, once Release says it may; when all its pods
// have succeeded it sets the MPIJob's Succeeded condition. It looks every
// 100 ms until the test ends.
type MPIOperator struct {
	env *testenv.Env
	// Release lets it delete a suspended MPIJob's pods.
	Release atomic.Bool
}

// StartMPIOperator runs an MPIOperator for env's namespace until the test
// ends.
func StartMPIOperator(t *testing.T, env *testenv.Env) *MPIOperator {
	op := &MPIOperator{env: env}
	op.Release.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := op.sync(ctx); err != nil && ctx.Err() == nil {
				t.Logf("stand-in MPI operator: %v", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return op
}

func (op *MPIOperator) sync(ctx context.Context) error {
	c := op.env.Client
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("kubeflow.org/v2beta1")
	list.SetKind("MPIJobList")
	if err := c.List(ctx, list, client.InNamespace(op.env.Namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		job := &list.Items[i]
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(job.GetNamespace())); err != nil {
			return err
		}
		own := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !metav1.IsControlledBy(&p, job) })
		suspended, _, _ := unstructured.NestedBool(job.Object, "spec", "runPolicy", "suspend")
		if suspended {
			for j := range own {
				if op.Release.Load() && own[j].DeletionTimestamp == nil {
					if err := c.Delete(ctx, &own[j], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
						return err
					}
				}
			}
			continue
		}
		succeeded, want := 0, 0
		for _, set := range []string{"Launcher", "Worker"} {
			n, _, _ := unstructured.NestedInt64(job.Object, "spec", "mpiReplicaSpecs", set, "replicas")
			raw, _, _ := unstructured.NestedMap(job.Object, "spec", "mpiReplicaSpecs", set, "template")
			var tmpl corev1.PodTemplateSpec
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tmpl); err != nil {
				return err
			}
			want += int(n)
			for k := int64(0); k < n; k++ {
				name := fmt.Sprintf("%s-%s-%d", job.GetName(), strings.ToLower(set), k)
				if idx := slices.IndexFunc(own, func(p corev1.Pod) bool { return p.Name == name }); idx >= 0 {
					if own[idx].Status.Phase == corev1.PodSucceeded {
						succeeded++
					}
					continue
				}
				yes := true
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: job.GetNamespace(),
					Labels: tmpl.Labels, Annotations: tmpl.Annotations,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubeflow.org/v2beta1", Kind: "MPIJob", Name: job.GetName(),
						UID: job.GetUID(), Controller: &yes}}}, Spec: tmpl.Spec}
				pod.Spec.RestartPolicy = corev1.RestartPolicyNever
				if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
			}
		}
		if want > 0 && succeeded == want {
			conds := []any{map[string]any{"type": "Succeeded", "status": "True", "reason": "AllPodsSucceeded", "message": "done",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}
			if err := unstructured.SetNestedSlice(job.Object, conds, "status", "conditions"); err != nil {
				return err
			}
			if err := c.Status().Update(ctx, job); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
				return err
			}
		}
	}
	return nil
}

// MPIJob is an MPIJob of a launcher and workers, each pod asking for cpu,
// tolerating tolerations, and running for run on simulated nodes.
func MPIJob(name, ns, queue, priorityClass string, workers int64, cpu string, run time.Duration, tolerations ...corev1.Toleration) *unstructured.Unstructured {
	var tols []any
	for _, t := range tolerations {
		tols = append(tols, map[string]any{"key": t.Key, "operator": string(t.Operator), "value": t.Value, "effect": string(t.Effect)})
	}
	template := func(container string) map[string]any {
		spec := map[string]any{"containers": []any{map[string]any{"name": container, "image": "mpi",
			"resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}}}
		if tols != nil {
			spec["tolerations"] = tols
		}
		return map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"berth.dev/sim-duration": run.String()}},
			"spec":     spec,
		}
	}
	labels := map[string]any{berthv1.QueueNameLabel: queue}
	if priorityClass != "" {
		labels[berthv1.PriorityClassLabel] = priorityClass
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
		"spec": map[string]any{"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1), "template": template("launcher")},
			"Worker":   map[string]any{"replicas": workers, "template": template("worker")},
		}},
	}}
}
