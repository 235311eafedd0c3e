package syncer

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// service keeps the host Service of the virtual Service named by req: made
// and updated while it exists, deleted after.
func (s *syncer) service(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	v, err := getOrNil(ctx, s.virtual, req.NamespacedName, &corev1.Service{})
	if err != nil || (v != nil && !translate.Synced(v)) {
		return reconcile.Result{}, err
	}
	key := client.ObjectKey{Namespace: s.opts.HostNamespace, Name: translate.HostName(req.Name, req.Namespace, s.opts.VCluster)}
	h, err := getOrNil(ctx, s.host, key, &corev1.Service{})
	if err != nil {
		return reconcile.Result{}, err
	}
	uid := ""
	if h != nil {
		var ok bool
		if _, _, uid, ok = translate.Origin(h, s.opts.VCluster); !ok {
			return reconcile.Result{}, nil // not the syncer's
		}
	}
	if v == nil || v.DeletionTimestamp != nil || (h != nil && uid != string(v.UID)) {
		if h == nil {
			return reconcile.Result{}, nil
		}
		err := s.host.Delete(ctx, h, client.Preconditions{UID: &h.UID})
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want, err := translate.HostService(v, s.opts)
	if err != nil {
		s.recorder.Eventf(v, nil, corev1.EventTypeWarning, "SyncError", "Sync", "%s", err.Error())
		return reconcile.Result{}, nil
	}
	if h == nil {
		err := s.host.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) {
			return reconcile.Result{RequeueAfter: retry}, nil
		}
		return reconcile.Result{}, err
	}
	if updated, changed := translate.HostServiceUpdate(want, h); changed {
		return reconcile.Result{}, s.host.Update(ctx, updated)
	}
	return reconcile.Result{}, nil
}
