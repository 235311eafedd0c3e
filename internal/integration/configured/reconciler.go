package configured

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/workload"
)

// Reconciler keeps each queued object of one configured kind and its
// Workload in step.
type Reconciler struct {
	kind   Kind
	client client.Client
	// live reads from the API server, not the cache: pods (the cache holds
	// only queued Pods), and the Workload before a start.
	live  client.Reader
	rec   events.EventRecorder
	clock clock.Clock
	// podsReady: record when a running object's pods are all Ready
	// (--wait-for-pods-ready).
	podsReady bool
	// fences keep a replica that led before from starting an object whose
	// quota is given back.
	fences integration.Fences
}

// podsPoll is how often a stopping object's pods are looked for again:
// they are not watched (the controller caches only the Pods it queues).
const podsPoll = 500 * time.Millisecond

// Setup registers the reconciler of c with mgr. With podsReady it records
// the Workload's PodsReady condition.
func Setup(mgr ctrl.Manager, c *Compiled, podsReady bool) error {
	k := Kind{C: c}
	r := &Reconciler{kind: k, client: mgr.GetClient(), live: mgr.GetAPIReader(),
		rec: mgr.GetEventRecorder("berth-" + strings.ToLower(c.Kind)), clock: clock.RealClock{}, podsReady: podsReady}
	queued := integration.QueuedBefore(func(o client.Object) bool { return integration.QueueName(o.GetLabels()) != "" })
	list := func() client.ObjectList {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(c.GVK.GroupVersion().WithKind(c.Kind + "List"))
		return l
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("configured-"+strings.ToLower(c.Kind)+"-"+strings.ReplaceAll(c.Group, ".", "-")).
		For(k.New(), builder.WithPredicates(queued)).
		Owns(&berthv1.Workload{}).
		Watches(&berthv1.WorkloadPriorityClass{}, handler.EnqueueRequestsFromMapFunc(integration.OfClass(r.client, list))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile brings one object and its Workload in step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	k := r.kind
	obj := k.New()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	u := obj.(*unstructured.Unstructured)
	if u.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil // the garbage collector takes the Workload
	}
	suspended := k.C.Suspended(u)
	queue := k.QueueName(u)
	if queue == "" {
		return reconcile.Result{}, integration.Unqueued(ctx, r.client, r.rec, u, k.C.Kind, k.WorkloadName(u), suspended)
	}
	var wl berthv1.Workload
	err := r.client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: k.WorkloadName(u)}, &wl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil

	if finished, failed := k.Finished(u); finished {
		if exists && !workload.IsFinished(&wl) {
			reason, msg := k.C.Kind+"Succeeded", k.C.Kind+" succeeded"
			if failed {
				reason, msg = k.C.Kind+"Failed", k.C.Kind+" failed"
			}
			return reconcile.Result{}, integration.Finish(ctx, r.client, &wl, reason, msg, r.clock.Now())
		}
		return reconcile.Result{}, nil
	}
	if exists && workload.IsFinished(&wl) {
		return reconcile.Result{}, nil
	}
	if exists && wl.DeletionTimestamp != nil {
		// Deleted by hand while the object lives: it stops; the Workload
		// keeps its quota until its pods are gone (package podsgone).
		if !suspended {
			return reconcile.Result{}, r.suspend(ctx, u, "its Workload "+wl.Name+" is being deleted")
		}
		return reconcile.Result{}, nil
	}

	if !exists {
		if !suspended {
			// It got past the webhook (created before berth ran, say): it
			// must not run without quota.
			return reconcile.Result{}, r.suspend(ctx, u, "it is queued in LocalQueue "+queue+" and holds no quota")
		}
		if Injected(u) {
			return reconcile.Result{}, r.restore(ctx, u)
		}
		if why := k.Refuse(u); why != "" {
			r.rec.Eventf(u, nil, corev1.EventTypeWarning, "NotQueued", "Admission", "%s", why)
			return reconcile.Result{}, nil
		}
		pods, _ := k.C.ReadPodSets(u) // Refuse read them
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, u, k.PriorityClass(u))
		if err := r.client.Create(ctx, k.NewWorkload(u, pods, queue, priority, class)); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating Workload for %s %s/%s: %w", k.C.Kind, u.GetNamespace(), u.GetName(), err)
		}
		return reconcile.Result{}, nil
	}

	if workload.IsStopping(&wl) {
		// Evicted: its quota is given back once it is suspended and the
		// API server lists none of its pods still running.
		if !suspended {
			return reconcile.Result{}, r.suspend(ctx, u, "its Workload "+wl.Name+" is evicted")
		}
		var pods corev1.PodList
		if err := r.live.List(ctx, &pods, client.InNamespace(u.GetNamespace()), client.MatchingLabels(Pods(u))); err != nil {
			return reconcile.Result{}, err
		}
		if !Stopped(pods.Items) {
			return reconcile.Result{RequeueAfter: podsPoll}, nil
		}
		return reconcile.Result{}, r.fences.Release(ctx, r.client, u, &wl, Injected(u), r.clock.Now())
	}

	if suspended {
		why := integration.Moved(&wl, queue, u.GetLabels())
		if why == "" && workload.HasQuota(&wl) && k.Reshaped(u, wl.Spec.PodSets) {
			why = "asks for other pods"
		}
		if why != "" {
			msg := fmt.Sprintf("%s %s %s while suspended; it gives its quota back once its pods are gone, and queues again", k.C.Kind, u.GetName(), why)
			r.rec.Eventf(u, &wl, corev1.EventTypeNormal, "Requeued", "Admission", "%s", msg)
			return reconcile.Result{}, integration.Stop(ctx, r.client, &wl, "Moved", msg, r.clock.Now())
		}
	}

	if workload.IsAdmitted(&wl) {
		if !suspended {
			if r.podsReady && workload.AwaitsPods(&wl) {
				return r.recordPodsReady(ctx, u, &wl)
			}
			return reconcile.Result{}, nil // running
		}
		return reconcile.Result{}, integration.Start(ctx, r.client, r.live, r.rec, k, u, &wl)
	}

	// Not admitted: it must be suspended, with its own templates.
	if !suspended {
		return reconcile.Result{}, r.suspend(ctx, u, "its Workload "+wl.Name+" is not admitted")
	}
	if Injected(u) {
		return reconcile.Result{}, r.restore(ctx, u)
	}
	if !workload.HasQuota(&wl) {
		pods, err := k.C.ReadPodSets(u)
		if err != nil {
			r.rec.Eventf(u, &wl, corev1.EventTypeWarning, "NotQueued", "Admission", "%s %s: %v", k.C.Kind, u.GetName(), err)
			return reconcile.Result{}, nil
		}
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, u, k.PriorityClass(u))
		if InSync(&wl, pods, queue, priority) {
			return reconcile.Result{}, nil
		}
		orig := wl.DeepCopy()
		wl.Spec.PodSets, wl.Spec.QueueName, wl.Spec.Priority, wl.Spec.PriorityClassName = pods, queue, priority, class
		return reconcile.Result{}, client.IgnoreNotFound(r.client.Patch(ctx, &wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
	}
	return reconcile.Result{}, nil
}

// recordPodsReady records on wl that u's pods are all Ready, once they
// are; until then it looks again (pods are not watched), and package
// podsready evicts wl if they are not by its timeout.
func (r *Reconciler) recordPodsReady(ctx context.Context, u *unstructured.Unstructured, wl *berthv1.Workload) (reconcile.Result, error) {
	var pods corev1.PodList
	if err := r.live.List(ctx, &pods, client.InNamespace(u.GetNamespace()), client.MatchingLabels(Pods(u))); err != nil {
		return reconcile.Result{}, err
	}
	// Pods of a default template carry no label of u's: not looked for.
	unfollowed := r.kind.C.Unfollowed(u)
	var want int32
	for _, a := range wl.Status.Admission.PodSetAssignments {
		if !slices.Contains(unfollowed, a.Name) {
			want += a.Count
		}
	}
	ready, msg := PodsReady(pods.Items, want)
	if !ready {
		return reconcile.Result{RequeueAfter: podsPoll}, nil
	}
	return reconcile.Result{}, integration.MarkPodsReady(ctx, r.client, wl, msg, r.clock.Now())
}

// suspend stops u (its controller stops its pods) and restores its
// templates in the same write.
func (r *Reconciler) suspend(ctx context.Context, u *unstructured.Unstructured, why string) error {
	hold := func() { _ = unstructured.SetNestedField(u.Object, true, r.kind.C.Suspend...) } // a map under spec: cannot fail
	return integration.Suspend(ctx, r.client, r.rec, u, hold, func() (bool, error) { return r.kind.Restore(u) }, why)
}

func (r *Reconciler) restore(ctx context.Context, u *unstructured.Unstructured) error {
	return integration.RestoreTemplates(ctx, r.client, r.rec, u, func() (bool, error) { return r.kind.Restore(u) })
}
