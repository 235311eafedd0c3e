package admissioncheck

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/admissioncheck"
	"github.com/berth-dev/berth/internal/scheduler"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups=berth.dev,resources=admissionchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=patch
// +kubebuilder:rbac:groups=berth.dev,resources=clusterqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// EvictWithBackoff takes a workload's quota away; it may be admitted again
// only after a backoff.
type EvictWithBackoff func(key, reason, message string)

// Reconciler acts on the check states of workloads that hold quota. Its
// requests name a Workload.
type Reconciler struct {
	client client.Client
	rec    events.EventRecorder
	clock  clock.PassiveClock
	evict  EvictWithBackoff
}

// Setup feeds AdmissionChecks to sched and registers the Reconciler. The
// returned function reports whether the checks' informer has delivered its
// initial list: until then a queue that names a check looks inactive.
func Setup(ctx context.Context, mgr ctrl.Manager, sched *scheduler.Scheduler, evict EvictWithBackoff) (synced func() bool, err error) {
	inf, err := mgr.GetCache().GetInformer(ctx, &berthv1.AdmissionCheck{})
	if err != nil {
		return nil, err
	}
	set := func(obj any) {
		if ac, ok := obj.(*berthv1.AdmissionCheck); ok {
			sched.SetAdmissionCheck(ac.Name, meta.IsStatusConditionTrue(ac.Status.Conditions, berthv1.AdmissionCheckActive))
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: set,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*berthv1.AdmissionCheck)
			n, ok2 := obj.(*berthv1.AdmissionCheck)
			if !ok1 || !ok2 || active(o) != active(n) {
				set(obj)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if ac, ok := obj.(*berthv1.AdmissionCheck); ok {
				sched.DeleteAdmissionCheck(ac.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	r := &Reconciler{client: mgr.GetClient(), rec: mgr.GetEventRecorder("berth-admission-checks"),
		clock: clock.RealClock{}, evict: evict}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("admissionchecks").
		For(&berthv1.Workload{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return checked(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return checked(e.ObjectNew) },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		// A queue whose checks change re-lists them on its waiting workloads.
		Watches(&berthv1.ClusterQueue{}, handler.EnqueueRequestsFromMapFunc(r.waitingIn),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
	return reg.HasSynced, err
}

func active(ac *berthv1.AdmissionCheck) bool {
	return meta.IsStatusConditionTrue(ac.Status.Conditions, berthv1.AdmissionCheckActive)
}

// checked reports a workload whose checks may call for something.
func checked(o client.Object) bool {
	wl, ok := o.(*berthv1.Workload)
	return ok && len(wl.Status.AdmissionChecks) > 0 && workload.HasQuota(wl) && !workload.IsFinished(wl)
}

func (r *Reconciler) waitingIn(ctx context.Context, o client.Object) []reconcile.Request {
	var list berthv1.WorkloadList
	if err := r.client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		wl := &list.Items[i]
		if checked(wl) && !workload.IsAdmitted(wl) && wl.Status.Admission.ClusterQueue == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}})
		}
	}
	return out
}

// Reconcile carries out what the workload's check states call for.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wl berthv1.Workload
	if err := r.client.Get(ctx, req.NamespacedName, &wl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !checked(&wl) {
		return reconcile.Result{}, nil
	}
	var cq berthv1.ClusterQueue
	if err := r.client.Get(ctx, types.NamespacedName{Name: wl.Status.Admission.ClusterQueue}, &cq); err != nil {
		// A workload whose queue is gone is evicted by the admission loop.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	d := admissioncheck.Decide(&wl, cq.Spec.AdmissionChecks)
	switch d.Action {
	case admissioncheck.Admit, admissioncheck.Sync:
		orig := wl.DeepCopy()
		admissioncheck.Apply(&wl, d, cq.Spec.AdmissionChecks, r.clock.Now())
		err := r.client.Status().Patch(ctx, &wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		if err == nil && d.Action == admissioncheck.Admit {
			r.rec.Eventf(&wl, nil, corev1.EventTypeNormal, "Admitted", "AdmissionChecks", "every admission check is Ready")
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	case admissioncheck.Retry:
		r.evict(workload.Key(&wl), admissioncheck.RetryReason, d.Message)
		r.rec.Eventf(&wl, nil, corev1.EventTypeNormal, admissioncheck.RetryReason, "AdmissionChecks", "%s", d.Message)
	case admissioncheck.Reject:
		// spec.active false takes it out of its queue; the admission loop
		// evicts it, naming the check (workload.Deactivation).
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": wl.ResourceVersion},
			"spec":     map[string]any{"active": false}})
		if err := r.client.Patch(ctx, &wl, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		r.rec.Eventf(&wl, nil, corev1.EventTypeWarning, "AdmissionCheckRejected", "AdmissionChecks", "%s", d.Message)
	}
	return reconcile.Result{}, nil
}
