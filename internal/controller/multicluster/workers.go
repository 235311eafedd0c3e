package multicluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/multicluster"
	"github.com/berth-dev/berth/internal/workercluster"
)

// SyncTimeout bounds the wait for a worker's watch to deliver its first lists.
const SyncTimeout = 30 * time.Second

// DialTimeout bounds one attempt to reach a worker.
const DialTimeout = 10 * time.Second

// worker is one WorkerCluster as the dispatcher sees it.
type worker struct {
	// active: reached at the last attempt; since: when its Active
	// condition last changed.
	active bool
	since  time.Time
	// leaving: the WorkerCluster is being deleted (workercluster.Finalizer).
	leaving bool
	// While connected: a client whose reads come from a watch of the copies
	// this manager made there, and a direct reader.
	conn *connection
}

type connection struct {
	key string // what the client was made from; a new kubeconfig makes a new one
	// jobSets: the worker serves JobSets, and the watch includes them.
	// Whether it does is part of key: a worker that starts (or stops)
	// serving them gets a new connection.
	jobSets bool
	client  client.Client
	direct  client.Reader
	stop    context.CancelFunc

	mu        sync.Mutex
	conflicts map[types.NamespacedName]conflict // Jobs there that are not this manager's copies
}

// Workers is the one reconciler of WorkerClusters: it reaches each worker
// and reports so in its Active condition, keeps a watch of this manager's
// copies there while it is reached (what the watch sees of a copy goes to
// events, as the manager Workload it stands for), and, when a
// WorkerCluster is deleted, holds it until those copies are gone.
type Workers struct {
	client    client.Client
	rec       events.EventRecorder
	clock     clock.PassiveClock
	scheme    *runtime.Scheme
	namespace string
	origin    string
	// lostTimeout: how long a worker being removed is waited for while it
	// is not reached.
	lostTimeout time.Duration
	events      chan event.GenericEvent
	// changed is called after a worker comes or goes, with its name.
	changed func(name string)
	// wrap, when set, guards the transport to each worker.
	wrap func(http.RoundTripper) http.RoundTripper
	// dial reaches a worker and says what it runs.
	dial func(ctx context.Context, cfg *rest.Config) (served, error)

	mu       sync.Mutex
	byName   map[string]*worker
	failures map[string]int // failed attempts in a row
	// removed names the WorkerClusters whose removal this controller
	// finished: nothing of theirs is waited for.
	removed map[string]bool
}

func newWorkers(mgr ctrl.Manager, o Options) *Workers {
	return &Workers{client: mgr.GetClient(), rec: mgr.GetEventRecorder("berth-workercluster"), clock: clock.RealClock{},
		scheme: mgr.GetScheme(), namespace: o.Namespace, origin: o.Origin, lostTimeout: o.LostTimeout, wrap: o.Wrap,
		events: make(chan event.GenericEvent, 1024), changed: func(string) {}, dial: serverVersion,
		byName: map[string]*worker{}, failures: map[string]int{}, removed: map[string]bool{}}
}

// get returns what is known of a worker: whether it is reached and since
// when, whether it is leaving, and its connection (nil while it has none).
func (w *Workers) get(name string) (wk worker, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.byName[name]
	if !ok {
		return worker{}, false
	}
	return *p, true
}

// wasRemoved reports a WorkerCluster whose removal this controller finished.
func (w *Workers) wasRemoved(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.removed[name]
}

// names lists the workers known, sorted.
func (w *Workers) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.byName))
	for n := range w.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Reconcile reaches a worker, keeps a connection to it while it is
// reached, reports in its Active condition, and finishes its removal.
func (w *Workers) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wc berthv1.WorkerCluster
	if err := w.client.Get(ctx, req.NamespacedName, &wc); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		w.forget(req.Name, false)
		return reconcile.Result{}, nil
	}
	leaving := wc.DeletionTimestamp != nil
	if !leaving && !controllerutil.ContainsFinalizer(&wc, workercluster.Finalizer) {
		orig := wc.DeepCopy()
		controllerutil.AddFinalizer(&wc, workercluster.Finalizer)
		if err := w.client.Patch(ctx, &wc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if leaving && !controllerutil.ContainsFinalizer(&wc, workercluster.Finalizer) {
		w.forget(wc.Name, false) // not ours to hold
		return reconcile.Result{}, nil
	}
	w.mu.Lock()
	delete(w.removed, wc.Name)
	w.mu.Unlock()

	reason, message, conn := w.reach(ctx, &wc)
	w.mu.Lock()
	if reason == workercluster.Connected {
		delete(w.failures, wc.Name)
	} else {
		w.failures[wc.Name]++
	}
	failures := w.failures[wc.Name]
	w.mu.Unlock()

	now := w.clock.Now()
	old := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive)
	next := &worker{active: reason == workercluster.Connected, leaving: leaving, conn: conn, since: now}
	if old != nil && (old.Status == metav1.ConditionTrue) == next.active {
		next.since = old.LastTransitionTime.Time
	}
	w.set(wc.Name, next)

	var removal string
	if leaving {
		left, err := w.leftOn(ctx, conn)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("WorkerCluster %s: %w", wc.Name, err)
		}
		done, note := workercluster.Removal(reason, left, now.Sub(next.since), w.lostTimeout)
		if done {
			return reconcile.Result{}, w.finishRemoval(ctx, &wc, note)
		}
		removal = note
		if message != "" {
			message += "; " + note
		}
	}
	if err := w.report(ctx, &wc, reason, message, now); err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case leaving && removal != "":
		// Copies going are news from the watch; look again soon anyway, for
		// the timeout and for copies made just before the watch saw them.
		return reconcile.Result{RequeueAfter: min(workercluster.NextAttempt(failures), 5*time.Second)}, nil
	case reason == workercluster.Connected, reason == workercluster.Unreachable:
		return reconcile.Result{RequeueAfter: workercluster.NextAttempt(failures)}, nil
	}
	return reconcile.Result{}, nil // a change of the Secret or the WorkerCluster brings it back
}

// reach reads the worker's kubeconfig, dials it and keeps a watch there
// while it answers. It returns the Active reason and message, and the
// connection (nil unless reached).
func (w *Workers) reach(ctx context.Context, wc *berthv1.WorkerCluster) (reason, message string, conn *connection) {
	cfg, reason, message := Kubeconfig(ctx, w.client, w.namespace, wc)
	if cfg == nil {
		return reason, message, nil
	}
	s, err := w.dial(ctx, cfg)
	if err != nil {
		return workercluster.Unreachable, fmt.Sprintf("%s: %v", cfg.Host, err), nil
	}
	host := cfg.Host
	key := fmt.Sprintf("%s/jobsets=%v", configKey(cfg), s.jobSets)
	if wk, _ := w.get(wc.Name); wk.conn != nil && wk.conn.key == key {
		conn = wk.conn
	} else {
		if w.wrap != nil {
			cfg.Wrap(w.wrap)
		}
		if conn, err = w.connect(ctx, wc.Name, cfg, key, s.jobSets); err != nil {
			return workercluster.Unreachable, fmt.Sprintf("%s: %v", host, err), nil
		}
	}
	message = fmt.Sprintf("reached %s (Kubernetes %s)", host, s.version)
	if !s.jobSets {
		message += "; it does not serve JobSets"
	}
	return workercluster.Connected, message, conn
}

// report writes the Active condition when it says something new, with an
// event when its reason changes.
func (w *Workers) report(ctx context.Context, wc *berthv1.WorkerCluster, reason, message string, now time.Time) error {
	active := metav1.Condition{Type: berthv1.WorkerClusterActive, Status: metav1.ConditionFalse, Reason: reason,
		Message: message, ObservedGeneration: wc.Generation, LastTransitionTime: metav1.NewTime(now)}
	if reason == workercluster.Connected {
		active.Status = metav1.ConditionTrue
	}
	old := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive)
	if old != nil && old.Status == active.Status && old.Reason == active.Reason && old.Message == active.Message &&
		old.ObservedGeneration == active.ObservedGeneration {
		return nil
	}
	orig := wc.DeepCopy()
	meta.SetStatusCondition(&wc.Status.Conditions, active)
	if err := w.client.Status().Patch(ctx, wc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	if old == nil || old.Reason != active.Reason {
		kind := corev1.EventTypeNormal
		if active.Status != metav1.ConditionTrue {
			kind = corev1.EventTypeWarning
		}
		w.rec.Eventf(wc, nil, kind, reason, "Connect", "%s", message)
	}
	return nil
}

// leftOn deletes this manager's copies on a leaving worker (Jobs in the
// foreground, so with their pods) and says how many a direct read still
// shows. The dispatcher deletes them too, workload by workload; this
// catches copies whose manager Workload it no longer looks at.
func (w *Workers) leftOn(ctx context.Context, conn *connection) (int, error) {
	if conn == nil {
		return 0, nil
	}
	objs, err := conn.copies(ctx, conn.direct, w.origin)
	if err != nil {
		return 0, err
	}
	for _, obj := range objs {
		if obj.GetDeletionTimestamp() != nil {
			continue
		}
		uid := obj.GetUID()
		err := conn.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("deleting the copy %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return len(objs), nil
}

// finishRemoval lets a leaving WorkerCluster go, saying what it leaves.
func (w *Workers) finishRemoval(ctx context.Context, wc *berthv1.WorkerCluster, note string) error {
	if note != "" {
		w.rec.Eventf(wc, nil, corev1.EventTypeWarning, "RemovedWithCopies", "Remove", "%s", note)
	}
	orig := wc.DeepCopy()
	controllerutil.RemoveFinalizer(wc, workercluster.Finalizer)
	if err := w.client.Patch(ctx, wc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(err)
	}
	w.forget(wc.Name, true)
	return nil
}

// forget drops a worker's record and connection; removed: its removal is
// finished, so nothing of it is waited for.
func (w *Workers) forget(name string, removed bool) {
	w.mu.Lock()
	delete(w.failures, name)
	if removed {
		w.removed[name] = true
	}
	w.mu.Unlock()
	w.set(name, nil)
}

// set replaces a worker's record (nil: forgets it), closing a connection
// no longer used.
func (w *Workers) set(name string, next *worker) {
	w.mu.Lock()
	old := w.byName[name]
	if next == nil {
		delete(w.byName, name)
	} else {
		w.byName[name] = next
	}
	w.mu.Unlock()
	if old != nil && old.conn != nil && (next == nil || next.conn != old.conn) {
		old.conn.stop()
	}
	if old == nil || next == nil || old.active != next.active || old.leaving != next.leaving || old.conn != next.conn {
		w.changed(name)
	}
	if next != nil && next.conn != nil && (old == nil || old.conn != next.conn) {
		// What the new watch listed first reached the dispatcher before it
		// could use the connection: its copies there are news again.
		w.notifyCopies(next.conn)
	}
}

// notifyCopies sends an event for the manager Workload of every copy the
// connection's watch holds.
func (w *Workers) notifyCopies(conn *connection) {
	objs, err := conn.copies(context.Background(), conn.client, w.origin)
	if err != nil {
		ctrl.Log.WithName("multicluster").Error(err, "listing the copies on a worker")
	}
	for _, obj := range objs {
		w.notify(obj)
	}
}

// copies lists, through r, the copies origin made on the worker: its Jobs
// and JobSets first, then its Workloads.
func (c *connection) copies(ctx context.Context, r client.Reader, origin string) ([]client.Object, error) {
	var out []client.Object
	for _, kind := range dispatchedKinds {
		if kind == &jobSetKind && !c.jobSets {
			continue
		}
		list := kind.newList()
		if err := r.List(ctx, list, client.MatchingLabels{multicluster.OriginLabel: origin}); err != nil {
			return out, err
		}
		out = append(out, kind.items(list)...)
	}
	var wls berthv1.WorkloadList
	if err := r.List(ctx, &wls, client.MatchingLabels{multicluster.OriginLabel: origin}); err != nil {
		return out, err
	}
	for i := range wls.Items {
		out = append(out, &wls.Items[i])
	}
	return out, nil
}

// served is what a worker runs: its Kubernetes version, and whether it
// serves JobSets.
type served struct {
	version string
	jobSets bool
}

// serverVersion asks a worker which Kubernetes it runs, and whether it
// serves JobSets: two small requests, each bounded by DialTimeout.
func serverVersion(_ context.Context, cfg *rest.Config) (served, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = DialTimeout
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return served{}, err
	}
	v, err := d.ServerVersion()
	if err != nil {
		return served{}, err
	}
	out := served{version: v.GitVersion}
	list, err := d.ServerResourcesForGroupVersion(jobsets.GVK.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return served{}, err
	default:
		for _, r := range list.APIResources {
			out.jobSets = out.jobSets || r.Kind == jobsets.GVK.Kind
		}
	}
	return out, nil
}

// UsersOf maps a Secret in namespace to the WorkerClusters whose kubeconfig
// it holds.
func UsersOf(c client.Reader, namespace string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != namespace {
			return nil
		}
		var list berthv1.WorkerClusterList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, wc := range list.Items {
			if wc.Spec.KubeconfigSecret == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: wc.Name}})
			}
		}
		return out
	}
}

// Kubeconfig reads a WorkerCluster's kubeconfig from its Secret in namespace
// and makes a client configuration of it (workercluster.Config). When it
// cannot, it returns nil with the Active reason and a message saying why.
func Kubeconfig(ctx context.Context, c client.Reader, namespace string, wc *berthv1.WorkerCluster) (cfg *rest.Config, reason, message string) {
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: namespace, Name: wc.Spec.KubeconfigSecret}
	if err := c.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, workercluster.SecretNotFound, fmt.Sprintf("Secret %s not found", key)
		}
		return nil, workercluster.SecretNotFound, fmt.Sprintf("reading Secret %s: %v", key, err)
	}
	data, ok := secret.Data[workercluster.SecretKey]
	if !ok {
		return nil, workercluster.BadKubeconfig, fmt.Sprintf("Secret %s has no key %q", key, workercluster.SecretKey)
	}
	cfg, err := workercluster.Config(data)
	if err != nil {
		return nil, workercluster.BadKubeconfig, fmt.Sprintf("Secret %s: %v", key, err)
	}
	return cfg, "", ""
}

func configKey(cfg *rest.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%x\x00%x\x00%x\x00%s", cfg.Host, cfg.BearerToken, cfg.Username, cfg.Password,
		cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData, cfg.TLSClientConfig.ServerName)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// connect starts a watch of this manager's copies on a worker (of its
// JobSets too when it serves them), and waits until it has listed them.
func (w *Workers) connect(ctx context.Context, name string, cfg *rest.Config, key string, jobSets bool) (*connection, error) {
	mine := labels.SelectorFromSet(labels.Set{multicluster.OriginLabel: w.origin})
	watched := []client.Object{&batchv1.Job{}, &berthv1.Workload{}}
	if jobSets {
		watched = append(watched, &jobsetv1.JobSet{})
	}
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = w.scheme
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
		o.Cache.ByObject = map[client.Object]cache.ByObject{}
		for _, obj := range watched {
			o.Cache.ByObject[obj] = cache.ByObject{Label: mine}
		}
	})
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	for _, obj := range watched {
		inf, err := cl.GetCache().GetInformer(runCtx, obj)
		if err == nil {
			_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc:    w.notify,
				UpdateFunc: func(_, o any) { w.notify(o) },
				DeleteFunc: w.notify,
			})
		}
		if err != nil {
			stop()
			return nil, err
		}
	}
	go func() {
		if err := cl.Start(runCtx); err != nil {
			ctrl.Log.WithName("multicluster").Error(err, "watching worker cluster", "worker", name)
		}
	}()
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		stop()
		return nil, fmt.Errorf("the watch of the copies there did not start within %s", SyncTimeout)
	}
	return &connection{key: key, jobSets: jobSets, client: cl.GetClient(), direct: cl.GetAPIReader(), stop: stop,
		conflicts: map[types.NamespacedName]conflict{}}, nil
}

// notify turns an event of a copy into one of the manager's Workload.
func (w *Workers) notify(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	name := o.GetAnnotations()[multicluster.WorkloadAnnotation]
	if name == "" {
		return
	}
	w.events <- event.GenericEvent{Object: &berthv1.Workload{ObjectMeta: metaOf(o.GetNamespace(), name)}}
}

// ConflictTTL is how long a Job in the way of a copy keeps the dispatcher
// from trying that worker again.
const ConflictTTL = 30 * time.Second

type conflict struct {
	why string
	at  time.Time
}

// conflict says why no copy can be made at key, if that was found less
// than ConflictTTL ago.
func (c *connection) conflict(key types.NamespacedName, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.conflicts[key]; ok && now.Sub(f.at) < ConflictTTL {
		return f.why
	}
	delete(c.conflicts, key)
	return ""
}

func (c *connection) setConflict(key types.NamespacedName, why string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conflicts[key] = conflict{why: why, at: now}
}

func metaOf(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
