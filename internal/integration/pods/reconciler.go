package pods

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/internal/written"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps each queued Pod and its Workload in step.
type Reconciler struct {
	client client.Client
	// live reads from the API server, not the cache.
	live  client.Reader
	rec   events.EventRecorder
	clock clock.Clock
	// written holds the versions client's writes returned: a Pod or
	// Workload the cache shows from before them is not acted on again.
	written *written.Versions
}

// Setup registers the Pod reconciler with mgr. It sees only Pods that carry
// berth's queue label: the webhook puts it on every Pod it holds.
func Setup(mgr ctrl.Manager) error {
	w := written.New(time.Now)
	r := &Reconciler{client: w.Client(mgr.GetClient()), live: mgr.GetAPIReader(), rec: mgr.GetEventRecorder("berth-pods"),
		clock: clock.RealClock{}, written: w}
	return ctrl.NewControllerManagedBy(mgr).
		Named("pod").
		For(&corev1.Pod{}).
		Owns(&berthv1.Workload{}).
		// A class that appears after its Pods were queued (integration.OfClass).
		Watches(&berthv1.WorkloadPriorityClass{}, handler.EnqueueRequestsFromMapFunc(
			integration.OfClass(r.client, func() client.ObjectList { return &corev1.PodList{} }))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 8}).
		Complete(r)
}

// Reconcile brings one Pod and its Workload in step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod corev1.Pod
	if err := r.client.Get(ctx, req.NamespacedName, &pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if g, _, _ := Group(&pod); g != "" {
		return reconcile.Result{}, nil // one of a pod group (package podgroups)
	}
	if !controllerutil.ContainsFinalizer(&pod, berthv1.PodFinalizer) && !Gated(&pod) {
		// Not held by berth: created before its webhook ran, or let go.
		return reconcile.Result{}, nil
	}
	var wl berthv1.Workload
	err := r.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: WorkloadName(&pod)}, &wl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	if r.written.Stale(&pod) || (exists && r.written.Stale(&wl)) {
		// As for Jobs: the watch event of this reconciler's last write
		// asks again.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}

	finished, failed := Kind{}.Finished(&pod)
	deleting := pod.DeletionTimestamp != nil
	if finished || (deleting && Gone(&pod, r.clock.Now())) {
		// Over, or going and no longer running: the Workload is done (its
		// quota released), and berth needs the Pod no more.
		if exists && !workload.IsFinished(&wl) {
			reason, msg := "PodDeleted", "Pod deleted"
			switch {
			case finished && failed:
				reason, msg = "PodFailed", "Pod failed"
			case finished:
				reason, msg = "PodSucceeded", "Pod succeeded"
			}
			if err := integration.Finish(ctx, r.client, &wl, reason, msg, r.clock.Now()); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, LetGo(ctx, r.client, &pod)
	}
	if deleting {
		// It runs until its node stops it (then it is finished), or at the
		// latest until its grace period is over.
		return reconcile.Result{RequeueAfter: pod.DeletionTimestamp.Sub(r.clock.Now())}, nil
	}

	queue := Kind{}.QueueName(&pod)
	if !exists {
		if !Gated(&pod) {
			return reconcile.Result{}, r.stop(ctx, &pod, "it runs without a Workload holding quota")
		}
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &pod, pod.Spec.PriorityClassName)
		if err := r.client.Create(ctx, NewWorkload(&pod, queue, priority, class)); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating Workload for Pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return reconcile.Result{}, nil
	}
	if workload.IsFinished(&wl) {
		return reconcile.Result{}, nil // finished by hand: its quota is given back
	}
	if workload.IsStopping(&wl) {
		if Gated(&pod) {
			// It never started: give the quota back, and it queues again;
			// unless the cache lags berth's own start of it, so the API
			// server says.
			var live corev1.Pod
			if err := r.live.Get(ctx, req.NamespacedName, &live); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if live.UID != pod.UID || !Gated(&live) {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, integration.Release(ctx, r.client, &wl, r.clock.Now())
		}
		// It runs: it goes, and its quota with it once it has stopped.
		return reconcile.Result{}, r.stop(ctx, &pod, "its Workload "+wl.Name+" is evicted")
	}
	if workload.IsAdmitted(&wl) {
		if Gated(&pod) {
			return reconcile.Result{}, integration.Start(ctx, r.client, r.live, r.rec, Kind{}, &pod, &wl)
		}
		return reconcile.Result{}, nil // running
	}
	if !Gated(&pod) {
		// Its Workload lost its quota (preempted, a stopped queue): a Pod
		// cannot be held back again, so it goes.
		return reconcile.Result{}, r.stop(ctx, &pod, "its Workload "+wl.Name+" lost its quota")
	}
	if !workload.HasQuota(&wl) {
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &pod, pod.Spec.PriorityClassName)
		if wl.Spec.QueueName != queue || !equality.Semantic.DeepEqual(wl.Spec.Priority, priority) {
			orig := wl.DeepCopy()
			wl.Spec.QueueName, wl.Spec.Priority, wl.Spec.PriorityClassName = queue, priority, class
			return reconcile.Result{}, client.IgnoreNotFound(r.client.Patch(ctx, &wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
		}
	}
	return reconcile.Result{}, nil
}

// stop deletes a Pod that may not run, gracefully; its Workload is finished
// once the Pod has ended.
func (r *Reconciler) stop(ctx context.Context, pod *corev1.Pod, why string) error {
	return Stop(ctx, r.client, r.rec, pod, why, r.clock.Now())
}

// Stop deletes a running Pod whose Workload lost its quota, first marking
// it with the DisruptionTarget condition, as Kubernetes marks the Pods it
// preempts or evicts: its end is then told from a failure (by a Job's
// podFailurePolicy, or a virtual cluster's syncer, which re-queues the
// tenant's Job rather than let it fail).
func Stop(ctx context.Context, c client.Client, rec events.EventRecorder, pod *corev1.Pod, why string, now time.Time) error {
	if pod.DeletionTimestamp == nil && !Disrupted(pod) {
		orig := pod.DeepCopy()
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
			Status: corev1.ConditionTrue, Reason: berthv1.EvictedByBerth, Message: why, LastTransitionTime: metav1.NewTime(now)})
		if err := c.Status().Patch(ctx, pod, client.StrategicMergeFrom(orig)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if err := c.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
		return err
	}
	rec.Eventf(pod, nil, corev1.EventTypeNormal, "Stopped", "Admission", "deleted: %s", why)
	return nil
}

// Disrupted reports whether pod carries a DisruptionTarget condition that
// is true: something is stopping it for a reason of its own.
func Disrupted(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// LetGo removes berth's finalizer from pod.
func LetGo(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	if !controllerutil.ContainsFinalizer(pod, berthv1.PodFinalizer) {
		return nil
	}
	orig := pod.DeepCopy()
	controllerutil.RemoveFinalizer(pod, berthv1.PodFinalizer)
	return client.IgnoreNotFound(c.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}
