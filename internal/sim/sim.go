package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/delayqueue"
	"github.com/berth-dev/berth/internal/sim/ipam"
	"github.com/berth-dev/berth/internal/sim/nodepool"
	"github.com/berth-dev/berth/internal/sim/stage"
)

// Config is how a simulator runs.
type Config struct {
	// Stages from berth's defaults and stage files, already layered.
	Stages []*kwokv1.Stage
	// ClusterStages: also use Stage objects from the cluster.
	ClusterStages bool
	// NodeSelector picks the nodes the simulator manages.
	NodeSelector labels.Selector
	// Pool, when set, is made to exist: its nodes are created (and those it
	// made beyond its count deleted) at start.
	Pool *nodepool.Pool
	// Workers apply stages concurrently (one object at a time each).
	Workers int
	// LeaseDuration is what node Leases declare; they are renewed every
	// RenewInterval, jittered by a tenth either way.
	LeaseDuration, RenewInterval time.Duration
	// HealthAddr serves /healthz, /readyz and /metrics ("" serves nothing).
	HealthAddr string
	// Profiling adds Go's /debug/pprof handlers to HealthAddr.
	Profiling bool
	// Version is what nodes report as their kubelet version.
	Version string
	Clock   clock.Clock
	Log     logr.Logger
	Seed    uint64
}

// DefaultConfig has berth's default stages, every node labelled
// berth.dev/sim-node=true, and kubelet-like leases.
func DefaultConfig() (Config, error) {
	defaults, err := stage.Defaults()
	if err != nil {
		return Config{}, err
	}
	return Config{
		Stages: defaults, ClusterStages: true,
		NodeSelector: labels.SelectorFromSet(labels.Set{nodepool.OwnerLabel: "true"}),
		Workers:      32, LeaseDuration: 40 * time.Second, RenewInterval: 30 * time.Second,
		Version: "v1.36.3", Clock: clock.RealClock{}, Log: logr.Discard(), Seed: uint64(time.Now().UnixNano()),
	}, nil
}

// Validate reports what is wrong with the configuration, naming the setting.
func (c Config) Validate() error {
	switch {
	case c.NodeSelector == nil || c.NodeSelector.Empty():
		return errors.New("node selector: required; an empty selector would take over every node in the cluster")
	case c.Workers < 1:
		return fmt.Errorf("workers: %d; at least 1", c.Workers)
	case c.LeaseDuration < time.Second:
		return fmt.Errorf("lease duration: %v; at least 1s", c.LeaseDuration)
	case c.RenewInterval <= 0 || c.RenewInterval*11/10 >= c.LeaseDuration:
		return fmt.Errorf("lease renew interval: %v; must be positive and well under the lease duration %v", c.RenewInterval, c.LeaseDuration)
	}
	if c.Pool != nil {
		if err := c.Pool.Validate(); err != nil {
			return err
		}
		if !c.NodeSelector.Matches(labels.Set(c.Pool.Node(0).Labels)) {
			return fmt.Errorf("node selector %q does not select the nodes it would create (labels %v)", c.NodeSelector, c.Pool.Node(0).Labels)
		}
	}
	if _, err := compileSet(c.Stages); err != nil {
		return err
	}
	return nil
}

// Simulator plays the kubelets of the nodes it manages.
type Simulator struct {
	cfg      Config
	rest     *rest.Config
	client   kubernetes.Interface
	recorder events.EventRecorder
	log      logr.Logger
	clock    clock.Clock
	started  time.Time // for templates' StartTime
	queue    *delayqueue.Queue
	ips      *ipam.Allocator
	leases   *heartbeat
	slices   *slicer
	stages   atomic.Pointer[stageSet]
	nodes    cache.SharedIndexInformer
	pods     cache.SharedIndexInformer
	// others are the kinds besides Node and Pod that stages act on.
	others *kinds
	// runCtx is Run's context, once it has synced: stages loaded later
	// start their kinds' watches under it.
	runCtx atomic.Pointer[context.Context]
	ready  atomic.Bool
	// stageVersions: the uid/generation of each Stage object last reported.
	stageVersions map[string]string
	// knownNodes are the managed nodes seen so far, by name.
	knownNodes sync.Map
	metrics    *simMetrics
	writes     *writer
	rngMu      sync.Mutex
	rng        *rand.Rand
	overlayMu  sync.Mutex
	// overlay holds objects as our own writes returned them, until the
	// informer catches up: the newest copy wins, so a worker never acts on
	// a cache that has not seen its last write yet.
	overlay map[string]runtime.Object
	retries map[string]int // by key, guarded by overlayMu
}

// New prepares a simulator; Run starts it.
func New(cfg Config, restCfg *rest.Config) (*Simulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	set, _ := compileSet(cfg.Stages) // validated above
	restCfg = rest.CopyConfig(restCfg)
	// Protobuf costs the API server (and us) far less than JSON to encode
	// and decode; patches are still sent as JSON.
	restCfg.ContentType = "application/vnd.kubernetes.protobuf"
	restCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	s := &Simulator{
		cfg: cfg, rest: restCfg, client: client, log: cfg.Log, clock: cfg.Clock, started: cfg.Clock.Now(),
		queue: delayqueue.New(cfg.Clock), ips: ipam.New(),
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		overlay: map[string]runtime.Object{}, retries: map[string]int{},
		metrics: newSimMetrics(),
	}
	s.stages.Store(set)
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	s.others = newKinds(dyn, client.Discovery())
	s.writes = newWriter(restCfg, client, dyn, s.others)
	s.leases = newHeartbeat(client, cfg, s.log.WithName("leases"), s.metrics)
	return s, nil
}

// Ready reports whether the simulator has synced and made its node pool.
func (s *Simulator) Ready() bool { return s.ready.Load() }

// Run simulates until ctx ends.
func (s *Simulator) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.cfg.HealthAddr != "" {
		if err := s.serveHealth(ctx); err != nil {
			return err
		}
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: s.client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	s.recorder = broadcaster.NewRecorder(scheme.Scheme, "berth-sim")

	stripManagedFields := informers.WithTransform(func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	})
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, stripManagedFields,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = s.cfg.NodeSelector.String() }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, stripManagedFields,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		}))
	s.nodes = nodeFactory.Core().V1().Nodes().Informer()
	s.slices = newSlicer(s.client, s.nodes.GetStore(), s.recorder, s.log.WithName("slices"))
	s.pods = podFactory.Core().V1().Pods().Informer()
	if err := s.pods.AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		return err
	}
	if _, err := s.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: s.onNode, UpdateFunc: func(_, n any) { s.onNode(n) }, DeleteFunc: s.onNodeDelete,
	}); err != nil {
		return err
	}
	if _, err := s.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: s.onPod, UpdateFunc: func(_, p any) { s.onPod(p) }, DeleteFunc: s.onPodDelete,
	}); err != nil {
		return err
	}
	if s.cfg.ClusterStages {
		if err := s.watchClusterStages(ctx); err != nil {
			return err
		}
	}
	// Nodes first, so their addresses are reserved before any pod asks for
	// one, and pods find their node owned.
	nodeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.nodes.HasSynced) {
		return ctx.Err()
	}
	podFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.pods.HasSynced) {
		return ctx.Err()
	}
	defer nodeFactory.Shutdown()
	defer podFactory.Shutdown()
	s.watchKinds(ctx, s.stages.Load())
	defer s.others.factory.Shutdown()
	s.runCtx.Store(&ctx)

	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.queue.ShutDown()
	defer s.leases.queue.ShutDown()
	for range s.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.work(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.leases.run(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.slices.run(ctx)
	}()
	if s.cfg.Pool != nil {
		if err := s.reconcilePool(ctx); err != nil {
			return err
		}
	}
	s.ready.Store(true)
	s.log.Info("simulating", "nodes", len(s.nodes.GetStore().ListKeys()), "pods", len(s.pods.GetStore().ListKeys()),
		"stages", len(s.stages.Load().byName))
	<-ctx.Done()
	return nil
}

const byNode = "node"

// key names an object in the queue: its kind, then its informer key.
func key(kind string, obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return kind + "/" + ns + "/" + obj.GetName()
	}
	return kind + "/" + obj.GetName()
}

func (s *Simulator) ownsNode(name string) bool {
	_, ok, _ := s.nodes.GetStore().GetByKey(name)
	return ok
}

func (s *Simulator) onNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if err := s.ips.ReserveNode(n.Name, a.Address); err != nil {
				s.log.V(1).Info("node keeps an address outside berth's range", "node", n.Name, "reason", err.Error())
			}
		}
	}
	s.leases.track(n)
	s.slices.offer(n)
	s.consider("Node", n)
	if _, seen := s.knownNodes.LoadOrStore(n.Name, true); !seen {
		// Pods may have been seen before their node: look at them now.
		pods, _ := s.pods.GetIndexer().ByIndex(byNode, n.Name)
		for _, p := range pods {
			s.onPod(p)
		}
	}
}

func (s *Simulator) onNodeDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	s.forget(key("Node", n), string(n.UID))
	s.knownNodes.Delete(n.Name)
	s.leases.untrack(n.Name)
	s.slices.forget(n.Name)
	s.ips.ReleaseNode(n.Name)
}

func (s *Simulator) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !s.ownsNode(p.Spec.NodeName) {
		return
	}
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		// A kubelet frees a finished pod's sandbox and its address, though
		// the status still shows it; a node runs many more pods over time
		// than its range holds.
		s.ips.ReleasePod(p.Spec.NodeName, string(p.UID))
	case p.Status.PodIP != "" && !p.Spec.HostNetwork:
		if err := s.ips.ReservePod(p.Spec.NodeName, string(p.UID), p.Status.PodIP); err != nil {
			s.log.V(1).Info("pod keeps an address outside its node's range", "pod", p.Namespace+"/"+p.Name, "reason", err.Error())
		}
	}
	s.consider("Pod", p)
}

func (s *Simulator) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	s.forget(key("Pod", p), string(p.UID))
	s.ips.ReleasePod(p.Spec.NodeName, string(p.UID))
}

// forget drops what is queued and remembered for a deleted object.
func (s *Simulator) forget(k, uid string) {
	s.queue.Cancel(k, uid)
	s.overlayMu.Lock()
	delete(s.overlay, k)
	delete(s.retries, k)
	s.overlayMu.Unlock()
}

// consider offers the stage that applies to this version of the object, if
// any. A version older than one our own writes returned is stale: skipped.
func (s *Simulator) consider(kind string, obj runtime.Object) {
	m := obj.(metav1.Object)
	k := key(kind, m)
	s.overlayMu.Lock()
	if w, ok := s.overlay[k]; ok && w.(metav1.Object).GetUID() == m.GetUID() {
		if rvLess(m.GetResourceVersion(), w.(metav1.Object).GetResourceVersion()) {
			s.overlayMu.Unlock()
			return
		}
		delete(s.overlay, k) // the informer has caught up
	}
	s.overlayMu.Unlock()
	s.offer(kind, obj)
}

// offer queues the stage that applies to this version of the object, if any.
func (s *Simulator) offer(kind string, obj runtime.Object) {
	m := obj.(metav1.Object)
	k := key(kind, m)
	doc, err := toMap(kind, obj)
	if err != nil {
		s.log.Error(err, "reading object", "object", k)
		return
	}
	st := s.pick(kind, doc)
	if st == nil {
		return
	}
	now := s.clock.Now()
	s.rngMu.Lock()
	d := st.Delay(doc, now, s.rng)
	s.rngMu.Unlock()
	s.queue.Offer(delayqueue.Item{Key: k, UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion(),
		Stage: st.Name, Due: now.Add(d)})
	s.metrics.pending.Set(float64(s.queue.Len()))
}

func (s *Simulator) pick(kind string, doc map[string]any) *stage.Stage {
	stages := s.stages.Load().byKind[kind]
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return stage.Select(stages, doc, s.rng)
}

// latest is the newest copy of the object: the informer's, or what our own
// last write returned if the informer has not seen it yet.
func (s *Simulator) latest(k string) runtime.Object {
	kind, rest := splitKey(k)
	var store cache.Store
	switch kind {
	case "Node":
		store = s.nodes.GetStore()
	case "Pod":
		store = s.pods.GetStore()
	default:
		if o, ok := s.others.get(kind); ok {
			store = o.informer.GetStore()
		}
	}
	var cur runtime.Object
	if store != nil {
		if o, ok, _ := store.GetByKey(rest); ok {
			cur = o.(runtime.Object)
		}
	}
	s.overlayMu.Lock()
	defer s.overlayMu.Unlock()
	if w, ok := s.overlay[k]; ok {
		if cur == nil {
			return nil // deleted since we wrote it
		}
		if cur.(metav1.Object).GetUID() == w.(metav1.Object).GetUID() &&
			rvLess(cur.(metav1.Object).GetResourceVersion(), w.(metav1.Object).GetResourceVersion()) {
			return w
		}
	}
	return cur
}

func splitKey(k string) (kind, rest string) {
	for i := range len(k) {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return k, ""
}

// rvLess compares resource versions as the etcd revisions they are.
func rvLess(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// toMap is the object as the stage engine sees it: its JSON form, with its
// apiVersion and kind.
func toMap(kind string, obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy().Object, nil // other kinds come with both
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = "v1", kind
	return m, nil
}

func (s *Simulator) serveHealth(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.HealthAddr)
	if err != nil {
		return fmt.Errorf("health address %s: %w", s.cfg.HealthAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			http.Error(w, "syncing", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	reg := prometheus.NewRegistry()
	s.metrics.register(reg)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if s.cfg.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return nil
}
