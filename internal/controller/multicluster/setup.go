package multicluster

import (
	"context"
	"net/http"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/multicluster"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups=berth.dev,resources=admissionchecks;multiclusterconfigs;workerclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=admissionchecks/status,verbs=patch
// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters,verbs=patch
// +kubebuilder:rbac:groups=berth.dev,resources=workerclusters/status,verbs=patch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=patch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs/status,verbs=patch
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets/status,verbs=patch
// +kubebuilder:rbac:groups="",namespace=berth-system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options configure multicluster dispatch.
type Options struct {
	// Namespace holds the workers' kubeconfig Secrets.
	Namespace string
	// Origin names this manager on its workers (multicluster.OriginLabel).
	Origin string
	// LostTimeout: how long a worker may be unreachable before its
	// workloads are queued again; default multicluster.DefaultLostTimeout.
	LostTimeout time.Duration
	// SpreadAfter: how long a waiting workload's one copy is given before
	// every worker gets one (multicluster.Input.SpreadAfter; 0: at once).
	SpreadAfter time.Duration
	// Wrap, when set, guards the transport to every worker (the leader's
	// fence: a replica that lost its lease writes to no worker either).
	Wrap func(http.RoundTripper) http.RoundTripper
}

// Setup registers the workers' connections, the checks' Active condition
// and the dispatcher with mgr.
func Setup(mgr ctrl.Manager, o Options) error {
	if o.LostTimeout == 0 {
		o.LostTimeout = multicluster.DefaultLostTimeout
	}
	c := mgr.GetClient()
	workers := newWorkers(mgr, o)
	d := &Dispatcher{client: c, rec: mgr.GetEventRecorder("berth-multicluster"), clock: clock.RealClock{},
		workers: workers, origin: o.Origin, lostTimeout: o.LostTimeout, spreadAfter: o.SpreadAfter,
		firstCopies: map[types.NamespacedName]firstCopy{}, lastWorker: map[string]string{}}
	d.started = d.clock.Now()
	checks := &Checks{client: c, clock: clock.RealClock{}}
	// A worker that comes or goes is news to the workloads that wait for
	// a worker and to those that run on it, found through an index rather
	// than by going through every Workload; and, once connected, to those
	// with copies there (Workers.notifyCopies).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &berthv1.Workload{}, dispatchIndex,
		func(o client.Object) []string { return DispatchKeys(o.(*berthv1.Workload)) }); err != nil {
		return err
	}
	workers.changed = func(name string) {
		for _, key := range []string{waitingForWorker, name} {
			var list berthv1.WorkloadList
			if err := c.List(context.Background(), &list, client.MatchingFields{dispatchIndex: key}); err != nil {
				ctrl.Log.WithName("multicluster").Error(err, "listing the workloads a worker change concerns", "worker", name)
				continue
			}
			for i := range list.Items {
				workers.events <- event.GenericEvent{Object: &berthv1.Workload{ObjectMeta: metaOf(list.Items[i].Namespace, list.Items[i].Name)}}
			}
		}
	}

	if err := ctrl.NewControllerManagedBy(mgr).
		Named("workercluster").
		// Its own status writes are no news: a spec change, a deletion
		// (which changes the generation), the Secret, or the next attempt
		// brings it back.
		For(&berthv1.WorkerCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(UsersOf(c, o.Namespace))).
		Complete(workers); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("multicluster-checks").
		For(&berthv1.AdmissionCheck{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&berthv1.MultiClusterConfig{}, handler.EnqueueRequestsFromMapFunc(checks.all)).
		Watches(&berthv1.WorkerCluster{}, handler.EnqueueRequestsFromMapFunc(checks.all),
			builder.WithPredicates(activeChanged)).
		Complete(checks); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("multicluster-dispatch").
		For(&berthv1.Workload{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			wl, ok := o.(*berthv1.Workload)
			return ok && (len(wl.Status.AdmissionChecks) > 0 || wl.Status.ClusterName != "")
		}))).
		// The manager's Jobs that run elsewhere: their status is copied.
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			job := o.(*batchv1.Job)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: job.Namespace, Name: jobs.WorkloadName(job)}}}
		}), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			job, ok := o.(*batchv1.Job)
			return ok && job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == multicluster.ManagedBy
		}))).
		Watches(&berthv1.MultiClusterConfig{}, handler.EnqueueRequestsFromMapFunc(d.dispatched)).
		WatchesRawSource(source.Channel(workers.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 16}).
		Complete(d)
}

var activeChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*berthv1.WorkerCluster)
	n, ok2 := e.ObjectNew.(*berthv1.WorkerCluster)
	return !ok1 || !ok2 || meta.IsStatusConditionTrue(o.Status.Conditions, berthv1.WorkerClusterActive) !=
		meta.IsStatusConditionTrue(n.Status.Conditions, berthv1.WorkerClusterActive)
}}

// dispatchIndex indexes Workloads by DispatchKeys.
const dispatchIndex = "berth.dev/dispatch"

// waitingForWorker is DispatchKeys' key for a workload that holds quota
// behind admission checks and runs on no worker yet. No worker is named so:
// names are DNS labels.
const waitingForWorker = ":waiting"

// DispatchKeys says which worker changes concern a Workload: waitingForWorker
// while it holds quota behind admission checks and runs nowhere, the
// worker's name while it runs on one, none once it has finished (a finished
// workload is never dispatched again) or while it holds no quota.
func DispatchKeys(wl *berthv1.Workload) []string {
	switch {
	case workload.IsFinished(wl):
		return nil
	case wl.Status.ClusterName != "":
		return []string{wl.Status.ClusterName}
	case len(wl.Status.AdmissionChecks) > 0 && workload.HasQuota(wl):
		return []string{waitingForWorker}
	}
	return nil
}

// dispatched lists the workloads a change of a MultiClusterConfig may
// concern: those waiting for a worker and those running on one it names or
// on any worker known, found through the index (DispatchKeys), never by
// going through every Workload.
func (d *Dispatcher) dispatched(ctx context.Context, o client.Object) []reconcile.Request {
	keys := append([]string{waitingForWorker}, d.workers.names()...)
	if cfg, ok := o.(*berthv1.MultiClusterConfig); ok {
		for _, name := range cfg.Spec.Clusters {
			if !slices.Contains(keys, name) {
				keys = append(keys, name)
			}
		}
	}
	var out []reconcile.Request
	for _, key := range keys {
		var list berthv1.WorkloadList
		if err := d.client.List(ctx, &list, client.MatchingFields{dispatchIndex: key}); err != nil {
			ctrl.Log.WithName("multicluster").Error(err, "listing the workloads a config change concerns")
			continue
		}
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
		}
	}
	return out
}

// Dispatched says whether the Jobs and JobSets of a LocalQueue run on
// worker clusters: whether its ClusterQueue has a multicluster check. The
// Job and JobSet webhooks ask it (jobs.Kind.Dispatched, jobsets.Kind's) of
// each new one, from the cache.
func Dispatched(c client.Reader) func(namespace, queue string) bool {
	return func(namespace, queue string) bool {
		ctx := context.Background()
		var lq berthv1.LocalQueue
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: queue}, &lq); err != nil {
			return false
		}
		var cq berthv1.ClusterQueue
		if err := c.Get(ctx, types.NamespacedName{Name: lq.Spec.ClusterQueue}, &cq); err != nil {
			return false
		}
		for _, name := range cq.Spec.AdmissionChecks {
			var ac berthv1.AdmissionCheck
			if err := c.Get(ctx, types.NamespacedName{Name: name}, &ac); err == nil &&
				ac.Spec.ControllerName == berthv1.MultiClusterControllerName {
				return true
			}
		}
		return false
	}
}
