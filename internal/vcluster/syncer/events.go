package syncer

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// event copies the host event named by req, if it is about a synced Pod,
// into the virtual cluster, about the virtual Pod.
func (s *syncer) event(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var he corev1.Event
	if err := s.host.Get(ctx, req.NamespacedName, &he); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var hp corev1.Pod
	if err := s.host.Get(ctx, client.ObjectKey{Namespace: he.Namespace, Name: he.InvolvedObject.Name}, &hp); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err) // not ours, or gone
	}
	ns, name, uid, ok := translate.Origin(&hp, s.opts.VCluster)
	if !ok || hp.UID != he.InvolvedObject.UID {
		return reconcile.Result{}, nil
	}
	var vp corev1.Pod
	if err := s.virtual.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vp); err != nil || string(vp.UID) != uid {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want := translate.VirtualEvent(&he, &vp)
	var have corev1.Event
	err := s.virtual.Get(ctx, client.ObjectKeyFromObject(want), &have)
	switch {
	case apierrors.IsNotFound(err):
		err = s.virtual.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) { // or its namespace is going
			err = nil
		}
		return reconcile.Result{}, err
	case err != nil:
		return reconcile.Result{}, err
	case translate.EventChanged(want, &have):
		want.ResourceVersion = have.ResourceVersion
		return reconcile.Result{}, client.IgnoreNotFound(s.virtual.Update(ctx, want))
	}
	return reconcile.Result{}, nil
}
