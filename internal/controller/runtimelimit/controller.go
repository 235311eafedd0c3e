// Package runtimelimit is the controller that carries out
// internal/runtimelimit's decision: an admitted Workload whose run time is
// spent (its own limit, or its ClusterQueue's default and maximum) is
// deactivated (spec.active false), and the admission controller then
// stops it with reason MaximumExecutionTimeExceeded
// (workload.Deactivation).
package runtimelimit

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/metrics"
	"github.com/berth-dev/berth/internal/runtimelimit"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// admittedIn indexes Workloads by the ClusterQueue they hold quota in, so
// that a change of its run-time policy reaches them.
const admittedIn = "runtimelimit.admittedIn"

// Reconciler watches the run time of admitted Workloads.
type Reconciler struct {
	client client.Client
	rec    events.EventRecorder
	clock  clock.PassiveClock
}

// Setup registers the Reconciler.
func Setup(mgr ctrl.Manager, clk clock.PassiveClock) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &berthv1.Workload{}, admittedIn, func(o client.Object) []string {
		if a := o.(*berthv1.Workload).Status.Admission; a != nil {
			return []string{a.ClusterQueue}
		}
		return nil
	}); err != nil {
		return err
	}
	r := &Reconciler{client: mgr.GetClient(), rec: mgr.GetEventRecorder("berth-run-time"), clock: clk}
	policyChanged := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false }, // its workloads come with their own events
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*berthv1.ClusterQueue)
			cq, ok := e.ObjectNew.(*berthv1.ClusterQueue)
			return ok && okOld && !apiequality.Semantic.DeepEqual(old.Spec.RunTime, cq.Spec.RunTime)
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("runtimelimit").
		For(&berthv1.Workload{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			w, ok := o.(*berthv1.Workload)
			return ok && w.Status.Admission != nil
		}))).
		Watches(&berthv1.ClusterQueue{}, handler.EnqueueRequestsFromMapFunc(r.admitted), builder.WithPredicates(policyChanged)).
		Complete(r)
}

// admitted are the Workloads holding quota in ClusterQueue cq.
func (r *Reconciler) admitted(ctx context.Context, cq client.Object) []reconcile.Request {
	var wls berthv1.WorkloadList
	if err := r.client.List(ctx, &wls, client.MatchingFields{admittedIn: cq.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(wls.Items))
	for i := range wls.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&wls.Items[i])}
	}
	return out
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
	admittedBy := wl.Status.Admission.ClusterQueue
	var policy *berthv1.RunTimePolicy
	var cq berthv1.ClusterQueue
	if err := r.client.Get(ctx, types.NamespacedName{Name: admittedBy}, &cq); err == nil {
		policy = cq.Spec.RunTime
	} else if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	limit := runtimelimit.Limit(wl.Spec.MaximumExecutionTimeSeconds, policy)
	now := r.clock.Now()
	out, left, limited := runtimelimit.OutOfRunTime(&wl, limit, now)
	if !limited {
		return reconcile.Result{}, nil
	}
	if !out {
		// A little after, so as not to wake a moment early.
		return reconcile.Result{RequeueAfter: left + 100*time.Millisecond}, nil
	}
	// Deactivated, with the limit it was held to written as its own, so
	// that it says why whatever its ClusterQueue's policy becomes. The
	// resource version guards against an activation made since it was read
	// (one that would find its run time spent comes back here).
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": wl.ResourceVersion},
		"spec":     map[string]any{"active": false, "maximumExecutionTimeSeconds": *limit}})
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.client.Patch(ctx, &wl, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	metrics.RunTimeExceeded.WithLabelValues(admittedBy).Inc()
	_, msg := workload.Deactivation(&wl, now)
	r.rec.Eventf(&wl, nil, corev1.EventTypeWarning, runtimelimit.Exceeded, "Deactivation", "%s", msg)
	return reconcile.Result{}, nil
}
