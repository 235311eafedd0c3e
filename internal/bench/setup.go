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
	"github.com/berth-dev/berth/internal/sim/nodepool"
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
	if err := c.DeleteAllOf(ctx, &berthv1.WorkloadPriorityClass{}, sel); err != nil {
		return fmt.Errorf("deleting WorkloadPriorityClasses: %w", err)
	}
	if err := c.DeleteAllOf(ctx, &corev1.Node{}, sel); err != nil {
		return fmt.Errorf("deleting the last run's nodes: %w", err)
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

// priorityClassOf names the WorkloadPriorityClass of a class whose Jobs or
// Pods berth queues.
func priorityClassOf(c *Class) string { return "bench-" + c.Name }

// setUpJobs makes what a scenario's Jobs and Pods need: a
// WorkloadPriorityClass for each class of them, and the fake nodes for
// their pods, which the cluster's own simulator brings up.
func setUpJobs(ctx context.Context, c client.Client, s *Scenario) error {
	lbl := map[string]string{Label: "true"}
	for i := range s.Classes {
		if cl := &s.Classes[i]; cl.Kind != "" {
			pc := &berthv1.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityClassOf(cl), Labels: lbl}, Value: cl.Priority}
			if err := c.Create(ctx, pc); err != nil {
				return fmt.Errorf("creating WorkloadPriorityClass %s: %w", pc.Name, err)
			}
		}
	}
	pool := nodepool.Pool{Count: s.Nodes, Prefix: "bench-node-", Capacity: nodepool.DefaultCapacity(),
		Labels: map[string]string{Label: "true", nodepool.OwnerLabel: "true", simNodeLabel: "true"},
		Taints: []corev1.Taint{{Key: simNodeLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}}
	for i := range s.Nodes {
		if err := c.Create(ctx, pool.Node(i)); err != nil {
			return fmt.Errorf("creating node %s: %w", pool.Name(i), err)
		}
	}
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var nodes corev1.NodeList
		if err := c.List(ctx, &nodes, client.MatchingLabels(lbl)); err != nil {
			return false, err
		}
		ready = 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == s.Nodes, nil
	})
	if err != nil {
		return fmt.Errorf("%d of the run's %d fake nodes are Ready (%w): its Jobs need the cluster's simulator (berth up runs one) "+
			"to manage nodes labelled %s=true", ready, s.Nodes, err, nodepool.OwnerLabel)
	}
	return nil
}

// setUp makes the scenario's flavor, namespaces, ClusterQueues and
// LocalQueues (QueueObjects), and waits until every ClusterQueue is active.
func setUp(ctx context.Context, c client.Client, s *Scenario) error {
	lbl := map[string]string{Label: "true"}
	for i, o := range QueueObjects(s) {
		if err := c.Create(ctx, o); err != nil && !(i == 0 && apierrors.IsAlreadyExists(err)) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
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

// QueueObjects are the scenario's flavor (first), then for each queue its
// namespace, ClusterQueue and LocalQueue: what setUp creates, and what the
// run writes to queues.yaml for berth whatif to replay it against.
func QueueObjects(s *Scenario) []client.Object {
	lbl := map[string]string{Label: "true"}
	out := []client.Object{&berthv1.ResourceFlavor{TypeMeta: typeOf("ResourceFlavor"), ObjectMeta: metav1.ObjectMeta{Name: flavor, Labels: lbl}}}
	for q := range s.Cohorts * s.QueuesPerCohort {
		name := queueName(q)
		borrowing := resource.NewQuantity(s.BorrowingCPU, resource.DecimalSI)
		cq := &berthv1.ClusterQueue{TypeMeta: typeOf("ClusterQueue"), ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
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
		out = append(out,
			&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}},
			cq,
			&berthv1.LocalQueue{TypeMeta: typeOf("LocalQueue"), ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: name, Labels: lbl},
				Spec: berthv1.LocalQueueSpec{ClusterQueue: name}})
	}
	return out
}

func typeOf(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: berthv1.GroupVersion.String(), Kind: kind}
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
