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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	workerctrl "github.com/berth-dev/berth/internal/controller/workercluster"
	"github.com/berth-dev/berth/internal/multicluster"
)

// SyncTimeout bounds the wait for a worker's watch to deliver its first lists.
const SyncTimeout = 30 * time.Second

// worker is one WorkerCluster as the dispatcher sees it.
type worker struct {
	// active and since come from the WorkerCluster's Active condition.
	active bool
	since  time.Time
	// While connected: a client whose reads come from a watch of the copies
	// this manager made there, and a direct reader.
	conn *connection
}

type connection struct {
	key    string // what the client was made from; a new kubeconfig makes a new one
	client client.Client
	direct client.Reader
	stop   context.CancelFunc

	mu        sync.Mutex
	conflicts map[types.NamespacedName]conflict // Jobs there that are not this manager's copies
}

// Workers keeps a connection to every reached worker. It is a reconciler of
// WorkerClusters; what the watches see of the copies goes to events, as the
// manager Workload each copy stands for.
type Workers struct {
	client    client.Client
	scheme    *runtime.Scheme
	namespace string
	origin    string
	events    chan event.GenericEvent
	// changed is called after a worker comes or goes, with its name.
	changed func(name string)
	// wrap, when set, guards the transport to each worker.
	wrap func(http.RoundTripper) http.RoundTripper

	mu     sync.Mutex
	byName map[string]*worker
}

func newWorkers(mgr ctrl.Manager, namespace, origin string) *Workers {
	return &Workers{client: mgr.GetClient(), scheme: mgr.GetScheme(), namespace: namespace, origin: origin,
		events: make(chan event.GenericEvent, 1024), byName: map[string]*worker{}, changed: func(string) {}}
}

// get returns what is known of a worker: whether it is active and since
// when, and its connection (nil while it has none).
func (w *Workers) get(name string) (active bool, since time.Time, conn *connection, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk, ok := w.byName[name]
	if !ok {
		return false, time.Time{}, nil, false
	}
	return wk.active, wk.since, wk.conn, true
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

// Reconcile connects to a WorkerCluster while it is Active, and drops the
// connection when it is not (its watch would only fail meanwhile).
func (w *Workers) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wc berthv1.WorkerCluster
	if err := w.client.Get(ctx, req.NamespacedName, &wc); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		w.set(req.Name, nil)
		return reconcile.Result{}, nil
	}
	c := meta.FindStatusCondition(wc.Status.Conditions, berthv1.WorkerClusterActive)
	next := &worker{}
	if c != nil {
		next.active, next.since = c.Status == "True", c.LastTransitionTime.Time
	}
	if !next.active {
		w.set(wc.Name, next)
		return reconcile.Result{}, nil
	}
	cfg, _, message := workerctrl.Kubeconfig(ctx, w.client, w.namespace, &wc)
	if cfg == nil {
		// The connection controller reports it; it will not stay Active.
		return reconcile.Result{}, fmt.Errorf("WorkerCluster %s: %s", wc.Name, message)
	}
	key := configKey(cfg)
	if _, _, conn, _ := w.get(wc.Name); conn != nil && conn.key == key {
		next.conn = conn
		w.set(wc.Name, next)
		return reconcile.Result{}, nil
	}
	if w.wrap != nil {
		cfg.Wrap(w.wrap)
	}
	conn, err := w.connect(ctx, wc.Name, cfg, key)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("WorkerCluster %s: %w", wc.Name, err)
	}
	next.conn = conn
	w.set(wc.Name, next)
	return reconcile.Result{}, nil
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
	if old == nil || next == nil || old.active != next.active || old.conn != next.conn {
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
	ctx := context.Background()
	var jobs batchv1.JobList
	var wls berthv1.WorkloadList
	for _, l := range []client.ObjectList{&jobs, &wls} {
		if err := conn.client.List(ctx, l); err != nil {
			ctrl.Log.WithName("multicluster").Error(err, "listing the copies on a worker")
		}
	}
	for i := range jobs.Items {
		w.notify(&jobs.Items[i])
	}
	for i := range wls.Items {
		w.notify(&wls.Items[i])
	}
}

func configKey(cfg *rest.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%x\x00%x\x00%x\x00%s", cfg.Host, cfg.BearerToken, cfg.Username, cfg.Password,
		cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData, cfg.TLSClientConfig.ServerName)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// connect starts a watch of this manager's copies on a worker, and waits
// until it has listed them.
func (w *Workers) connect(ctx context.Context, name string, cfg *rest.Config, key string) (*connection, error) {
	mine := labels.SelectorFromSet(labels.Set{multicluster.OriginLabel: w.origin})
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = w.scheme
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&batchv1.Job{}: {Label: mine}, &berthv1.Workload{}: {Label: mine}}
	})
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	for _, obj := range []client.Object{&batchv1.Job{}, &berthv1.Workload{}} {
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
		return nil, fmt.Errorf("the watch of its Jobs and Workloads did not start within %s", SyncTimeout)
	}
	return &connection{key: key, client: cl.GetClient(), direct: cl.GetAPIReader(), stop: stop,
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
