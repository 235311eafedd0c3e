package syncer

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// node keeps the virtual Node named by req while its host node runs a
// tenant Pod, up to date with it, and deletes it after.
func (s *syncer) node(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	h, err := getOrNil(ctx, s.host, req.NamespacedName, &corev1.Node{})
	if err != nil {
		return reconcile.Result{}, err
	}
	v, err := getOrNil(ctx, s.virtual, req.NamespacedName, &corev1.Node{})
	if err != nil {
		return reconcile.Result{}, err
	}
	if v != nil && v.Labels[translate.NodeLabel] != "true" {
		return reconcile.Result{}, nil // a tenant's own Node object
	}
	used := false
	if h != nil {
		var pods corev1.PodList
		if err := s.host.List(ctx, &pods, client.InNamespace(s.opts.HostNamespace), client.MatchingFields{nodeNameIndex: h.Name}); err != nil {
			return reconcile.Result{}, err
		}
		used = len(pods.Items) > 0
	}
	switch {
	case !used && v != nil:
		err := s.virtual.Delete(ctx, v, client.Preconditions{UID: &v.UID})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return reconcile.Result{}, err
	case used && v == nil:
		return reconcile.Result{}, s.ensureNode(ctx, h.Name)
	case used:
		want := translate.VirtualNode(h, s.opts.NodeLabels)
		labels, status := translate.NodeChanged(want, v)
		if labels {
			u := v.DeepCopy()
			u.Labels, u.Spec.Unschedulable = want.Labels, want.Spec.Unschedulable
			if err := s.virtual.Update(ctx, u); err != nil {
				return reconcile.Result{}, err
			}
			v = u
		}
		if status {
			u := v.DeepCopy()
			u.Status = want.Status
			if err := s.virtual.Status().Update(ctx, u); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	return reconcile.Result{}, nil
}

// ensureNode makes the virtual Node for host node name if there is none.
func (s *syncer) ensureNode(ctx context.Context, name string) error {
	var v corev1.Node
	if err := s.virtual.Get(ctx, client.ObjectKey{Name: name}, &v); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	var h corev1.Node
	if err := s.host.Get(ctx, client.ObjectKey{Name: name}, &h); err != nil {
		return err
	}
	want := translate.VirtualNode(&h, s.opts.NodeLabels)
	created := want.DeepCopy()
	if err := s.virtual.Create(ctx, created); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	created.Status = want.Status
	return s.virtual.Status().Update(ctx, created)
}
