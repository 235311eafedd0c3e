package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

const flavor = "bench"

// Clear deletes the last run's namespaces (with their workloads) and
// ClusterQueues, and waits until they are gone.
func Clear(ctx context.Context, c client.Client) error {
	sel := client.MatchingLabels{Label: "true"}
	var nss corev1.NamespaceList
	if err := c.List(ctx, &nss, sel); err != nil {
		return err
	}
	for _, ns := range nss.Items {
		if err := c.Delete(ctx, &ns); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
	}
	if err := c.DeleteAllOf(ctx, &berthv1.ClusterQueue{}, sel); err != nil {
		return fmt.Errorf("deleting ClusterQueues: %w", err)
	}
	var left int
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var cqs berthv1.ClusterQueueList
		if err := c.List(ctx, &cqs, sel); err != nil {
			return false, err
		}
		if err := c.List(ctx, &nss, sel); err != nil {
			return false, err
		}
		left = len(cqs.Items) + len(nss.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the last run's objects are not gone (%d left): %w", left, err)
	}
	return nil
}

func queueName(q int) string { return fmt.Sprintf("bench-q%d", q) }

// setUp makes the scenario's flavor, namespaces, ClusterQueues and
// LocalQueues, and waits until every ClusterQueue is active.
func setUp(ctx context.Context, c client.Client, s *Scenario) error {
	lbl := map[string]string{Label: "true"}
	rf := &berthv1.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: flavor, Labels: lbl}}
	if err := c.Create(ctx, rf); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ResourceFlavor %s: %w", flavor, err)
	}
	for q := range s.Cohorts * s.QueuesPerCohort {
		name := queueName(q)
		borrowing := resource.NewQuantity(s.BorrowingCPU, resource.DecimalSI)
		cq := &berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
			Spec: berthv1.ClusterQueueSpec{
				Cohort:            fmt.Sprintf("bench-c%d", q/s.QueuesPerCohort),
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: name}},
				ResourceGroups: []berthv1.ResourceGroup{{
					CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
					Flavors: []berthv1.FlavorQuotas{{Name: flavor, Resources: []berthv1.ResourceQuota{{
						Name: corev1.ResourceCPU, NominalQuota: *resource.NewQuantity(s.NominalCPU, resource.DecimalSI),
						BorrowingLimit: borrowing}}}},
				}},
			}}
		if s.Held {
			cq.Spec.StopPolicy = berthv1.Hold
		}
		if s.Preemption {
			cq.Spec.Preemption = &berthv1.ClusterQueuePreemption{
				ReclaimWithinCohort: berthv1.PreemptionAny, WithinClusterQueue: berthv1.PreemptionLowerPriority}
		}
		objs := []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}},
			cq,
			&berthv1.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: name, Labels: lbl},
				Spec: berthv1.LocalQueueSpec{ClusterQueue: name}},
		}
		for _, o := range objs {
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var cqs berthv1.ClusterQueueList
		if err := c.List(ctx, &cqs, client.MatchingLabels(lbl)); err != nil {
			return false, err
		}
		ready := 0
		for _, cq := range cqs.Items {
			// A held queue is inactive, but has said so.
			if c := meta.FindStatusCondition(cq.Status.Conditions, "Active"); c != nil && (c.Status == metav1.ConditionTrue || s.Held) {
				ready++
			}
		}
		return ready == s.Cohorts*s.QueuesPerCohort, nil
	})
}

// release lets held queues admit.
func release(ctx context.Context, c client.Client, s *Scenario) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"stopPolicy":"None"}}`))
	for q := range s.Cohorts * s.QueuesPerCohort {
		cq := &berthv1.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: queueName(q)}}
		if err := c.Patch(ctx, cq, patch); err != nil {
			return fmt.Errorf("releasing ClusterQueue %s: %w", cq.Name, err)
		}
	}
	return nil
}
