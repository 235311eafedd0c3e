// Package runtimelimit is the controller that carries out
// internal/runtimelimit's decision: an admitted Workload whose run time is
// spent is deactivated (spec.active false), and the admission controller
// then stops it with reason MaximumExecutionTimeExceeded
// (workload.Deactivation).
package runtimelimit

import (
	"context"
	"encoding/json"
	"time"

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
	"github.com/berth-dev/berth/internal/metrics"
	"github.com/berth-dev/berth/internal/runtimelimit"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler watches the run time of Workloads that have a maximum.
type Reconciler struct {
	client client.Client
	rec    events.EventRecorder
	clock  clock.PassiveClock
}

// Setup registers the Reconciler.
func Setup(mgr ctrl.Manager, clk clock.PassiveClock) error {
	r := &Reconciler{client: mgr.GetClient(), rec: mgr.GetEventRecorder("berth-run-time"), clock: clk}
	return ctrl.NewControllerManagedBy(mgr).
		Named("runtimelimit").
		For(&berthv1.Workload{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			w, ok := o.(*berthv1.Workload)
			return ok && w.Spec.MaximumExecutionTimeSeconds != nil
		}))).
		Complete(r)
}

// Reconcile deactivates the workload once its run time is spent, and
// otherwise looks again when it would be.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wl berthv1.Workload
	if err := r.client.Get(ctx, req.NamespacedName, &wl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !workload.IsAdmitted(&wl) || !workload.IsActive(&wl) || workload.IsFinished(&wl) || workload.IsStopping(&wl) {
		return reconcile.Result{}, nil // its clock runs only while admitted; an admission is an event
	}
	now := r.clock.Now()
	out, left, _ := runtimelimit.OutOfRunTime(&wl, now)
	if !out {
		// A little after, so as not to wake a moment early.
		return reconcile.Result{RequeueAfter: left + 100*time.Millisecond}, nil
	}
	// The resource version guards against an activation made since it was
	// read (one that would find its run time spent comes back here).
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": wl.ResourceVersion},
		"spec":     map[string]any{"active": false}})
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.client.Patch(ctx, &wl, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if wl.Status.Admission != nil {
		metrics.RunTimeExceeded.WithLabelValues(wl.Status.Admission.ClusterQueue).Inc()
	}
	_, msg := workload.Deactivation(&wl, now)
	r.rec.Eventf(&wl, nil, corev1.EventTypeWarning, runtimelimit.Exceeded, "Deactivation", "%s", msg)
	return reconcile.Result{}, nil
}
