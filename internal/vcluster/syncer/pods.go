package syncer

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

type syncer struct {
	opts     translate.Options
	virtual  client.Client
	host     client.Client
	recorder events.EventRecorder
}

// pod syncs one virtual Pod, named by req, with its host Pod.
func (s *syncer) pod(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	v, err := getOrNil(ctx, s.virtual, req.NamespacedName, &corev1.Pod{})
	if err != nil {
		return reconcile.Result{}, err
	}
	hostKey := client.ObjectKey{Namespace: s.opts.HostNamespace, Name: translate.HostName(req.Name, req.Namespace, s.opts.VCluster)}
	h, err := getOrNil(ctx, s.host, hostKey, &corev1.Pod{})
	if err != nil {
		return reconcile.Result{}, err
	}
	// The host cache holds only this virtual cluster's Pods, so h is ours
	// unless a tenant forged the label; its annotations must name it.
	uid := ""
	if h != nil {
		var ok bool
		if _, _, uid, ok = translate.Origin(h, s.opts.VCluster); !ok {
			if v != nil {
				s.recorder.Eventf(v, nil, corev1.EventTypeWarning, "SyncError", "Sync",
					"host Pod %s/%s exists and is not this Pod's; not touching it", h.Namespace, h.Name)
			}
			return reconcile.Result{}, nil
		}
	}

	switch {
	case v == nil:
		return reconcile.Result{}, s.deleteHost(ctx, h)
	case v.DeletionTimestamp != nil:
		if h != nil {
			return reconcile.Result{}, s.deleteHost(ctx, h)
		}
		// Nothing runs it any more; no kubelet in the virtual cluster
		// would end a bound Pod's graceful deletion.
		return reconcile.Result{}, s.forceDelete(ctx, v)
	case h != nil && uid != string(v.UID):
		// Left over from an earlier Pod of the same name.
		return reconcile.Result{}, s.deleteHost(ctx, h)
	case h == nil && translate.HadHostPod(v):
		// Deleted on the host: the virtual Pod goes too.
		return reconcile.Result{}, s.forceDelete(ctx, v)
	case h == nil:
		return s.createHost(ctx, v)
	}
	if why, evicted := translate.EvictedByHost(h); evicted {
		// Before its Pods go: the Job controller must see the Job suspended,
		// not its Pods vanish, or it counts them as failures.
		if err := s.requeueJob(ctx, v, why); err != nil {
			return reconcile.Result{}, err
		}
	}
	if h.DeletionTimestamp == nil {
		want, err := s.hostPod(ctx, v)
		if err != nil {
			s.recorder.Eventf(v, nil, corev1.EventTypeWarning, "SyncError", "Sync", "%s", err.Error())
		} else if updated, changed := translate.HostUpdate(want, h); changed {
			if err := s.host.Update(ctx, updated); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if h.Spec.NodeName != "" && v.Spec.NodeName == "" {
		if err := s.bind(ctx, v, h.Spec.NodeName); err != nil {
			return reconcile.Result{}, err
		}
	}
	if status, changed := translate.PodStatus(h.Status, v.Status); changed {
		patched := v.DeepCopy()
		patched.Status = status
		if err := s.virtual.Status().Patch(ctx, patched, client.MergeFrom(v)); err != nil {
			return reconcile.Result{}, fmt.Errorf("status of virtual pod %s: %w", req, err)
		}
	}
	return reconcile.Result{}, nil
}

// hostPod is the host Pod for v, in the pod group of its Job if the virtual
// cluster's Pods are queued.
func (s *syncer) hostPod(ctx context.Context, v *corev1.Pod) (*corev1.Pod, error) {
	var group *translate.Group
	if ref := metav1.GetControllerOf(v); ref != nil && ref.Kind == "Job" && s.opts.Queue != "" {
		var job batchv1.Job
		if err := s.virtual.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: ref.Name}, &job); err != nil {
			return nil, fmt.Errorf("job %s/%s of pod %s: %w", v.Namespace, ref.Name, v.Name, err)
		}
		group = translate.JobGroup(&job, s.opts.VCluster)
	}
	return translate.HostPod(v, s.opts, group)
}

func (s *syncer) createHost(ctx context.Context, v *corev1.Pod) (reconcile.Result, error) {
	err := translate.CheckNew(v)
	var h *corev1.Pod
	if err == nil {
		h, err = s.hostPod(ctx, v)
	}
	if err != nil {
		// Nothing changes until the Pod does.
		return reconcile.Result{}, s.refuse(ctx, v, err.Error())
	}
	refs := translate.RefsOf(v)
	missing, err := s.syncRefs(ctx, v, refs)
	if err != nil {
		return reconcile.Result{}, err
	}
	if missing != "" {
		log.FromContext(ctx).V(1).Info("waiting for a referenced object", "missing", missing)
		return reconcile.Result{RequeueAfter: retry}, nil
	}
	if err := s.host.Create(ctx, h); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return reconcile.Result{RequeueAfter: retry}, nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return reconcile.Result{RequeueAfter: 10 * retry}, s.refuse(ctx, v, fmt.Sprintf("the host refused pod %s/%s: %v", h.Namespace, h.Name, err))
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// requeueJob suspends the virtual Job of v, whose host Pod the host's berth
// evicts; the jobs controller resumes it once its Pods are gone, and it
// queues again on the host (vcluster.RequeuedAnnotation).
func (s *syncer) requeueJob(ctx context.Context, v *corev1.Pod, why string) error {
	ref := metav1.GetControllerOf(v)
	if ref == nil || ref.Kind != "Job" {
		return nil
	}
	var job batchv1.Job
	if err := s.virtual.Get(ctx, client.ObjectKey{Namespace: v.Namespace, Name: ref.Name}, &job); err != nil || job.UID != ref.UID {
		return client.IgnoreNotFound(err)
	}
	if !translate.SuspendForHost(&job, why) {
		return nil
	}
	if err := s.virtual.Update(ctx, &job); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.recorder.Eventf(&job, nil, corev1.EventTypeNormal, "EvictedByHost", "Suspend",
		"the host evicted its Pods (%s): suspended, so none counts as failed; it resumes, and queues again on the host, once they are gone", why)
	return nil
}

// job resumes a virtual Job the syncer suspended once its Pods are gone.
func (s *syncer) job(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var job batchv1.Job
	if err := s.virtual.Get(ctx, req.NamespacedName, &job); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !translate.ResumeAfterHost(&job) {
		return reconcile.Result{}, nil
	}
	if err := s.virtual.Update(ctx, &job); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	s.recorder.Eventf(&job, nil, corev1.EventTypeNormal, "Resumed", "Resume", "its evicted Pods are gone: resumed, to queue again on the host")
	return reconcile.Result{}, nil
}

// refuse says on the tenant's Pod why the host will not run it: in an
// event, and in its PodScheduled condition, where kubectl shows it.
func (s *syncer) refuse(ctx context.Context, v *corev1.Pod, why string) error {
	s.recorder.Eventf(v, nil, corev1.EventTypeWarning, "SyncError", "Refuse", "%s", why)
	status, changed := translate.Refused(v.Status, why)
	if !changed {
		return nil
	}
	patched := v.DeepCopy()
	patched.Status = status
	if err := s.virtual.Status().Patch(ctx, patched, client.MergeFrom(v)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("status of virtual pod %s/%s: %w", v.Namespace, v.Name, err)
	}
	return nil
}

// deleteHost deletes a host Pod, only the one seen (a UID precondition).
func (s *syncer) deleteHost(ctx context.Context, h *corev1.Pod) error {
	if h == nil || h.DeletionTimestamp != nil {
		return nil
	}
	err := s.host.Delete(ctx, h, client.Preconditions{UID: &h.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func (s *syncer) forceDelete(ctx context.Context, v *corev1.Pod) error {
	err := s.virtual.Delete(ctx, v, client.GracePeriodSeconds(0), client.Preconditions{UID: &v.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// bind places the virtual Pod on the virtual Node of the host node its host
// Pod was scheduled to.
func (s *syncer) bind(ctx context.Context, v *corev1.Pod, node string) error {
	if err := s.ensureNode(ctx, node); err != nil {
		return err
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace, UID: v.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	err := s.virtual.SubResource("binding").Create(ctx, v, b)
	if apierrors.IsConflict(err) {
		return nil // already bound; the next event says where
	}
	return err
}
