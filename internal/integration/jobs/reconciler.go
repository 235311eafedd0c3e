package jobs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/internal/written"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=batch,resources=jobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;create;patch;update;delete
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=get;patch
// +kubebuilder:rbac:groups=berth.dev,resources=resourceflavors;workloadpriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps each queued Job and its Workload in step.
type Reconciler struct {
	client client.Client
	// live reads from the API server, not the cache.
	live  client.Reader
	rec   events.EventRecorder
	clock clock.Clock
	// podsReady records when an admitted Job's pods are all Ready
	// (--wait-for-pods-ready).
	podsReady bool
	// written holds the versions client's writes returned: a Job or
	// Workload the cache shows from before them is not acted on again.
	written *written.Versions
	// fences keep a replica that led before from starting a Job whose
	// quota is given back.
	fences integration.Fences
}

// Setup registers the Job reconciler with mgr; podsReady records when an
// admitted Job's pods are all Ready (the PodsReady condition). It queues the
// Jobs whose labels ask for a queue: where everything is queued, the webhook
// labels those that ask for none.
func Setup(mgr ctrl.Manager, podsReady bool) error {
	w := written.New(time.Now)
	r := &Reconciler{client: w.Client(mgr.GetClient()), live: mgr.GetAPIReader(), rec: mgr.GetEventRecorder("berth-jobs"),
		clock: clock.RealClock{}, podsReady: podsReady, written: w}
	queued := integration.QueuedBefore(func(o client.Object) bool {
		job, ok := o.(*batchv1.Job)
		return ok && QueueName(job, false) != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("job").
		For(&batchv1.Job{}, builder.WithPredicates(queued)).
		Owns(&berthv1.Workload{}).
		// A class created (or changed) after its Jobs were queued is resolved
		// for those still waiting: objects arrive in any order.
		Watches(&berthv1.WorkloadPriorityClass{}, handler.EnqueueRequestsFromMapFunc(
			integration.OfClass(r.client, func() client.ObjectList { return &batchv1.JobList{} }))).
		// A growth Workload (owned by the Job's Workload) moves its Job's raise on.
		Watches(&berthv1.Workload{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if job := o.GetAnnotations()[berthv1.GrowthOfAnnotation]; job != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: job}}}
			}
			return nil
		})).
		WithOptions(controllerOptions()).
		Complete(r)
}

// Reconcile brings one Job and its Workload in step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var job batchv1.Job
	if err := r.client.Get(ctx, req.NamespacedName, &job); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if job.DeletionTimestamp != nil {
		// Going away: the garbage collector takes the Workload.
		return reconcile.Result{}, nil
	}
	queue := QueueName(&job, false)
	if queue == "" {
		// Let go (integration.Unqueued), unless its Workload is a
		// manager's copy, not this Job's own.
		if _, prebuilt := Prebuilt(&job); prebuilt {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, integration.Unqueued(ctx, r.client, r.rec, &job, "Job", WorkloadName(&job), Suspended(&job))
	}
	var wl berthv1.Workload
	err := r.client.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: WorkloadName(&job)}, &wl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	if r.written.Stale(&job) || (exists && r.written.Stale(&wl)) {
		// The cache has not caught up with this reconciler's last write:
		// the watch event that brings it asks again. (The requeue is in
		// case that event maps to nothing, a Workload not owned yet.)
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}

	if exists && (!workload.IsAdmitted(&wl) || workload.IsStopping(&wl) || Suspended(&job) || workload.IsFinished(&wl)) {
		// A raise is only queued while the Job runs as admitted; its
		// growth Workload never covers pods that run, so it goes at once.
		if gone, err := r.dropGrowth(ctx, &wl); err != nil || gone {
			return reconcile.Result{}, err
		}
	}

	if finished, failed := Finished(&job); finished {
		if exists && !workload.IsFinished(&wl) {
			reason, msg := "JobSucceeded", "Job completed"
			if failed {
				reason, msg = "JobFailed", "Job failed"
			}
			return reconcile.Result{}, integration.Finish(ctx, r.client, &wl, reason, msg, r.clock.Now())
		}
		return reconcile.Result{}, nil
	}

	if exists && workload.IsFinished(&wl) {
		// Final: its quota is given back, and the cache keeps only its
		// outline (workload.Outline), which says no more than that.
		return reconcile.Result{}, nil
	}

	if _, prebuilt := Prebuilt(&job); prebuilt && exists && wl.DeletionTimestamp == nil {
		// One write: owned by the Job, and following its pods.
		adopted := integration.Adopt(&wl, &job, batchv1.SchemeGroupVersion.WithKind("Job"))
		if followed := integration.FollowPods(&wl, Pods(&job)); adopted || followed {
			return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, &wl))
		}
	}

	if exists && wl.DeletionTimestamp != nil {
		// Its Workload deleted while it lives (by hand, or its namespace
		// going): it stops; the Workload keeps its quota until its pods are
		// gone (package podsgone), then it queues again with a new one.
		if !Suspended(&job) {
			return reconcile.Result{}, r.suspend(ctx, &job, "its Workload "+wl.Name+" is being deleted")
		}
		return reconcile.Result{}, nil
	}

	if !exists {
		if _, prebuilt := Prebuilt(&job); prebuilt {
			// Its Workload was made elsewhere and is gone (or not here
			// yet): a Job made for it has nothing to queue on its own.
			if !Suspended(&job) {
				return reconcile.Result{}, r.suspend(ctx, &job, "its prebuilt Workload "+WorkloadName(&job)+" does not exist")
			}
			return reconcile.Result{}, nil
		}
		if !Suspended(&job) {
			// It got past the webhook (created before berth ran, say): it
			// must not run without quota.
			return reconcile.Result{}, r.suspend(ctx, &job, "it is queued in LocalQueue "+queue+" and holds no quota")
		}
		if Injected(&job) {
			return r.restore(ctx, &job)
		}
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &job, job.Spec.Template.Spec.PriorityClassName)
		nw := NewWorkload(&job, queue, priority, class)
		if err := r.client.Create(ctx, nw); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating Workload for Job %s/%s: %w", job.Namespace, job.Name, err)
		}
		return reconcile.Result{}, nil
	}

	if workload.IsStopping(&wl) {
		// Evicted: its quota is given back once the Job is suspended and
		// its pods are gone, so that no other workload is admitted to it
		// while they run.
		if !Suspended(&job) {
			return reconcile.Result{}, r.suspend(ctx, &job, "its Workload "+wl.Name+" is evicted")
		}
		if !Stopped(&job) {
			return reconcile.Result{}, nil // its status changes as its pods go
		}
		if wl.Status.ClusterName != "" {
			// Its pods run on that worker cluster until the dispatcher has
			// seen its copy there gone, and says so by clearing the name.
			return reconcile.Result{}, nil
		}
		// The cache may lag a write that started the Job a moment ago (this
		// Workload's own admission): the API server itself must say its
		// pods are gone before the quota is.
		var live batchv1.Job
		if err := r.live.Get(ctx, req.NamespacedName, &live); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if live.UID != job.UID || !Stopped(&live) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, r.fences.Release(ctx, r.client, &job, &wl, Injected(&job), r.clock.Now())
	}

	if _, prebuilt := Prebuilt(&job); !prebuilt && Suspended(&job) {
		if why := integration.Moved(&wl, queue, job.Labels); why != "" {
			msg := fmt.Sprintf("Job %s %s while suspended; it gives its quota back once its pods are gone, and queues again", job.Name, why)
			r.rec.Eventf(&job, &wl, corev1.EventTypeNormal, "Requeued", "Admission", "%s", msg)
			return reconcile.Result{}, integration.Stop(ctx, r.client, &wl, "Moved", msg, r.clock.Now())
		}
	}

	if workload.IsAdmitted(&wl) && !Suspended(&job) {
		slice, err := r.growthOf(ctx, &wl)
		if err != nil {
			return reconcile.Result{}, err
		}
		if g := NextGrowth(&job, &wl, slice); g.Step != GrowNothing {
			return reconcile.Result{}, r.grow(ctx, &job, &wl, slice, g)
		}
		if n, ok := Shrunk(&wl, &job); ok {
			return r.shrink(ctx, &job, &wl, n)
		}
	}
	if workload.IsAdmitted(&wl) {
		if why := Resized(&wl, &job); why != "" {
			// It would run more (or other) pods than its quota covers
			// (suspended by the webhook in the same write if it grew):
			// its Workload is re-made with the new shape and stops; the
			// steps above then suspend the Job and give the quota back
			// once its pods are gone, and it queues again.
			return reconcile.Result{}, r.evictResized(ctx, &job, &wl, why)
		}
		if !Suspended(&job) {
			if r.podsReady && !workload.PodsReady(&wl) && workload.PodsReadySubject(&wl) {
				if ready, msg := PodsReady(&job, &wl); ready {
					return reconcile.Result{}, integration.MarkPodsReady(ctx, r.client, &wl, msg, r.clock.Now())
				}
			}
			return reconcile.Result{}, nil // running
		}
		if job.Status.StartTime != nil {
			// Suspended before and not yet reset by the Job controller; the
			// template may only change once it is.
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		return reconcile.Result{}, integration.Start(ctx, r.client, r.live, r.rec, Kind{}, &job, &wl)
	}

	// Not admitted: the Job must be suspended, with its own template.
	if !Suspended(&job) {
		return reconcile.Result{}, r.suspend(ctx, &job, "its Workload "+wl.Name+" is not admitted")
	}
	if Injected(&job) {
		return r.restore(ctx, &job)
	}
	if want, err := PendingParallelism(&job); err == nil && want > 0 && !workload.HasQuota(&wl) {
		// A raise kept back while it ran: suspended, it queues with it.
		job.Spec.Parallelism = &want
		delete(job.Annotations, berthv1.PendingParallelismAnnotation)
		return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, &job))
	}
	if !workload.HasQuota(&wl) {
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &job, job.Spec.Template.Spec.PriorityClassName)
		if !InSync(&wl, &job, queue, priority) {
			return reconcile.Result{}, integration.Resync(ctx, r.client, &wl, PodSets(&job), queue, priority, class)
		}
	}
	return reconcile.Result{}, nil
}

// growthOf reads the growth Workload of a Job's Workload wl; nil when it
// has none.
func (r *Reconciler) growthOf(ctx context.Context, wl *berthv1.Workload) (*Slice, error) {
	var g berthv1.Workload
	err := r.client.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: GrowthName(wl.Name)}, &g)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s, ok := SliceOf(&g); ok && metav1.IsControlledBy(&g, wl) {
		return s, nil
	}
	return nil, nil
}

// dropGrowth deletes the growth Workload of wl, if it has one; it reports
// whether it did.
func (r *Reconciler) dropGrowth(ctx context.Context, wl *berthv1.Workload) (bool, error) {
	s, err := r.growthOf(ctx, wl)
	if err != nil || s == nil {
		return false, err
	}
	g := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: wl.Namespace, Name: s.Name}}
	return true, client.IgnoreNotFound(r.client.Delete(ctx, g))
}

// grow takes one step of a running Job's raise (NextGrowth).
func (r *Reconciler) grow(ctx context.Context, job *batchv1.Job, wl *berthv1.Workload, s *Slice, g Growth) error {
	switch g.Step {
	case GrowForget:
		if g.Why != "" {
			r.rec.Eventf(job, wl, corev1.EventTypeWarning, "GrowthRefused", "Admission", "%s", g.Why)
		}
		delete(job.Annotations, berthv1.PendingParallelismAnnotation)
		return client.IgnoreNotFound(r.client.Update(ctx, job))
	case GrowCreate:
		nw, err := NewGrowth(job, wl, g.From, g.To)
		if err != nil {
			return err
		}
		if err := r.client.Create(ctx, nw); err != nil {
			return client.IgnoreAlreadyExists(err)
		}
		r.rec.Eventf(job, wl, corev1.EventTypeNormal, "GrowthQueued", "Admission",
			"Job %s asks for %d pods at once, %d admitted: the %d more wait for quota as Workload %s, its pods keep running",
			job.Name, g.To, g.From, g.To-g.From, nw.Name)
		return nil
	case GrowUpdate:
		var gw berthv1.Workload
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: s.Name}, &gw); err != nil {
			return client.IgnoreNotFound(err)
		}
		gw.Annotations[berthv1.GrowthToAnnotation] = strconv.Itoa(int(g.To))
		gw.Spec.PodSets[0].Count = g.To - g.From
		return client.IgnoreNotFound(r.client.Update(ctx, &gw))
	case GrowMerge:
		// The Job's Workload holds the increase too (its growth Workload
		// still does): then the Job may run it.
		return r.resize(ctx, wl, g.To)
	case GrowRaise:
		// Only while the growth Workload holds its quota still (read from
		// the API server): one preempted meanwhile gave it up, and the
		// Job's Workload goes back to what it held before.
		var live berthv1.Workload
		err := r.live.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: s.Name}, &live)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if ls, ok := SliceOf(&live); err != nil || !ok || !ls.Admitted || ls.To != g.To {
			return r.resize(ctx, wl, g.From)
		}
		job.Spec.Parallelism = ptr.To(g.To)
		if err := r.client.Update(ctx, job); err != nil {
			return client.IgnoreNotFound(err)
		}
		r.rec.Eventf(job, wl, corev1.EventTypeNormal, "Grown", "Admission",
			"Job %s runs %d pods at once instead of %d: the increase was admitted, its pods kept running", job.Name, g.To, g.From)
		return nil
	case GrowDelete:
		if g.Why != "" {
			r.rec.Eventf(job, wl, corev1.EventTypeWarning, "GrowthRefused", "Admission", "%s", g.Why)
		}
		gw := &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: wl.Namespace, Name: s.Name}}
		return client.IgnoreNotFound(r.client.Delete(ctx, gw))
	}
	return nil
}

// evictResized re-makes the Workload of a Job changed while it ran: its pod
// sets become the Job's new ones, then it stops (workload.SetStopping): its
// quota is given back once its pods are gone. The eviction backs off as a
// preemption does.
func (r *Reconciler) evictResized(ctx context.Context, job *batchv1.Job, wl *berthv1.Workload, why string) error {
	own := job.DeepCopy()
	if _, err := RestoreTemplate(own); err != nil {
		r.rec.Eventf(job, nil, corev1.EventTypeWarning, "InvalidAnnotation", "Admission", "%v", err)
		return nil
	}
	orig := wl.DeepCopy()
	wl.Spec.PodSets = PodSets(own)
	if err := r.client.Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	orig = wl.DeepCopy()
	msg := fmt.Sprintf("Job %s changed while running (%s); it is suspended and queued again with its new shape", job.Name, why)
	// Stopping, not evicted at once: the quota stays until its pods (on a
	// worker cluster, its copy there) are gone; the stopping steps above
	// suspend the Job and then give it back.
	workload.SetStopping(wl, "JobResized", msg, r.clock.Now(), true)
	if err := r.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.rec.Eventf(job, wl, corev1.EventTypeNormal, "Requeued", "Admission", "%s", msg)
	return nil
}

// shrink gives back the quota of the pods a running Job no longer runs
// (its parallelism lowered), once they are gone: the Job keeps running
// with the pods it keeps. Its admission is written first: with it, the Job
// no longer looks resized; then its Workload's spec, so that it queues with
// its new size if it is ever queued again.
func (r *Reconciler) shrink(ctx context.Context, job *batchv1.Job, wl *berthv1.Workload, n int32) (reconcile.Result, error) {
	if running := job.Status.Active + ptr.Deref(job.Status.Terminating, 0); running > n {
		return reconcile.Result{RequeueAfter: time.Second}, nil // the Job controller stops the rest; their quota stays till then
	}
	was := wl.Status.Admission.PodSetAssignments[0].Count
	if err := r.resize(ctx, wl, n); err != nil {
		return reconcile.Result{}, err
	}
	r.rec.Eventf(job, wl, corev1.EventTypeNormal, "Shrunk", "Admission",
		"Job %s runs %d pods at once instead of %d: the quota of %d given back, its pods kept running", job.Name, n, was, was-n)
	return reconcile.Result{}, nil
}

// resize has the Job's Workload hold quota for n pods at once (its
// admission) and ask for n (its spec, so that it queues with them if it is
// queued again): the admission first, since it is what the quota counts.
func (r *Reconciler) resize(ctx context.Context, wl *berthv1.Workload, n int32) error {
	orig := wl.DeepCopy()
	workload.ResizeAdmission(wl, n)
	if err := r.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	orig = wl.DeepCopy()
	wl.Spec.PodSets[0].Count = n
	return client.IgnoreNotFound(r.client.Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// suspend stops the Job; its template is restored in a later step, once the
// Job controller has reset its start time (before that, the API refuses
// template changes).
func (r *Reconciler) suspend(ctx context.Context, job *batchv1.Job, why string) error {
	yes := true
	job.Spec.Suspend = &yes
	if err := r.client.Update(ctx, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.rec.Eventf(job, nil, corev1.EventTypeNormal, "Suspended", "Admission", "suspended: %s", why)
	return nil
}

func (r *Reconciler) restore(ctx context.Context, job *batchv1.Job) (reconcile.Result, error) {
	if job.Status.StartTime != nil {
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	changed, err := RestoreTemplate(job)
	if err != nil {
		// Never loop on stored data berth cannot read; say so on the Job.
		r.rec.Eventf(job, nil, corev1.EventTypeWarning, "InvalidAnnotation", "Admission", "%v", err)
		return reconcile.Result{}, nil
	}
	if !changed {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, job))
}
