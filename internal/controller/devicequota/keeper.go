// Package devicequota is the I/O of package devicequota's decisions: it
// keeps berth's finalizer on each ResourceClaimTemplate while a workload
// whose devices are counted from it may still be admitted or make pods,
// and takes it off after.
package devicequota

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/devicequota"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch;patch

// byTemplate indexes Workloads that keep their templates by template name.
const byTemplate = "devicequota.template"

// Keeper puts devicequota.Finalizer on and takes it off.
type Keeper struct{ client client.Client }

// Setup registers the Keeper with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &berthv1.Workload{}, byTemplate, func(o client.Object) []string {
		wl := o.(*berthv1.Workload)
		if !devicequota.Keeps(wl) {
			return nil
		}
		return devicequota.TemplatesOf(wl)
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("device-templates").
		For(&resourcev1.ResourceClaimTemplate{}).
		Watches(&berthv1.Workload{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var out []reconcile.Request
			for _, name := range devicequota.TemplatesOf(o.(*berthv1.Workload)) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}})
			}
			return out
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(&Keeper{client: mgr.GetClient()})
}

// Reconcile makes one template's finalizer say whether a workload keeps it.
func (k *Keeper) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var t resourcev1.ResourceClaimTemplate
	if err := k.client.Get(ctx, req.NamespacedName, &t); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var users berthv1.WorkloadList
	if err := k.client.List(ctx, &users, client.InNamespace(t.Namespace), client.MatchingFields{byTemplate: t.Name}); err != nil {
		return reconcile.Result{}, err
	}
	orig := t.DeepCopy()
	var changed bool
	if len(users.Items) > 0 {
		changed = controllerutil.AddFinalizer(&t, devicequota.Finalizer)
	} else {
		changed = controllerutil.RemoveFinalizer(&t, devicequota.Finalizer)
	}
	if !changed {
		return reconcile.Result{}, nil
	}
	err := k.client.Patch(ctx, &t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("ResourceClaimTemplate %s/%s: %w", t.Namespace, t.Name, err)
	}
	return reconcile.Result{}, nil
}
