package trainjobs

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

	trainerv1 "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/internal/written"
)

// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch

// Reconciler keeps each queued TrainJob and its Workload in step.
type Reconciler struct {
	client client.Client
	// live reads from the API server, not the cache.
	live      client.Reader
	rec       events.EventRecorder
	clock     clock.Clock
	podsReady bool
	written   *written.Versions
	// fences keep a replica that led before from starting a TrainJob
	// whose quota is given back.
	fences integration.Fences
}

// Setup registers the TrainJob reconciler with mgr. It watches the JobSets
// Trainer makes for TrainJobs (their pods, and their Jobs' end), and with
// podsReady records the Workload's PodsReady condition.
func Setup(mgr ctrl.Manager, podsReady bool) error {
	w := written.New(time.Now)
	r := &Reconciler{client: w.Client(mgr.GetClient()), live: mgr.GetAPIReader(), rec: mgr.GetEventRecorder("berth-trainjobs"),
		clock: clock.RealClock{}, podsReady: podsReady, written: w}
	queued := integration.QueuedBefore(func(o client.Object) bool {
		tj, ok := o.(*trainerv1.TrainJob)
		return ok && QueueName(tj) != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("trainjob").
		For(&trainerv1.TrainJob{}, builder.WithPredicates(queued)).
		Owns(&berthv1.Workload{}).
		Watches(&jobsetv1.JobSet{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &trainerv1.TrainJob{}, handler.OnlyControllerOwner())).
		// A stopping TrainJob's quota waits for its JobSet's Jobs, which
		// Trainer names after the TrainJob.
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name := o.GetLabels()[jobsetv1.JobSetNameKey]
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Watches(&berthv1.WorkloadPriorityClass{}, handler.EnqueueRequestsFromMapFunc(
			integration.OfClass(r.client, func() client.ObjectList { return &trainerv1.TrainJobList{} }))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile brings one TrainJob and its Workload in step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var tj trainerv1.TrainJob
	if err := r.client.Get(ctx, req.NamespacedName, &tj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if tj.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // the garbage collector takes the Workload
	}
	queue := QueueName(&tj)
	if queue == "" {
		return reconcile.Result{}, integration.Unqueued(ctx, r.client, r.rec, &tj, "TrainJob", WorkloadName(&tj), Suspended(&tj))
	}
	var wl berthv1.Workload
	err := r.client.Get(ctx, types.NamespacedName{Namespace: tj.Namespace, Name: WorkloadName(&tj)}, &wl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	if r.written.Stale(&tj) || (exists && r.written.Stale(&wl)) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}

	if finished, failed := Finished(&tj); finished {
		if exists && !workload.IsFinished(&wl) {
			reason, msg := "TrainJobCompleted", "TrainJob completed"
			if failed {
				reason, msg = "TrainJobFailed", "TrainJob failed"
			}
			return reconcile.Result{}, integration.Finish(ctx, r.client, &wl, reason, msg, r.clock.Now())
		}
		return reconcile.Result{}, nil
	}
	if exists && workload.IsFinished(&wl) {
		return reconcile.Result{}, nil
	}
	if exists && wl.DeletionTimestamp != nil {
		if !Suspended(&tj) {
			return reconcile.Result{}, r.suspend(ctx, &tj, "its Workload "+wl.Name+" is being deleted")
		}
		return reconcile.Result{}, nil
	}

	js, err := r.jobSet(ctx, &tj)
	if err != nil {
		return reconcile.Result{}, err
	}

	if !exists {
		if !Suspended(&tj) {
			return reconcile.Result{}, r.suspend(ctx, &tj, "it is queued in LocalQueue "+queue+" and holds no quota")
		}
		if Restore(&tj) {
			return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, &tj))
		}
		if js == nil {
			return reconcile.Result{}, nil // Trainer makes it; its watch brings the TrainJob back
		}
		if why := RefuseJobSet(&tj, js, queue); why != "" {
			r.rec.Eventf(&tj, nil, corev1.EventTypeWarning, "NotQueued", "Admission", "%s", why)
			return reconcile.Result{}, nil
		}
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &tj, PriorityClass(js))
		if err := r.client.Create(ctx, NewWorkload(&tj, js, queue, priority, class)); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating Workload for TrainJob %s/%s: %w", tj.Namespace, tj.Name, err)
		}
		return reconcile.Result{}, nil
	}

	if workload.IsStopping(&wl) {
		return r.stopping(ctx, &tj, js, &wl)
	}

	if Suspended(&tj) {
		if why := integration.Moved(&wl, queue, tj.Labels); why != "" {
			msg := fmt.Sprintf("TrainJob %s %s while suspended; it gives its quota back once its pods are gone, and queues again", tj.Name, why)
			r.rec.Eventf(&tj, &wl, corev1.EventTypeNormal, "Requeued", "Admission", "%s", msg)
			return reconcile.Result{}, integration.Stop(ctx, r.client, &wl, "Moved", msg, r.clock.Now())
		}
	}

	if workload.IsAdmitted(&wl) {
		if !Suspended(&tj) {
			return r.running(ctx, &tj, js, &wl)
		}
		return reconcile.Result{}, r.start(ctx, &tj, js, &wl)
	}

	// Not admitted: the TrainJob must be suspended, without berth's
	// overrides, and its Workload ask for what its JobSet now does.
	if !Suspended(&tj) {
		return reconcile.Result{}, r.suspend(ctx, &tj, "its Workload "+wl.Name+" is not admitted")
	}
	if Restore(&tj) {
		return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, &tj))
	}
	if js != nil && !workload.HasQuota(&wl) {
		priority, class := integration.PriorityOf(ctx, r.client, r.rec, &tj, PriorityClass(js))
		if !InSync(&wl, js, queue, priority) {
			return reconcile.Result{}, integration.Resync(ctx, r.client, &wl, PodSets(js), queue, priority, class)
		}
	}
	return reconcile.Result{}, nil
}

// jobSet reads the JobSet Trainer made for tj, nil when there is none (yet)
// or the one of its name is not tj's.
func (r *Reconciler) jobSet(ctx context.Context, tj *trainerv1.TrainJob) (*jobsetv1.JobSet, error) {
	var js jobsetv1.JobSet
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(tj), &js); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !MadeFor(&js, tj) {
		return nil, nil
	}
	return &js, nil
}

// start lets an admitted TrainJob run, in two writes: its flavors first as
// overrides, then, once Trainer's JobSet carries them and still asks for
// what was admitted, spec.suspend false.
func (r *Reconciler) start(ctx context.Context, tj *trainerv1.TrainJob, js *jobsetv1.JobSet, wl *berthv1.Workload) error {
	if js == nil {
		return nil
	}
	// As integration.Start: the cache's Workload may lag the API server's.
	var now berthv1.Workload
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(wl), &now); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !workload.IsAdmitted(&now) || workload.IsStopping(&now) {
		return nil
	}
	wl = &now
	if !SameShape(wl.Spec.PodSets, PodSets(js)) {
		// Changed between its admission and its start: it queues again as
		// it now is.
		msg := fmt.Sprintf("TrainJob %s changed after its Workload was admitted: its JobSet asks for other pods; it queues again", tj.Name)
		r.rec.Eventf(tj, wl, corev1.EventTypeNormal, "Requeued", "Admission", "%s", msg)
		return integration.Stop(ctx, r.client, wl, "Changed", msg, r.clock.Now())
	}
	if !Injected(tj) {
		flavors := map[string][]*berthv1.ResourceFlavor{}
		for _, ps := range wl.Spec.PodSets {
			f, err := integration.AdmittedFlavors(ctx, r.client, wl, ps.Name)
			if err != nil {
				return err
			}
			flavors[ps.Name] = f
		}
		Inject(tj, js, wl.Spec.QueueName, flavors)
		return client.IgnoreNotFound(r.client.Update(ctx, tj))
	}
	if !Carries(js, tj) {
		return nil // Trainer remakes the JobSet; its watch brings the TrainJob back
	}
	setSuspend(tj, false)
	if err := r.client.Update(ctx, tj); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.rec.Eventf(tj, wl, corev1.EventTypeNormal, "Started", "Admission", "admitted by ClusterQueue %s", wl.Status.Admission.ClusterQueue)
	return nil
}

// running watches a started TrainJob: its JobSet may ask for no more than
// was admitted, and with --wait-for-pods-ready its pods' readiness is
// recorded.
func (r *Reconciler) running(ctx context.Context, tj *trainerv1.TrainJob, js *jobsetv1.JobSet, wl *berthv1.Workload) (reconcile.Result, error) {
	if js == nil {
		return reconcile.Result{}, nil
	}
	if !jobsets.Suspended(js) && !SameShape(wl.Spec.PodSets, PodSets(js)) {
		return reconcile.Result{}, r.suspend(ctx, tj, "its JobSet "+js.Name+" asks for other pods than its Workload "+wl.Name+" was admitted for")
	}
	if r.podsReady && !workload.PodsReady(wl) && workload.PodsReadySubject(wl) {
		if ready, msg := jobsets.PodsReady(js); ready {
			return reconcile.Result{}, integration.MarkPodsReady(ctx, r.client, wl, msg, r.clock.Now())
		}
	}
	return reconcile.Result{}, nil
}

// stopping follows an evicted TrainJob: suspended, its JobSet's Jobs stop;
// once their pods are gone, berth's overrides come off (Trainer lets them
// change only then) and the quota is given back.
func (r *Reconciler) stopping(ctx context.Context, tj *trainerv1.TrainJob, js *jobsetv1.JobSet, wl *berthv1.Workload) (reconcile.Result, error) {
	if !Suspended(tj) {
		return reconcile.Result{}, r.suspend(ctx, tj, "its Workload "+wl.Name+" is evicted")
	}
	if js != nil {
		stopped, err := r.stopped(ctx, r.client, js)
		if err != nil || !stopped {
			return reconcile.Result{}, err // its JobSet's changes bring it back
		}
		if wl.Status.ClusterName != "" {
			return reconcile.Result{}, nil
		}
		// The cache may lag: the API server itself must say the pods are
		// gone before the quota is.
		if stopped, err = r.stopped(ctx, r.live, js); err != nil || !stopped {
			return reconcile.Result{RequeueAfter: time.Second}, err
		}
	}
	if Restore(tj) {
		return reconcile.Result{}, client.IgnoreNotFound(r.client.Update(ctx, tj))
	}
	// Restored, it no longer says whether it started: fenced either way.
	return reconcile.Result{}, r.fences.Release(ctx, r.client, tj, wl, false, r.clock.Now())
}

func (r *Reconciler) stopped(ctx context.Context, from client.Reader, js *jobsetv1.JobSet) (bool, error) {
	var fresh jobsetv1.JobSet
	if err := from.Get(ctx, client.ObjectKeyFromObject(js), &fresh); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	var children batchv1.JobList
	if err := from.List(ctx, &children, client.InNamespace(js.Namespace), client.MatchingLabels{jobsets.UIDLabel: string(js.UID)}); err != nil {
		return false, err
	}
	return jobsets.Stopped(&fresh, children.Items), nil
}

// suspend holds the TrainJob back again; its JobSet follows (Trainer). Its
// overrides stay until its pods are gone: Trainer refuses to change them
// while its Jobs run.
func (r *Reconciler) suspend(ctx context.Context, tj *trainerv1.TrainJob, why string) error {
	return integration.Suspend(ctx, r.client, r.rec, tj, func() { setSuspend(tj, true) }, func() (bool, error) { return false, nil }, why)
}
