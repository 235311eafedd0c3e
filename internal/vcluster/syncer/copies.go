package syncer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// hostCopy is the host copy of a virtual ConfigMap, Secret or
// ServiceAccount.
func (s *syncer) hostCopy(v client.Object) (client.Object, error) {
	switch v := v.(type) {
	case *corev1.ConfigMap:
		return translate.HostConfigMap(v, s.opts), nil
	case *corev1.Secret:
		return translate.HostSecret(v, s.opts)
	case *corev1.ServiceAccount:
		return translate.HostServiceAccount(v, s.opts), nil
	}
	return nil, fmt.Errorf("cannot sync %T", v)
}

// syncRefs makes sure the host has a copy of every object a Pod refers to,
// and returns the first one the virtual cluster does not have (yet).
func (s *syncer) syncRefs(ctx context.Context, pod *corev1.Pod, r translate.Refs) (missing string, err error) {
	type ref struct {
		obj  client.Object
		name string
	}
	var refs []ref
	for _, n := range r.ConfigMaps {
		refs = append(refs, ref{&corev1.ConfigMap{}, n})
	}
	for _, n := range r.Secrets {
		refs = append(refs, ref{&corev1.Secret{}, n})
	}
	refs = append(refs, ref{&corev1.ServiceAccount{}, r.ServiceAccount})
	for _, ref := range refs {
		key := client.ObjectKey{Namespace: pod.Namespace, Name: ref.name}
		if err := s.virtual.Get(ctx, key, ref.obj); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("%T %s", ref.obj, key), nil
			}
			return "", err
		}
		if err := s.syncCopy(ctx, ref.obj, true); err != nil {
			return "", err
		}
	}
	return "", nil
}

// syncCopy brings the host copy of v up to date: made if create says so,
// else only updated when it exists.
func (s *syncer) syncCopy(ctx context.Context, v client.Object, create bool) error {
	want, err := s.hostCopy(v)
	if err != nil {
		s.recorder.Eventf(v, nil, corev1.EventTypeWarning, "SyncError", "Sync", "%s", err.Error())
		return nil
	}
	have := want.DeepCopyObject().(client.Object)
	err = s.host.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err) && create:
		err = s.host.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if _, _, uid, ok := translate.Origin(have, s.opts.VCluster); !ok || uid != string(v.GetUID()) {
		// Another object's, or an earlier one of the same name: the
		// copies reconciler deletes the latter.
		return fmt.Errorf("host %T %s is not the copy of %s/%s yet", have, have.GetName(), v.GetNamespace(), v.GetName())
	}
	want.SetResourceVersion(have.GetResourceVersion())
	want.SetUID(have.GetUID())
	if sameCopy(want, have) {
		return nil
	}
	return s.host.Update(ctx, want)
}

// sameCopy compares what the syncer sets on a copy.
func sameCopy(want, have client.Object) bool {
	if !apiequality.Semantic.DeepEqual(want.GetLabels(), have.GetLabels()) ||
		!apiequality.Semantic.DeepEqual(want.GetAnnotations(), have.GetAnnotations()) {
		return false
	}
	switch w := want.(type) {
	case *corev1.ConfigMap:
		h := have.(*corev1.ConfigMap)
		return apiequality.Semantic.DeepEqual(w.Data, h.Data) && apiequality.Semantic.DeepEqual(w.BinaryData, h.BinaryData)
	case *corev1.Secret:
		return apiequality.Semantic.DeepEqual(w.Data, have.(*corev1.Secret).Data)
	case *corev1.ServiceAccount:
		return apiequality.Semantic.DeepEqual(w.ImagePullSecrets, have.(*corev1.ServiceAccount).ImagePullSecrets)
	}
	return false
}

// copies keeps the host copies of one kind in step with their virtual
// objects: updated when those change, deleted when they go. Copies are
// made only for Pods that refer to them (syncRefs).
type copies struct {
	*syncer
	newObj func() client.Object
}

func (c *copies) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	v := c.newObj()
	err := c.virtual.Get(ctx, req.NamespacedName, v)
	switch {
	case apierrors.IsNotFound(err):
		v = nil
	case err != nil:
		return reconcile.Result{}, err
	case v.GetDeletionTimestamp() != nil:
		v = nil
	}
	h := c.newObj()
	key := client.ObjectKey{Namespace: c.opts.HostNamespace, Name: translate.HostName(req.Name, req.Namespace, c.opts.VCluster)}
	if err := c.host.Get(ctx, key, h); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	_, _, uid, ok := translate.Origin(h, c.opts.VCluster)
	if !ok {
		return reconcile.Result{}, nil // not the syncer's
	}
	if v != nil && uid == string(v.GetUID()) {
		return reconcile.Result{}, c.syncCopy(ctx, v, false)
	}
	// Its virtual object is gone, or was made again under the same name.
	hu := h.GetUID()
	return reconcile.Result{}, client.IgnoreNotFound(c.host.Delete(ctx, h, client.Preconditions{UID: &hu}))
}
