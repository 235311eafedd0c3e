package jobsets

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/internal/written"
)

// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch

// Reconciler keeps each queued JobSet and its Workload in step.
type Reconciler struct {
	client client.Client
	// live reads from the API server, not the cache.
	live  client.Reader
	rec   events.EventRecorder
	clock clock.Clock
	// podsReady: record when a running JobSet's pods are all Ready
	// (--wait-for-pods-ready).
	podsReady bool
	// written holds the versions client's writes returned: a JobSet or
	// Workload the cache shows from before them is not acted on again.
	written *written.Versions
	// fences keep a replica that led before from starting a JobSet whose
	// quota is given back.
	fences integration.Fences
}

// Setup registers the JobSet reconciler with mgr. It watches the Jobs
// JobSets make, to hear when a stopping JobSet's pods are gone. With
// podsReady it records the Workload's PodsReady condition.
func Setup(mgr ctrl.Manager, podsReady bool) error {
	w := written.New(time.Now)
	r := &Reconciler{client: w.Client(mgr.GetClient()), live: mgr.GetAPIReader(), rec: mgr.GetEventRecorder("berth-jobsets"),
		clock: clock.RealClock{}, podsReady: podsReady, written: w}
	queued := integration.QueuedBefore(func(o client.Object) bool {
		js, ok := o.(*jobsetv1.JobSet)
		return ok && QueueName(js) != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("jobset").
		For(&jobsetv1.JobSet{}, builder.WithPredicates(queued)).
		Owns(&berthv1.Workload{}).
		Watches(&batchv1.Job{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &jobsetv1.JobSet{}, handler.OnlyControllerOwner())).
		Watches(&berthv1.WorkloadPriorityClass{}, handler.EnqueueRequestsFromMapFunc(
			integration.OfClass(r.client, func() client.ObjectList { return &jobsetv1.JobSetList{} }))).
		// As for Jobs: short, independent reconciles, a few at once.
		WithOptions(controller.Options{MaxConcurrentReconciles: 8}).
		Complete(r)
}

// Reconcile brings one JobSet and its Workload in step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var js jobsetv1.JobSet
	if err := r.client.Get(ctx, req.NamespacedName, &js); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if js.DeletionTimestamp != nil {
		// Going away: the garbage collector takes the Workload.
		return reconcile.Result{}, nil
	}
	queue := QueueName(&js)
	if queue == "" {
		// Let go (integration.Unqueued), unless its Workload is a
		// manager's copy, not this JobSet's own.
		if _, prebuilt := Prebuilt(&js); prebuilt {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, integration.Unqueued(ctx, r.client, r.rec, &js, "JobSet", WorkloadName(&js), Suspended(&js))
	}
	var wl berthv1.Workload
	err := r.client.Get(ctx, types.NamespacedName{Namespace: js.Namespace, Name: WorkloadName(&js)}, &wl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	if r.written.Stale(&js) || (exists && r.written.Stale(&wl)) {
		// As for Jobs: the watch event of this reconciler's last write
		// asks again.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}

	if finished, failed := Finished(&js); finished {
		if exists && !workload.IsFinished(&wl) {
			reason, msg := "JobSetCompleted", "JobSet completed"
			if failed {
				reason, msg = "JobSetFailed", "JobSet failed"
			}
			return reconcile.Result{}, integration.Finish(ctx, r.client, &wl, reason, msg, r.clock.Now())
		}
		return reconcile.Result{}, nil
	}
	if exists && workload.IsFinished(&wl) {
		return reconcile.Result{}, nil
	}

	_, prebuilt := Prebuilt(&js)
	if prebuilt && exists {
		if why := PrebuiltMismatch(&wl, &js); why != "" {
			if !Suspended(&js) {
				return reconcile.Result{}, r.suspend(ctx, &js, why)
			}
			r.rec.Eventf(&js, nil, corev1.EventTypeWarning, "PrebuiltMismatch", "Admission", "%s", why)
			return reconcile.Result{}, nil
		}
	}
	if prebuilt && exists && wl.DeletionTimestamp == nil {
		// One write: owned by the JobSet, and following its pods.
		adopted := integration.Adopt(&wl, &js, GVK)
		if followed := integration.FollowPods(&wl, Pods(&js)); adopted || followed {
			return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, &wl))
		}
	}

	if exists && wl.DeletionTimestamp != nil {
		// Its Workload deleted while it lives (by hand, or its namespace
		// going): it stops; the Workload keeps its quota until its pods are
		// gone (package podsgone), then it queues again with a new one.
		if !Suspended(&js) {
			return reconcile.Result{}, r.suspend(ctx, &js, "its Workload "+wl.Name+" is being deleted")
		}
		return reconcile.Result{}, nil
	}

	if !exists {
		if prebuilt {
			// Its Workload was made elsewhere (a manager cluster's copy) and
			// is gone, or not here yet: it has nothing to queue on its own.
			if !Suspended(&js) {
				return reconcile.Result{}, r.suspend(ctx, &js, "its prebuilt Workload "+WorkloadName(&js)+" does not exist")
			}
			return reconcile.Result{}, nil
		}
		if !Suspended(&js) {
			// It got past the webhook (created before berth ran, say): it
			// must not run without quota.
			return reconcile.Result{}, r.suspend(ctx, &js, "it is queued in LocalQueue "+queue+" and holds no quota")
		}
		if Injected(&js) {
			return reconcile.Result{}, r.restore(ctx, &js)
		}
		if why := Refuse(&js); why != "" {
			// Created before berth's webhook could refuse it: say so, and
			// leave it suspended.
			r.rec.Eventf(&js, nil, corev1.EventTypeWarning, "NotQueued", "Admission", "%s", why)
			return reconcile.Result{}, nil
		}
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &js, PriorityClass(&js))
		if err := r.client.Create(ctx, NewWorkload(&js, queue, priority, class)); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating Workload for JobSet %s/%s: %w", js.Namespace, js.Name, err)
		}
		return reconcile.Result{}, nil
	}

	if workload.IsStopping(&wl) {
		// Evicted: its quota is given back once the JobSet is suspended and
		// its Jobs' pods are gone.
		if !Suspended(&js) {
			return reconcile.Result{}, r.suspend(ctx, &js, "its Workload "+wl.Name+" is evicted")
		}
		var children batchv1.JobList
		if err := r.client.List(ctx, &children, client.InNamespace(js.Namespace), client.MatchingLabels{UIDLabel: string(js.UID)}); err != nil {
			return reconcile.Result{}, err
		}
		if !Stopped(&js, children.Items) {
			return reconcile.Result{}, nil // its Jobs' changes bring it back
		}
		if wl.Status.ClusterName != "" {
			// Its pods run on that worker cluster until the dispatcher has
			// seen its copy there gone, and says so by clearing the name.
			return reconcile.Result{}, nil
		}
		// The cache may lag: the API server itself must say the pods are
		// gone before the quota is.
		if err := r.live.List(ctx, &children, client.InNamespace(js.Namespace), client.MatchingLabels{UIDLabel: string(js.UID)}); err != nil {
			return reconcile.Result{}, err
		}
		if !Stopped(&js, children.Items) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, r.fences.Release(ctx, r.client, &js, &wl, Injected(&js), r.clock.Now())
	}

	if !prebuilt && Suspended(&js) {
		if why := integration.Moved(&wl, queue, js.Labels); why != "" {
			msg := fmt.Sprintf("JobSet %s %s while suspended; it gives its quota back once its pods are gone, and queues again", js.Name, why)
			r.rec.Eventf(&js, &wl, corev1.EventTypeNormal, "Requeued", "Admission", "%s", msg)
			return reconcile.Result{}, integration.Stop(ctx, r.client, &wl, "Moved", msg, r.clock.Now())
		}
	}

	if workload.IsAdmitted(&wl) {
		if !Suspended(&js) {
			if r.podsReady && !workload.PodsReady(&wl) && workload.PodsReadySubject(&wl) {
				if ready, msg := PodsReady(&js); ready {
					return reconcile.Result{}, integration.MarkPodsReady(ctx, r.client, &wl, msg, r.clock.Now())
				}
			}
			return reconcile.Result{}, nil // running
		}
		return reconcile.Result{}, integration.Start(ctx, r.client, r.live, r.rec, Kind{}, &js, &wl)
	}

	// Not admitted: the JobSet must be suspended, with its own templates.
	if !Suspended(&js) {
		return reconcile.Result{}, r.suspend(ctx, &js, "its Workload "+wl.Name+" is not admitted")
	}
	if Injected(&js) {
		return reconcile.Result{}, r.restore(ctx, &js)
	}
	if !workload.HasQuota(&wl) {
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &js, PriorityClass(&js))
		if !InSync(&wl, &js, queue, priority) {
			return reconcile.Result{}, integration.Resync(ctx, r.client, &wl, PodSets(&js), queue, priority, class)
		}
	}
	return reconcile.Result{}, nil
}

// suspend stops the JobSet (its controller suspends its Jobs) and restores
// its templates in the same write: the JobSet's webhook lets templates
// change while it is, or is becoming, suspended.
func (r *Reconciler) suspend(ctx context.Context, js *jobsetv1.JobSet, why string) error {
	hold := func() { yes := true; js.Spec.Suspend = &yes }
	return integration.Suspend(ctx, r.client, r.rec, js, hold, func() (bool, error) { return Restore(js) }, why)
}

func (r *Reconciler) restore(ctx context.Context, js *jobsetv1.JobSet) error {
	return integration.RestoreTemplates(ctx, r.client, r.rec, js, func() (bool, error) { return Restore(js) })
}
