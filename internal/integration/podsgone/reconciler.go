package podsgone

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler carries out Decide for the Workloads it concerns: those being
// deleted with berth's finalizer on, and those whose owner is gone.
type Reconciler struct {
	client client.Client
	// live lists pods from the API server: the controller caches only the
	// Pods berth queues itself, not those of Jobs.
	live  client.Reader
	rec   events.EventRecorder
	clock clock.Clock
}

// Setup registers the Reconciler with mgr.
func Setup(mgr ctrl.Manager) error {
	r := &Reconciler{client: mgr.GetClient(), live: mgr.GetAPIReader(), rec: mgr.GetEventRecorder("berth-pods-gone"), clock: clock.RealClock{}}
	concerned := predicate.NewPredicateFuncs(func(o client.Object) bool {
		wl, ok := o.(*berthv1.Workload)
		return ok && ((wl.DeletionTimestamp != nil && Guarded(wl)) || OwnerGone(wl))
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("pods-gone").
		For(&berthv1.Workload{}, builder.WithPredicates(concerned)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile looks at one Workload, and its pods when Decide needs them.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wl berthv1.Workload
	if err := r.client.Get(ctx, req.NamespacedName, &wl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var pods []Pod
	if Count(&wl) {
		sel, err := Selector(&wl)
		if err != nil {
			// Its pods cannot be found: keeping the quota would keep it for
			// ever. Said on the Workload, and let go as if they were gone.
			r.rec.Eventf(&wl, nil, corev1.EventTypeWarning, "BadPodSelector", "PodsGone", "%v; its quota is given back without waiting for its pods", err)
		} else {
			var list corev1.PodList
			if err := r.live.List(ctx, &list, client.InNamespace(wl.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
				return reconcile.Result{}, fmt.Errorf("listing the pods of Workload %s: %w", req.NamespacedName, err)
			}
			for i := range list.Items {
				pods = append(pods, PodOf(&list.Items[i]))
			}
		}
	}
	going := false
	if len(pods) > 0 && wl.DeletionTimestamp != nil {
		var err error
		if going, err = r.ownerGoing(ctx, &wl); err != nil {
			return reconcile.Result{}, err
		}
	}
	d := Decide(&wl, pods, going, r.clock.Now())
	for _, name := range d.Delete {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: wl.Namespace, Name: name}}
		if err := r.client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting pod %s/%s of Workload %s, whose owner is going: %w", wl.Namespace, name, wl.Name, err)
		}
	}
	switch d.Action {
	case Wait:
		return reconcile.Result{RequeueAfter: d.RecheckAfter}, nil
	case LetGo:
		return reconcile.Result{}, integration.Forget(ctx, r.client, &wl)
	case Finish:
		if err := integration.Finish(ctx, r.client, &wl, d.Reason, d.Message, r.clock.Now()); err != nil {
			return reconcile.Result{}, err
		}
		r.rec.Eventf(&wl, nil, corev1.EventTypeNormal, d.Reason, "PodsGone", "%s: its quota is given back", d.Message)
	}
	return reconcile.Result{}, nil
}

// ownerGoing reports whether the object wl was made for is gone, or being
// deleted, as the API server says now (read as metadata: any kind).
func (r *Reconciler) ownerGoing(ctx context.Context, wl *berthv1.Workload) (bool, error) {
	ref := metav1.GetControllerOfNoCopy(wl)
	if ref == nil {
		return true, nil
	}
	owner := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind}}
	err := r.live.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name}, owner)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading %s %s/%s, the owner of Workload %s: %w", ref.Kind, wl.Namespace, ref.Name, wl.Name, err)
	}
	return owner.UID != ref.UID || owner.DeletionTimestamp != nil, nil
}
