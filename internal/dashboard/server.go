package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller/queues"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/stop"
	"github.com/berth-dev/berth/internal/top"
	"github.com/berth-dev/berth/internal/vcluster/translate"
	"github.com/berth-dev/berth/internal/why"
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
	roots := top.Tree(cqs.Items, cohorts.Items)
	if roots == nil {
		roots = []top.Node{}
	}
	return Tree{Roots: roots}, nil
}

func (s *Server) workloads(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cq, state := q.Get("clusterQueue"), q.Get("state")
	if cq == "" {
		http.Error(w, "query parameter clusterQueue: required", http.StatusBadRequest)
		return
	}
	num := func(name string, def int) (int, bool) {
		v := q.Get(name)
		if v == "" {
			return def, true
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			http.Error(w, fmt.Sprintf("query parameter %s=%q: not a whole number", name, v), http.StatusBadRequest)
			return 0, false
		}
		return n, true
	}
	offset, ok := num("offset", 0)
	if !ok {
		return
	}
	limit, ok := num("limit", 100)
	if !ok {
		return
	}
	var lqs berthv1.LocalQueueList
	if err := s.cache.List(r.Context(), &lqs); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	// Only this queue's workloads are read (queueIndex): a page costs
	// what the queue holds, not what the cluster does.
	keys := []string{Admitted + "/" + cq}
	byName := make(map[string]string, len(lqs.Items))
	for _, lq := range lqs.Items {
		byName[lq.Namespace+"/"+lq.Name] = lq.Spec.ClusterQueue
		if lq.Spec.ClusterQueue == cq && state == Pending {
			keys = append(keys, Pending+"/"+lq.Namespace+"/"+lq.Name)
		}
	}
	var list []*berthv1.Workload
	for _, key := range keys {
		var wls berthv1.WorkloadList
		if err := s.cache.List(r.Context(), &wls, client.MatchingFields{queueIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		for i := range wls.Items {
			list = append(list, &wls.Items[i])
		}
	}
	var aging *core.Aging
	var cqObj berthv1.ClusterQueue
	if err := s.cache.Get(r.Context(), types.NamespacedName{Name: cq}, &cqObj); err == nil {
		aging = queues.ClusterQueueOf(&cqObj).Aging
	}
	page, err := Workloads(list, byName, cq, q.Get("localQueue"), state, offset, limit, aging, time.Now())
	if err != nil {
		http.Error(w, "query: "+err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, page)
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

// relatedTTL is how long a workload's pods and events, read from the API
// server, and `berth why` for it, which reads every queue and workload of
// the watch, serve every page showing it: pages ask again on every change
// in the cluster, the API server is asked at most this often.
const relatedTTL = 2 * time.Second

type relatedRead struct {
	at     time.Time
	pods   []corev1.Pod
	events []corev1.Event
	why    string
	err    error
}

func (s *Server) workload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := types.NamespacedName{Namespace: q.Get("namespace"), Name: q.Get("name")}
	for param, v := range map[string]string{"namespace": key.Namespace, "name": key.Name} {
		if v == "" {
			http.Error(w, "query parameter "+param+": required", http.StatusBadRequest)
			return
		}
	}
	wl := &berthv1.Workload{}
	if err := s.cache.Get(r.Context(), key, wl); err != nil {
		code := http.StatusServiceUnavailable
		if apierrors.IsNotFound(err) {
			code = http.StatusNotFound
		}
		http.Error(w, fmt.Sprintf("Workload %s: %v", key, err), code)
		return
	}
	rel := s.relatedOf(r.Context(), wl)
	d := Describe(wl, rel.pods, rel.events, rel.why)
	if rel.err != nil {
		// The page still says what the watch knows; the rest is named.
		d.Why += "\n(not all of it could be read: " + rel.err.Error() + ")"
	}
	writeJSON(w, d)
}

// relatedOf reads wl's pods, its and its owner's events and works out
// `berth why` for it, or gives the last read if it is recent.
func (s *Server) relatedOf(ctx context.Context, wl *berthv1.Workload) relatedRead {
	key := types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}
	s.relatedMu.Lock()
	defer s.relatedMu.Unlock()
	now := time.Now()
	if last, ok := s.related[key]; ok && now.Sub(last.at) < relatedTTL {
		return last
	}
	for k, v := range s.related { // pages move on; forget what they left
		if now.Sub(v.at) >= relatedTTL {
			delete(s.related, k)
		}
	}
	read := relatedRead{at: now}
	in, err := why.Read(ctx, s.cache)
	if err != nil {
		read.err = err
	} else {
		in.Workload = wl
		read.why = why.Render(why.Explain(in))
	}
	var pods corev1.PodList
	if err := s.api.List(ctx, &pods, client.InNamespace(wl.Namespace), client.MatchingLabelsSelector{Selector: PodSelector(wl)}); err != nil {
		read.err = fmt.Errorf("listing pods: %w", err)
	}
	read.pods = pods.Items
	names := []string{wl.Name}
	if o := metav1.GetControllerOf(wl); o != nil {
		names = append(names, o.Name)
	}
	for _, name := range names {
		var evs corev1.EventList
		if err := s.api.List(ctx, &evs, client.InNamespace(wl.Namespace), client.MatchingFields{"involvedObject.name": name}); err != nil {
			read.err = fmt.Errorf("listing events: %w", err)
			continue
		}
		read.events = append(read.events, evs.Items...)
	}
	// Fresh from when it was done: at scale `berth why` alone takes
	// seconds, and a read stamped when it began would be stale on arrival.
	read.at = time.Now()
	s.related[key] = read
	return read
}

// act does the Action a page asks for, with the client of the user whose
// token comes with it: the API server decides whether that user may, as it
// would for kubectl, and the dashboard's own permissions play no part. A
// page elsewhere cannot send it: it needs a JSON body and an Authorization
// header, which a browser sends to another origin only after a preflight
// the dashboard does not answer.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if !s.actions {
		http.Error(w, "actions are off: start the dashboard with --allow-actions to stop and resume from the page", http.StatusForbidden)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "Content-Type: want application/json", http.StatusUnsupportedMediaType)
		return
	}
	token := bearer(r)
	if token == "" {
		http.Error(w, "Authorization: send your own Kubernetes bearer token; the dashboard acts with your permissions, never its own",
			http.StatusUnauthorized)
		return
	}
	var a Action
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := a.Check(); err != nil {
		http.Error(w, "action: "+err.Error(), http.StatusBadRequest)
		return
	}
	cfg := rest.AnonymousClientConfig(s.cfg) // the server and its CA, none of the dashboard's credentials
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: s.scheme, Mapper: s.api.RESTMapper()})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var msg string
	if a.Kind == "Workload" {
		var wl *berthv1.Workload
		wl, err = stop.Workload(r.Context(), c, types.NamespacedName{Namespace: a.Namespace, Name: a.Name}, a.Verb == Resume)
		if err == nil {
			msg = stop.WorkloadDone(a.String(), a.Verb == Resume, wl.Status.Admission != nil)
		}
	} else {
		var admitted int32
		admitted, err = stop.Queue(r.Context(), c, a.Namespace, a.Name, a.StopPolicy())
		msg = stop.QueueDone(a.String(), a.StopPolicy(), admitted)
	}
	if err != nil {
		code := http.StatusBadGateway
		var st apierrors.APIStatus
		if errors.As(err, &st) && st.Status().Code != 0 {
			code = int(st.Status().Code)
		}
		http.Error(w, a.String()+": "+err.Error(), code)
		return
	}
	writeJSON(w, map[string]string{"message": msg})
}

// TopologyFlavor is a flavor whose nodes are arranged in a Topology.
type TopologyFlavor struct {
	Flavor   string `json:"flavor"`
	Topology string `json:"topology"`
}

func (s *Server) topologies(w http.ResponseWriter, r *http.Request) {
	var rfs berthv1.ResourceFlavorList
	if err := s.cache.List(r.Context(), &rfs); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	out := []TopologyFlavor{}
	for _, rf := range rfs.Items {
		if rf.Spec.TopologyName != nil {
			out = append(out, TopologyFlavor{Flavor: rf.Name, Topology: *rf.Spec.TopologyName})
		}
	}
	slices.SortFunc(out, func(a, b TopologyFlavor) int { return strings.Compare(a.Flavor, b.Flavor) })
	writeJSON(w, out)
}

// drawnTopology is a flavor's TopologyView, drawn for every page that asks
// within relatedTTL: its nodes and their pods are read from the API server,
// not watched.
type drawnTopology struct {
	at   time.Time
	view TopologyView
	code int
	err  error
}

func (s *Server) topology(w http.ResponseWriter, r *http.Request) {
	flavor := r.URL.Query().Get("flavor")
	if flavor == "" {
		http.Error(w, "query parameter flavor: required", http.StatusBadRequest)
		return
	}
	d := s.drawTopology(r.Context(), flavor)
	if d.err != nil {
		http.Error(w, d.err.Error(), d.code)
		return
	}
	writeJSON(w, d.view)
}

// boundPods are the pods that take room on their nodes: bound, not ended.
var boundPods = fields.ParseSelectorOrDie("spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed")

func (s *Server) drawTopology(ctx context.Context, flavor string) drawnTopology {
	s.relatedMu.Lock()
	defer s.relatedMu.Unlock()
	if last, ok := s.drawn[flavor]; ok && time.Since(last.at) < relatedTTL {
		return last
	}
	for k, v := range s.drawn {
		if time.Since(v.at) >= relatedTTL {
			delete(s.drawn, k)
		}
	}
	d := drawnTopology{code: http.StatusServiceUnavailable}
	in := TopologyInput{Flavor: &berthv1.ResourceFlavor{}, Topology: &berthv1.Topology{}}
	err := s.cache.Get(ctx, types.NamespacedName{Name: flavor}, in.Flavor)
	switch {
	case apierrors.IsNotFound(err):
		d.code, d.err = http.StatusNotFound, fmt.Errorf("ResourceFlavor %s not found", flavor)
	case err != nil:
		d.err = err
	case in.Flavor.Spec.TopologyName == nil:
		d.code, d.err = http.StatusNotFound, fmt.Errorf("ResourceFlavor %s has no topologyName", flavor)
	}
	if d.err == nil {
		if err := s.api.Get(ctx, types.NamespacedName{Name: *in.Flavor.Spec.TopologyName}, in.Topology); err != nil {
			d.err = fmt.Errorf("ResourceFlavor %s: Topology %s: %w", flavor, *in.Flavor.Spec.TopologyName, err)
			if apierrors.IsNotFound(err) {
				d.code = http.StatusNotFound
			}
		}
	}
	if d.err == nil {
		d.err = s.readTopology(ctx, &in)
	}
	if d.err == nil {
		d.view, d.err = DrawTopology(in)
		d.code = http.StatusConflict // the cluster's objects do not make a tree (a Topology without levels)
	}
	d.at = time.Now()
	s.drawn[flavor] = d
	return d
}

// readTopology reads the flavor's nodes and every bound pod (a node's room
// is taken by whichever pods are bound to it) from the API server, and the
// workloads from the watch.
func (s *Server) readTopology(ctx context.Context, in *TopologyInput) error {
	var (
		nodes corev1.NodeList
		pods  corev1.PodList
		wls   berthv1.WorkloadList
	)
	if err := s.api.List(ctx, &nodes, client.MatchingLabels(in.Flavor.Spec.NodeLabels)); err != nil {
		return fmt.Errorf("listing the nodes of ResourceFlavor %s: %w", in.Flavor.Name, err)
	}
	if err := s.api.List(ctx, &pods, client.MatchingFieldsSelector{Selector: boundPods}); err != nil {
		return fmt.Errorf("listing the pods bound to nodes: %w", err)
	}
	if err := s.cache.List(ctx, &wls, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	in.Nodes, in.Pods, in.Workloads = nodes.Items, pods.Items, wls.Items
	return nil
}

// workersListed is how many of a worker's workloads /api/workers?name= lists.
const workersListed = 100

func (s *Server) workers(w http.ResponseWriter, r *http.Request) {
	var (
		wcs  berthv1.WorkerClusterList
		mccs berthv1.MultiClusterConfigList
		wls  berthv1.WorkloadList
	)
	for _, l := range []client.ObjectList{&wcs, &mccs} {
		if err := s.cache.List(r.Context(), l); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	// Only the workloads dispatched to a worker (workerIndex), not all.
	names := map[string]bool{}
	for _, wc := range wcs.Items {
		names[wc.Name] = true
	}
	for _, mcc := range mccs.Items {
		for _, n := range mcc.Spec.Clusters {
			names[n] = true
		}
	}
	for n := range names {
		var on berthv1.WorkloadList
		if err := s.cache.List(r.Context(), &on, client.MatchingFields{workerIndex: n}, client.UnsafeDisableDeepCopy); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		wls.Items = append(wls.Items, on.Items...)
	}
	name := r.URL.Query().Get("name")
	out := Workers(wcs.Items, mccs.Items, wls.Items, name, workersListed)
	if name != "" && len(out) == 0 {
		http.Error(w, fmt.Sprintf("WorkerCluster %s: not found, and no MultiClusterConfig names it", name), http.StatusNotFound)
		return
	}
	writeJSON(w, out)
}

// tenantsRead is the virtual clusters, read for every page that asks
// within relatedTTL: their syncers' accounts and their pods are read from
// the API server, not watched.
type tenantsRead struct {
	at  time.Time
	vcs []VirtualCluster
	err error
}

func (s *Server) vclusters(w http.ResponseWriter, r *http.Request) {
	read := s.readTenants(r.Context())
	if read.err != nil {
		http.Error(w, read.err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, read.vcs)
}

func (s *Server) readTenants(ctx context.Context) tenantsRead {
	s.relatedMu.Lock()
	defer s.relatedMu.Unlock()
	if time.Since(s.tenants.at) < relatedTTL {
		return s.tenants
	}
	read := tenantsRead{vcs: []VirtualCluster{}}
	var (
		syncers corev1.ServiceAccountList
		pods    corev1.PodList
		lqs     berthv1.LocalQueueList
		wls     []berthv1.Workload
	)
	synced := client.HasLabels{translate.Label}
	read.err = s.api.List(ctx, &syncers, synced)
	if read.err == nil && len(syncers.Items) > 0 {
		read.err = s.api.List(ctx, &pods, synced)
	}
	if read.err == nil {
		read.err = s.cache.List(ctx, &lqs)
	}
	// Only the host namespaces' workloads.
	seen := map[string]bool{}
	for _, sa := range syncers.Items {
		if read.err != nil || seen[sa.Namespace] {
			continue
		}
		seen[sa.Namespace] = true
		var in berthv1.WorkloadList
		read.err = s.cache.List(ctx, &in, client.InNamespace(sa.Namespace), client.UnsafeDisableDeepCopy)
		wls = append(wls, in.Items...)
	}
	if read.err == nil {
		read.vcs = VirtualClusters(syncers.Items, lqs.Items, pods.Items, wls)
	}
	read.at = time.Now()
	s.tenants = read
	return read
}

func (s *Server) chart(w http.ResponseWriter, r *http.Request) {
	cq := r.URL.Query().Get("clusterQueue")
	if cq == "" {
		http.Error(w, "query parameter clusterQueue: required", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	var (
		c  Chart
		ok bool
	)
	if s.history != nil {
		c, ok = s.history.Of(cq)
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, fmt.Sprintf("ClusterQueue %s: no history (not there when last sampled)", cq), http.StatusNotFound)
		return
	}
	writeJSON(w, c)
}
