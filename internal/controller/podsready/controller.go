// Package podsready is the controller that carries out internal/podsready's
// decisions: it evicts, deactivates and resets the workloads whose pods did
// not all become Ready in time (berth controller --wait-for-pods-ready).
package podsready

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/podsready"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler acts on one Workload's pods' readiness.
type Reconciler struct {
	client client.Client
	rec    events.EventRecorder
	clock  clock.PassiveClock
	opts   podsready.Options
}

// Setup registers the Reconciler; opts.Since is set to now.
func Setup(mgr ctrl.Manager, opts podsready.Options, clk clock.PassiveClock) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts.Since = clk.Now()
	r := &Reconciler{client: mgr.GetClient(), rec: mgr.GetEventRecorder("berth-pods-ready"), clock: clk, opts: opts}
	return ctrl.NewControllerManagedBy(mgr).
		Named("podsready").
		For(&berthv1.Workload{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			w, ok := o.(*berthv1.Workload)
			return ok && workload.PodsReadySubject(w)
		}))).
		Complete(r)
}

// Reconcile carries out what the workload's pods' readiness calls for.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wl berthv1.Workload
	if err := r.client.Get(ctx, req.NamespacedName, &wl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := r.clock.Now()
	d := podsready.Decide(&wl, r.opts, now)
	if d.Action == podsready.Wait {
		return reconcile.Result{RequeueAfter: d.After}, nil
	}
	orig := wl.DeepCopy()
	if podsready.Apply(&wl, d, r.opts, now) {
		err := r.client.Status().Patch(ctx, &wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		if err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		switch d.Action {
		case podsready.Evict:
			r.rec.Eventf(&wl, nil, corev1.EventTypeNormal, "PodsReadyTimeout", "Eviction", "%s", d.Message)
		case podsready.Deactivate:
			r.rec.Eventf(&wl, nil, corev1.EventTypeWarning, "RequeuingLimitExceeded", "Eviction", "%s", d.Message)
		}
	}
	if d.Action != podsready.Deactivate {
		return reconcile.Result{}, nil
	}
	// Out of its queue until someone resumes it; the status above says why
	// (workload.Deactivation). The resource version guards against a
	// resume made since it was read.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": wl.ResourceVersion},
		"spec":     map[string]any{"active": false}})
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, client.IgnoreNotFound(r.client.Patch(ctx, &wl, client.RawPatch(types.MergePatchType, patch)))
}
