package multicluster

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/multicluster"
)

// Checks keeps the Active condition of every multicluster AdmissionCheck
// true to its config and its workers' connections.
type Checks struct {
	client client.Client
	clock  clock.PassiveClock
}

// Reconcile sets one AdmissionCheck's Active condition.
func (c *Checks) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ac berthv1.AdmissionCheck
	if err := c.client.Get(ctx, req.NamespacedName, &ac); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ac.Spec.ControllerName != berthv1.MultiClusterControllerName {
		return reconcile.Result{}, nil
	}
	var cfg *berthv1.MultiClusterConfig
	if name, err := multicluster.ConfigOf(&ac); err == nil {
		var got berthv1.MultiClusterConfig
		if err := c.client.Get(ctx, types.NamespacedName{Name: name}, &got); err == nil {
			cfg = &got
		} else if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	var workers berthv1.WorkerClusterList
	if err := c.client.List(ctx, &workers); err != nil {
		return reconcile.Result{}, err
	}
	active := map[string]bool{}
	for _, w := range workers.Items {
		active[w.Name] = meta.IsStatusConditionTrue(w.Status.Conditions, berthv1.WorkerClusterActive)
	}
	want := multicluster.CheckActive(&ac, cfg, active)
	old := meta.FindStatusCondition(ac.Status.Conditions, berthv1.AdmissionCheckActive)
	if old != nil && old.Status == want.Status && old.Reason == want.Reason && old.Message == want.Message &&
		old.ObservedGeneration == want.ObservedGeneration {
		return reconcile.Result{}, nil
	}
	orig := ac.DeepCopy()
	want.LastTransitionTime.Time = c.clock.Now()
	meta.SetStatusCondition(&ac.Status.Conditions, want)
	return reconcile.Result{}, client.IgnoreNotFound(
		c.client.Status().Patch(ctx, &ac, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// all lists every multicluster AdmissionCheck: a config or a worker
// changed, which any of them may use.
func (c *Checks) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list berthv1.AdmissionCheckList
	if err := c.client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, ac := range list.Items {
		if ac.Spec.ControllerName == berthv1.MultiClusterControllerName {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ac.Name}})
		}
	}
	return out
}
