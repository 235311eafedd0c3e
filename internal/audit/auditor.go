package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
)

// Scope limits what an Auditor looks at, for a test or bench that shares its
// cluster: workloads, Jobs and Pods of Namespace (or of the namespaces whose
// names start with NamespacePrefix), and ClusterQueues whose names start
// with ClusterQueuePrefix. The zero Scope is the whole cluster.
type Scope struct {
	Namespace          string
	NamespacePrefix    string
	ClusterQueuePrefix string
}

// Auditor watches the API and checks berth's promises as things change.
type Auditor struct {
	scope  Scope
	cache  cache.Cache
	client client.Client
	mu     sync.Mutex
	track  *Tracker
	seen   map[string]bool
	found  []Violation
	// dismissed counts violations a cache showed and a consistent read
	// did not (confirm, confirmJobs).
	dismissed int
}

// Start watches the cluster of cfg until ctx ends, checking quota every
// interval and each Workload change as it comes. It returns once its caches
// hold the cluster's objects.
func Start(ctx context.Context, cfg *rest.Config, interval time.Duration, scope Scope) (*Auditor, error) {
	scheme := controller.Scheme()
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	a := &Auditor{scope: scope, cache: c, client: direct, track: NewTracker(10 * time.Second), seen: map[string]bool{}}
	inf, err := c.GetInformer(ctx, &berthv1.Workload{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { a.workload(o) },
		UpdateFunc: func(_, o any) { a.workload(o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if w, ok := o.(*berthv1.Workload); ok {
				a.mu.Lock()
				a.track.Forget(w.Namespace, w.Name)
				a.mu.Unlock()
			}
		},
	}); err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{&berthv1.ClusterQueue{}, &berthv1.Cohort{}, &batchv1.Job{}, &corev1.Pod{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the auditor's caches did not sync: %w", ctx.Err())
	}
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if s, err := a.snapshot(ctx); err == nil {
					over, dismissed := a.confirm(ctx, Quota(s))
					a.mu.Lock()
					a.dismissed += dismissed
					a.record(over...)
					running := a.track.Running(s)
					a.mu.Unlock()
					kept := a.confirmRunning(ctx, running)
					a.mu.Lock()
					a.record(kept...)
					a.mu.Unlock()
				}
			}
		}
	}()
	return a, nil
}

func (a *Auditor) workload(o any) {
	w, ok := o.(*berthv1.Workload)
	if !ok || !a.inScope(w) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(a.track.Workload(w, time.Now())...)
}

// record keeps violations not seen before (by rule and objects).
func (a *Auditor) record(vs ...Violation) {
	for _, v := range vs {
		k := v.key()
		if !a.seen[k] {
			a.seen[k] = true
			a.found = append(a.found, v)
		}
	}
}

func (a *Auditor) snapshot(ctx context.Context) (Snapshot, error) {
	s := Snapshot{At: time.Now()}
	var cqs berthv1.ClusterQueueList
	var cos berthv1.CohortList
	var wls berthv1.WorkloadList
	var jobs batchv1.JobList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&cqs, &cos, &wls, &jobs, &pods} {
		if err := a.cache.List(ctx, l); err != nil {
			return s, err
		}
	}
	s.ClusterQueues, s.Cohorts, s.Workloads, s.Jobs = ptrs(cqs.Items), ptrs(cos.Items), ptrs(wls.Items), ptrs(jobs.Items)
	s.Pods = ptrs(pods.Items)
	return a.limit(s), nil
}

// confirm keeps the quota violations that a consistent read shows too. A
// cache is consistent object by object, not across objects while it takes
// in a new list (after the API server restarted, say): for a moment it may
// hold one workload's new admission and another's old one, which never
// held quota together. A real over-admission lasts as long as the
// workloads hold quota, so the read a moment later still shows it. When
// the API server does not answer (it may be down for a while, and the
// caches stale with it), nothing is kept or dismissed: the next tick finds
// them in the cache again and asks again. It returns what it kept and how
// many it dismissed.
func (a *Auditor) confirm(ctx context.Context, found []Violation) (kept []Violation, dismissed int) {
	if len(found) == 0 {
		return nil, 0
	}
	s := Snapshot{At: time.Now()}
	var cqs berthv1.ClusterQueueList
	var cos berthv1.CohortList
	var wls berthv1.WorkloadList
	for _, l := range []client.ObjectList{&cqs, &cos, &wls} {
		if err := a.client.List(ctx, l); err != nil {
			return nil, 0 // cannot tell yet
		}
	}
	s.ClusterQueues, s.Cohorts, s.Workloads = ptrs(cqs.Items), ptrs(cos.Items), ptrs(wls.Items)
	// The same rule broken by the same queues or cohort: the workloads
	// that make up the excess may have changed in between.
	again := map[string]bool{}
	for _, v := range Quota(a.limit(s)) {
		again[v.queuesKey()] = true
	}
	for _, v := range found {
		if again[v.queuesKey()] {
			kept = append(kept, v)
		}
	}
	return kept, len(found) - len(kept)
}

// confirmRunning keeps the Jobs and Pods found running unadmitted that a
// consistent read shows so too. The caches of Jobs, Pods and Workloads are
// not in step with each other: after the API server restarted, one may be
// relisted while another's watch still waits to reconnect, showing a Job
// started beside its Workload from before its admission. A dismissed one's
// grace starts again, so one that really runs unadmitted is reported later.
// One the API server cannot be asked about (it is down, and the caches are
// as stale as it left them) is asked about again at the next tick, its
// grace not started again: it is neither kept nor dismissed on no answer.
func (a *Auditor) confirmRunning(ctx context.Context, found []Violation) []Violation {
	var out []Violation
	for _, v := range found {
		still, err := a.stillRunsUnadmitted(ctx, v.Objects[0])
		if err != nil {
			a.mu.Lock()
			a.track.Postpone(v.Objects[0])
			a.mu.Unlock()
			continue
		}
		if still {
			out = append(out, v)
			continue
		}
		a.mu.Lock()
		a.dismissed++
		a.track.Unreport(v.Objects[0], time.Now())
		a.mu.Unlock()
	}
	return out
}

// stillRunsUnadmitted reads object ("Job ns/name" or "Pod ns/name") (and a
// Pod's Job), then its namespace's Workloads, from the API server, and says
// whether it runs unadmitted there. Gone, it does not. The object is read
// first: berth admits a Workload before it lets its Job or Pod run, so a
// later read of the Workloads shows the admission of whatever ran at the
// first read; the other order could catch an admission and a start made
// in between, half.
func (a *Auditor) stillRunsUnadmitted(ctx context.Context, object string) (bool, error) {
	kind, nsName, _ := strings.Cut(object, " ")
	ns, name, _ := strings.Cut(nsName, "/")
	var job batchv1.Job
	var pod corev1.Pod
	jobs := map[types.UID]*batchv1.Job{}
	if kind == "Job" {
		if err := a.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &job); err != nil {
			return false, client.IgnoreNotFound(err)
		}
	} else {
		if err := a.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if ref := metav1.GetControllerOf(&pod); ref != nil && ref.Kind == "Job" {
			var owner batchv1.Job
			if err := a.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &owner); err == nil {
				jobs[owner.UID] = &owner
			} else if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
	}
	var wls berthv1.WorkloadList
	if err := a.client.List(ctx, &wls, client.InNamespace(ns)); err != nil {
		return false, err
	}
	admitted, queuedBy := workloadOwners(ptrs(wls.Items))
	if kind == "Job" {
		return runsUnadmitted(&job, admitted), nil
	}
	return podRunsUnadmitted(&pod, jobs, queuedBy, admitted), nil
}

// Dismissed counts the violations (quota, Jobs and Pods running unadmitted) seen in
// the cache that a consistent read a moment later did not show.
func (a *Auditor) Dismissed() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dismissed
}

func (a *Auditor) inScope(o client.Object) bool {
	if a.scope.Namespace != "" {
		return o.GetNamespace() == a.scope.Namespace
	}
	return strings.HasPrefix(o.GetNamespace(), a.scope.NamespacePrefix)
}

// limit keeps what the scope covers.
func (a *Auditor) limit(s Snapshot) Snapshot {
	s.ClusterQueues = slices.DeleteFunc(s.ClusterQueues, func(cq *berthv1.ClusterQueue) bool {
		return !strings.HasPrefix(cq.Name, a.scope.ClusterQueuePrefix)
	})
	s.Workloads = slices.DeleteFunc(s.Workloads, func(w *berthv1.Workload) bool { return !a.inScope(w) })
	s.Jobs = slices.DeleteFunc(s.Jobs, func(j *batchv1.Job) bool { return !a.inScope(j) })
	s.Pods = slices.DeleteFunc(s.Pods, func(p *corev1.Pod) bool { return !a.inScope(p) })
	return s
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// Violations lists what was found so far, in the order found.
func (a *Auditor) Violations() []Violation {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.found)
}

// Settle checks the end state (Settled) once, from a fresh read of the API,
// including quota; allowRunning accepts workloads still holding quota.
func (a *Auditor) Settle(ctx context.Context, allowRunning bool) ([]Violation, error) {
	s := Snapshot{At: time.Now()}
	var cqs berthv1.ClusterQueueList
	var cos berthv1.CohortList
	var wls berthv1.WorkloadList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&cqs, &cos, &wls, &pods} {
		if err := a.client.List(ctx, l); err != nil {
			return nil, err
		}
	}
	s.ClusterQueues, s.Cohorts, s.Workloads = ptrs(cqs.Items), ptrs(cos.Items), ptrs(wls.Items)
	s = a.limit(s)
	ps := slices.DeleteFunc(ptrs(pods.Items), func(p *corev1.Pod) bool { return !a.inScope(p) })
	return append(Quota(s), Settled(s, ps, allowRunning)...), nil
}
