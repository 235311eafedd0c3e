package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// WorkloadName is the name of an object's Workload: prefix (its kind), its
// name cut to 200 characters, and a hash of its UID, so that it is stable
// for the object and different for a new object of the same name.
func WorkloadName(prefix, name string, uid types.UID) string {
	sum := sha256.Sum256([]byte(uid))
	if len(name) > 200 {
		name = name[:200]
	}
	return prefix + "-" + name + "-" + hex.EncodeToString(sum[:])[:5]
}

// NewWorkload makes the Workload of owner (of kind gvk), named name, owned
// and controlled by it so that it goes when the owner goes.
func NewWorkload(owner client.Object, gvk schema.GroupVersionKind, name string, labels map[string]string, spec berthv1.WorkloadSpec) *berthv1.Workload {
	yes := true
	if spec.MaximumExecutionTimeSeconds == nil {
		// A bad value was refused when the object was made (Holder).
		spec.MaximumExecutionTimeSeconds, _ = MaxExecTime(owner.GetLabels())
	}
	return &berthv1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: owner.GetNamespace(), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(),
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: spec,
	}
}

// FollowPods makes wl keep its quota until the pods pods selects (in its
// namespace) are gone, however its object goes (package podsgone): it
// records the selector and puts berth's finalizer on. It reports whether it
// changed wl.
func FollowPods(wl *berthv1.Workload, pods labels.Set) bool {
	sel := pods.String()
	if wl.Annotations[berthv1.PodSelectorAnnotation] == sel && controllerutil.ContainsFinalizer(wl, berthv1.PodsGoneFinalizer) {
		return false
	}
	if wl.Annotations == nil {
		wl.Annotations = map[string]string{}
	}
	wl.Annotations[berthv1.PodSelectorAnnotation] = sel
	controllerutil.AddFinalizer(wl, berthv1.PodsGoneFinalizer)
	return true
}

// Forget takes berth's finalizer (FollowPods) off wl: its quota no longer
// waits for the pods its selector finds, which are none of berth's
// business any more.
func Forget(ctx context.Context, c client.Client, wl *berthv1.Workload) error {
	orig := wl.DeepCopy()
	if !controllerutil.RemoveFinalizer(wl, berthv1.PodsGoneFinalizer) {
		return nil
	}
	return client.IgnoreNotFound(c.Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// Unqueued lets go of workload (by name) of obj (a kind's), which lost its
// queue label while it was held (package guard refuses it otherwise): the
// Workload is deleted, and keeps its quota until obj's pods are gone
// (package podsgone); if obj already runs again (held false), unqueued, its
// pods are none of berth's business and the Workload goes at once. One that
// is finished, going, or not obj's own (a manager's prebuilt copy) stays.
func Unqueued(ctx context.Context, c client.Client, rec events.EventRecorder, obj client.Object, kind, workloadName string, held bool) error {
	var wl berthv1.Workload
	if err := c.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: workloadName}, &wl); err != nil {
		return client.IgnoreNotFound(err)
	}
	if wl.DeletionTimestamp != nil || workload.IsFinished(&wl) || !metav1.IsControlledBy(&wl, obj) {
		return nil
	}
	if !held {
		if err := Forget(ctx, c, &wl); err != nil {
			return err
		}
	}
	rec.Eventf(obj, &wl, corev1.EventTypeNormal, "NotQueued", "Admission", "its Workload %s is deleted: the %s has no queue label", wl.Name, kind)
	return client.IgnoreNotFound(c.Delete(ctx, &wl))
}

// Adopt makes a prebuilt Workload (one made before its object, as a
// manager's copy on a worker cluster is) the own of owner, of kind gvk, so
// that it goes when the owner goes. It reports whether it changed wl.
func Adopt(wl *berthv1.Workload, owner client.Object, gvk schema.GroupVersionKind) bool {
	for _, ref := range wl.OwnerReferences {
		if ref.UID == owner.GetUID() {
			return false
		}
	}
	wl.OwnerReferences = append(wl.OwnerReferences, NewWorkload(owner, gvk, wl.Name, nil, wl.Spec).OwnerReferences...)
	return true
}

// AdmittedFlavors reads the ResourceFlavors a pod set of wl was admitted in.
func AdmittedFlavors(ctx context.Context, r client.Reader, wl *berthv1.Workload, podSet string) ([]*berthv1.ResourceFlavor, error) {
	var out []*berthv1.ResourceFlavor
	for _, name := range FlavorNames(wl.Status.Admission, podSet) {
		var rf berthv1.ResourceFlavor
		if err := r.Get(ctx, types.NamespacedName{Name: name}, &rf); err != nil {
			return nil, fmt.Errorf("ResourceFlavor %s of Workload %s/%s: %w", name, wl.Namespace, wl.Name, err)
		}
		out = append(out, &rf)
	}
	return out, nil
}

// Placed reports whether the admission gave a pod set a topology assignment.
func Placed(a *berthv1.Admission, podSet string) bool {
	if a == nil {
		return false
	}
	for _, psa := range a.PodSetAssignments {
		if psa.Name == podSet && psa.TopologyAssignment != nil {
			return true
		}
	}
	return false
}

// AdmittedCount is how many pods of podSet the admission covers, 0 when it
// names none.
func AdmittedCount(a *berthv1.Admission, podSet string) int32 {
	if a == nil {
		return 0
	}
	for _, psa := range a.PodSetAssignments {
		if psa.Name == podSet {
			return psa.Count
		}
	}
	return 0
}

// Release gives back the quota of a stopping workload whose pods are gone
// (workload.ReleaseStopped), with one status patch onto the version read.
func Release(ctx context.Context, c client.Client, wl *berthv1.Workload, now time.Time) error {
	orig := wl.DeepCopy()
	workload.ReleaseStopped(wl, now)
	return client.IgnoreNotFound(c.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// Finish marks wl finished (workload.SetFinished) with one status patch:
// its object ended. A Workload that is gone needs nothing.
func Finish(ctx context.Context, c client.Client, wl *berthv1.Workload, reason, message string, now time.Time) error {
	orig := wl.DeepCopy()
	workload.SetFinished(wl, reason, message, now)
	return client.IgnoreNotFound(c.Status().Patch(ctx, wl, client.MergeFrom(orig)))
}

// Start lets obj run with wl's admission: the kind's Start with the flavors
// each pod set was admitted in, written with one update, and said on obj
// with an event. An object that is gone needs nothing.
//
// The cache's Workload may lag the API server's while the cache of obj does
// not (after the API server restarted, one relists while the other's watch
// waits to reconnect): it may still show an admission already taken back.
// So wl is read again from live, the API server itself, and obj starts
// only if that read says it is admitted (and not stopping); otherwise the
// change still on its way to the cache brings obj back here.
func Start(ctx context.Context, c client.Client, live client.Reader, rec events.EventRecorder, kind Kind, obj client.Object, wl *berthv1.Workload) error {
	var now berthv1.Workload
	if err := live.Get(ctx, client.ObjectKeyFromObject(wl), &now); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !workload.IsAdmitted(&now) || workload.IsStopping(&now) {
		return nil
	}
	wl = &now
	flavors := map[string][]*berthv1.ResourceFlavor{}
	for _, ps := range wl.Spec.PodSets {
		f, err := AdmittedFlavors(ctx, c, wl, ps.Name)
		if err != nil {
			return err
		}
		flavors[ps.Name] = f
	}
	if err := kind.Start(obj, flavors); err != nil {
		return err
	}
	if s, ok := kind.(Shrinker); ok {
		if err := s.Shrink(obj, func(podSet string) int32 { return AdmittedCount(wl.Status.Admission, podSet) }); err != nil {
			return err
		}
	}
	if s, ok := kind.(Steerer); ok {
		if err := s.Steer(obj, wl.Spec.QueueName, Placed(wl.Status.Admission, "main")); err != nil {
			return err
		}
	}
	if err := c.Update(ctx, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if obj.GetLabels()[berthv1.MultiClusterOriginLabel] == "" {
		// A manager's copy goes without: its user reads the manager's
		// object, which says where it runs, and each dispatch costs the
		// worker's API server one write less.
		rec.Eventf(obj, wl, corev1.EventTypeNormal, "Started", "Admission", "admitted by ClusterQueue %s", wl.Status.Admission.ClusterQueue)
	}
	return nil
}

// Moved says how an object that holds quota through wl now asks for
// another queue, or (by its labels) another priority class, than wl was
// admitted with, or "" when it does not. Only a held-back object can have
// been moved (package guard): its Workload then stops (Stop), gives its
// quota back once its pods are gone, and queues again where the object now
// asks.
func Moved(wl *berthv1.Workload, queue string, labels map[string]string) string {
	_, class := PriorityClassLabel(labels)
	switch {
	case !workload.HasQuota(wl):
		return ""
	case wl.Spec.QueueName != queue:
		return fmt.Sprintf("moved from LocalQueue %s to %s", wl.Spec.QueueName, queue)
	case class != "" && wl.Spec.PriorityClassName != class:
		return fmt.Sprintf("its priority class changed from %q to %q", wl.Spec.PriorityClassName, class)
	}
	return ""
}

// Stop makes wl stop (workload.SetStopping) with one status patch, without
// backing off: its quota is given back once its object's pods are gone.
func Stop(ctx context.Context, c client.Client, wl *berthv1.Workload, reason, message string, now time.Time) error {
	orig := wl.DeepCopy()
	workload.SetStopping(wl, reason, message, now, false)
	return client.IgnoreNotFound(c.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// Suspend holds obj back again (hold sets its suspend field) and puts back
// its templates (restore) in the same write, saying why in an event. A
// damaged record of the templates is said on obj, and obj is held anyway.
func Suspend(ctx context.Context, c client.Client, rec events.EventRecorder, obj client.Object, hold func(), restore func() (bool, error), why string) error {
	hold()
	if _, err := restore(); err != nil {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, "InvalidAnnotation", "Admission", "%v", err)
	}
	if err := c.Update(ctx, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	rec.Eventf(obj, nil, corev1.EventTypeNormal, "Suspended", "Admission", "suspended: %s", why)
	return nil
}

// RestoreTemplates writes obj with the templates it had before it was
// started put back (restore), when that changes it. A damaged record is said
// on obj and left: berth never loops on stored data it cannot read.
func RestoreTemplates(ctx context.Context, c client.Client, rec events.EventRecorder, obj client.Object, restore func() (bool, error)) error {
	changed, err := restore()
	if err != nil {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, "InvalidAnnotation", "Admission", "%v", err)
		return nil
	}
	if !changed {
		return nil
	}
	return client.IgnoreNotFound(c.Update(ctx, obj))
}

// MarkPodsReady records on wl that its pods are all Ready
// (workload.SetPodsReady, msg saying how many), with one status patch onto
// the version read.
func MarkPodsReady(ctx context.Context, c client.Client, wl *berthv1.Workload, msg string, now time.Time) error {
	orig := wl.DeepCopy()
	workload.SetPodsReady(wl, msg, now)
	return client.IgnoreNotFound(c.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// Resync makes a pending Workload ask for what its object now does: its
// pod sets, queue and priority, with one patch onto the version read.
func Resync(ctx context.Context, c client.Client, wl *berthv1.Workload, podSets []berthv1.PodSet, queue string, priority *int32, class string) error {
	orig := wl.DeepCopy()
	wl.Spec.PodSets = podSets
	wl.Spec.QueueName = queue
	wl.Spec.Priority = priority
	wl.Spec.PriorityClassName = class
	return client.IgnoreNotFound(c.Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}
