package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/top"
	"github.com/berth-dev/berth/internal/workload"
)

//go:embed web
var web embed.FS

// settle is how long the server waits after a change for more before it
// tells the browsers: a burst of admissions is one update, not hundreds.
const settle = 250 * time.Millisecond

// SyncTimeout bounds how long Start waits for the first lists.
const SyncTimeout = time.Minute

// Server serves the dashboard of one cluster from one watch of its queues
// and workloads.
type Server struct {
	cache cache.Cache
	// api reads what the dashboard does not watch (a workload's pods and
	// events), only while a page shows that workload, and at most once per
	// relatedTTL for all the pages that do.
	api client.Client
	// cfg and scheme make a client with a user's own token, for actions.
	cfg     *rest.Config
	scheme  *runtime.Scheme
	actions bool
	token   string // RequireToken

	relatedMu sync.Mutex
	related   map[types.NamespacedName]relatedRead
	drawn     map[string]drawnTopology // by flavor
	tenants   tenantsRead

	// replaying is held while a What-if replay runs: one at a time.
	replaying sync.Mutex

	once     sync.Once
	startErr error

	// history is sampled every historyStep, with the admissions counted
	// since the last sample; under mu.
	history     *History
	historyStep time.Duration
	admissions  map[string]int

	mu sync.Mutex
	// subs are the open event streams, each with the ClusterQueues whose
	// workloads changed since its last event; dirty those since the last
	// telling.
	subs  map[chan struct{}]map[string]bool
	dirty map[string]bool
	kick  chan struct{}
}

// New makes a Server for the cluster cfg reaches; Start starts its watch.
func New(cfg *rest.Config, scheme *runtime.Scheme) (*Server, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, err
	}
	api, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &Server{cache: c, api: api, cfg: cfg, scheme: scheme, related: map[types.NamespacedName]relatedRead{},
		drawn: map[string]drawnTopology{},
		subs:  map[chan struct{}]map[string]bool{}, dirty: map[string]bool{}, kick: make(chan struct{}, 1),
		historyStep: HistoryStep, admissions: map[string]int{}}, nil
}

// HistoryStep and HistorySpan are how often the charts' history is
// sampled and how far back it goes.
const (
	HistoryStep = 15 * time.Second
	HistorySpan = time.Hour
)

// SampleEvery samples the charts' history every step instead of
// HistoryStep (tests make it short). Call it before Start.
func (s *Server) SampleEvery(step time.Duration) { s.historyStep = step }

// AllowActions lets pages stop and resume queues and workloads (POST
// /api/actions), each with the token of the user who asks, never with the
// dashboard's own credentials. Call it before Handler.
func (s *Server) AllowActions() { s.actions = true }

// Start watches the cluster's ClusterQueues, Cohorts, LocalQueues,
// Workloads, WorkerClusters and MultiClusterConfigs (and, for `berth why`,
// its ResourceFlavors, AdmissionChecks and Namespaces) until ctx ends, and returns once the first lists are in. It
// may be called again after it failed: the watch is started once, and a
// later call waits for its first lists again.
func (s *Server) Start(ctx context.Context) error {
	s.once.Do(func() { s.startErr = s.watch(ctx) })
	if s.startErr != nil {
		return s.startErr
	}
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if !s.cache.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the watch of the cluster's queues and workloads did not start within %s", SyncTimeout)
	}
	return nil
}

// queueIndex indexes Workloads by the queue they are listed under: an
// admitted one by its ClusterQueue ("admitted/CQ"), any other by its
// LocalQueue ("pending/NAMESPACE/LQ"), whose ClusterQueue may change.
const queueIndex = "dashboard.berth.dev/queue"

func queueKey(obj client.Object) []string {
	wl, ok := obj.(*berthv1.Workload)
	if !ok {
		return nil
	}
	if workload.HasQuota(wl) && wl.Status.Admission != nil {
		return []string{Admitted + "/" + wl.Status.Admission.ClusterQueue}
	}
	return []string{Pending + "/" + workload.LocalQueueKey(wl)}
}

// workerIndex indexes Workloads by the worker cluster they were
// dispatched to.
const workerIndex = "dashboard.berth.dev/worker"

func workerKey(obj client.Object) []string {
	if wl, ok := obj.(*berthv1.Workload); ok && wl.Status.ClusterName != "" {
		return []string{wl.Status.ClusterName}
	}
	return nil
}

func (s *Server) watch(ctx context.Context) error {
	if err := s.cache.IndexField(ctx, &berthv1.Workload{}, queueIndex, queueKey); err != nil {
		return err
	}
	if err := s.cache.IndexField(ctx, &berthv1.Workload{}, workerIndex, workerKey); err != nil {
		return err
	}
	for _, obj := range []client.Object{&berthv1.ClusterQueue{}, &berthv1.Cohort{}, &berthv1.LocalQueue{}, &berthv1.Workload{}} {
		inf, err := s.cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) { s.changed(s.queuesOf(o)...) },
			UpdateFunc: func(old, o any) {
				s.countAdmission(old, o)
				s.changed(append(s.queuesOf(old), s.queuesOf(o)...)...)
			},
			DeleteFunc: func(o any) { s.changed(s.queuesOf(o)...) },
		}); err != nil {
			return err
		}
	}
	for _, obj := range []client.Object{&berthv1.ResourceFlavor{}, &berthv1.AdmissionCheck{}, &corev1.Namespace{}} {
		if _, err := s.cache.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	// Worker clusters change no queue's lists; pages that show them are
	// told of every change.
	for _, obj := range []client.Object{&berthv1.WorkerCluster{}, &berthv1.MultiClusterConfig{}} {
		inf, err := s.cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.changed() },
			UpdateFunc: func(_, _ any) { s.changed() },
			DeleteFunc: func(any) { s.changed() },
		}); err != nil {
			return err
		}
	}
	go func() { _ = s.cache.Start(ctx) }()
	go s.tell(ctx)
	go s.sample(ctx)
	return nil
}

// countAdmission counts a workload that has just been given quota: the
// charts' admissions. Workloads listed when the watch starts are not
// counted: they were admitted before.
func (s *Server) countAdmission(old, o any) {
	was, _ := old.(*berthv1.Workload)
	is, _ := o.(*berthv1.Workload)
	if was == nil || is == nil || workload.HasQuota(was) || !workload.HasQuota(is) || is.Status.Admission == nil {
		return
	}
	s.mu.Lock()
	s.admissions[is.Status.Admission.ClusterQueue]++
	s.mu.Unlock()
}

// sample records the charts' history every historyStep, from the first
// lists on.
func (s *Server) sample(ctx context.Context) {
	if !s.cache.WaitForCacheSync(ctx) {
		return
	}
	s.mu.Lock()
	s.history = NewHistory(s.historyStep, HistorySpan)
	s.mu.Unlock()
	tick := time.NewTicker(s.historyStep)
	defer tick.Stop()
	for {
		tree, err := s.tree(ctx)
		if err == nil {
			s.mu.Lock()
			s.history.Record(time.Now(), tree.Roots, s.admissions)
			s.admissions = map[string]int{}
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// queuesOf names the ClusterQueues whose lists a change of o touches.
func (s *Server) queuesOf(o any) []string {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	switch o := o.(type) {
	case *berthv1.ClusterQueue:
		return []string{o.Name}
	case *berthv1.LocalQueue:
		return []string{o.Spec.ClusterQueue}
	case *berthv1.Workload:
		if workload.HasQuota(o) && o.Status.Admission != nil {
			return []string{o.Status.Admission.ClusterQueue}
		}
		var lq berthv1.LocalQueue
		if s.cache.Get(context.Background(), types.NamespacedName{Namespace: o.Namespace, Name: o.Spec.QueueName}, &lq) == nil {
			return []string{lq.Spec.ClusterQueue}
		}
	}
	return nil
}

// changed notes a change, to the ClusterQueues named, if any.
func (s *Server) changed(queues ...string) {
	if len(queues) > 0 {
		s.mu.Lock()
		for _, q := range queues {
			s.dirty[q] = true
		}
		s.mu.Unlock()
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// tell lets every browser know of changes, at most once per settle.
func (s *Server) tell(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(settle):
		}
		s.mu.Lock()
		for ch, changed := range s.subs {
			for q := range s.dirty {
				changed[q] = true
			}
			select {
			case ch <- struct{}{}:
			default: // it has one to read already
			}
		}
		clear(s.dirty)
		s.mu.Unlock()
	}
}

// Handler serves the page and its API:
//   - GET /api/tree: the cohort tree, as `berth top -o json` prints it;
//   - GET /api/workloads?clusterQueue=NAME&state=pending|admitted&offset=N&limit=N[&localQueue=NS/NAME]:
//     a page of a ClusterQueue's workloads, or of one LocalQueue's among them (Workloads);
//   - GET /api/workload?namespace=NS&name=NAME: a workload's page (Detail);
//   - GET /api/workers[?name=NAME]: the worker clusters ([]Worker), one with
//     its running workloads;
//   - GET /api/history?clusterQueue=NAME: its charts' history (Chart);
//   - GET /api/vclusters: the virtual clusters synced into this cluster
//     ([]VirtualCluster);
//   - GET /api/topologies: the flavors that have a topology ([]TopologyFlavor);
//   - GET /api/topology?flavor=NAME: a topology flavor's domains (TopologyView);
//   - GET /api/config: what the page may offer ({"actions": true} with
//     AllowActions);
//   - POST /api/actions: an Action, as the user whose bearer token comes
//     with it (AllowActions only);
//   - POST /api/whatif: a trace replayed against two plans, one of which
//     may be this cluster's queues (WhatIfRequest, answered with a
//     WhatIfView); JSON only, one replay at a time;
//   - GET /api/events: server-sent events, one "tree" event carrying the
//     tree at once and after every change.
//
// Requests whose Host is not a loopback address are refused, so that a web
// page elsewhere cannot read the dashboard through a name it points at
// 127.0.0.1; with RequireToken, any host is answered, but only requests
// carrying the token.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(web, "web") // the embedded directory is always there
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("GET /api/tree", func(w http.ResponseWriter, r *http.Request) {
		tree, err := s.tree(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, tree)
	})
	mux.HandleFunc("GET /api/workloads", s.workloads)
	mux.HandleFunc("GET /api/workload", s.workload)
	mux.HandleFunc("GET /api/workers", s.workers)
	mux.HandleFunc("GET /api/history", s.chart)
	mux.HandleFunc("GET /api/vclusters", s.vclusters)
	mux.HandleFunc("GET /api/topologies", s.topologies)
	mux.HandleFunc("GET /api/topology", s.topology)
	mux.HandleFunc("GET /api/config", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]bool{"actions": s.actions})
	})
	mux.HandleFunc("POST /api/actions", s.act)
	mux.HandleFunc("POST /api/whatif", s.whatIf)
	mux.HandleFunc("GET /api/events", s.events)
	if s.token != "" {
		return headers(s.gate(mux))
	}
	return guard(mux)
}

// Lazily is s's Handler, with s started (Start, with ctx) on the first
// request rather than before: a dashboard served beside an instance
// watches nothing, and costs its API server nothing, until a page is
// opened. A failed start is retried on the next request.
func Lazily(ctx context.Context, s *Server) http.Handler {
	var (
		mu      sync.Mutex
		started bool
	)
	h := s.Handler()
	return guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if !started {
			if err := s.Start(ctx); err != nil {
				mu.Unlock()
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			started = true
		}
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
}

func guard(next http.Handler) http.Handler {
	next = headers(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !isLoopback(host) {
			http.Error(w, fmt.Sprintf("Host %q: the dashboard answers only to loopback addresses", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headers sets what every answer carries: a policy that lets the page load
// nothing from elsewhere, nor be framed by another page.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; object-src 'none'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// Tree is what /api/tree and each "tree" event carry.
type Tree struct {
	Roots []top.Node `json:"roots"`
	// Changed names, in an event, the ClusterQueues whose workloads (or
	// the queue itself) changed since the stream's last event: a page asks
	// again for the lists of the queue it shows only when it is named.
	Changed []string `json:"changed,omitempty"`
}

func (s *Server) tree(ctx context.Context) (Tree, error) {
	var cqs berthv1.ClusterQueueList
	var cohorts berthv1.CohortList
	if err := s.cache.List(ctx, &cqs); err != nil {
		return Tree{}, err
	}
	if err := s.cache.List(ctx, &cohorts); err != nil {
		return Tree{}, err
	}
	var lqs berthv1.LocalQueueList
	if err := s.cache.List(ctx, &lqs); err != nil {
		return Tree{}, err
	}
	roots := top.Tree(cqs.Items, cohorts.Items, lqs.Items)
	if roots == nil {
		roots = []top.Node{}
	}
	return Tree{Roots: roots}, nil
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	ch := make(chan struct{}, 1)
	ch <- struct{}{} // the tree as it is now, first
	s.mu.Lock()
	s.subs[ch] = map[string]bool{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ch:
		}
		tree, err := s.tree(r.Context())
		if err != nil {
			return
		}
		s.mu.Lock()
		for q := range s.subs[ch] {
			tree.Changed = append(tree.Changed, q)
		}
		clear(s.subs[ch])
		s.mu.Unlock()
		slices.Sort(tree.Changed)
		data, err := json.Marshal(tree)
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "event: tree\ndata: %s\n\n", data); err != nil {
			return
		}
		flusher.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
