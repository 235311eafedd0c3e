// Package admission runs the admission loop against the API server: Workload
// and Namespace events feed the scheduler, cycles run whenever it has work,
// admissions are written (one status write each, onto the exact version the
// decision was made for), pending reasons are written when they change, and
// evictions take quota away.
package admission

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/metrics"
	"github.com/berth-dev/berth/internal/scheduler"
	"github.com/berth-dev/berth/internal/workload"
)

// Options tune the controller.
type Options struct {
	// Writers is the number of concurrent admission writes.
	Writers int
	// PendingDelay is how long a workload waits before its first pending
	// reason is written: one admitted within it costs no write.
	PendingDelay time.Duration
	// Synced reports whether every other informer feeding the scheduler has
	// delivered its initial list. No cycle runs before: admitting before all
	// existing usage is known could exceed quota.
	Synced func() bool
}

// Controller is the admission loop.
type Controller struct {
	client   client.Client
	sched    *scheduler.Scheduler
	rec      events.EventRecorder
	clock    clock.Clock
	log      logr.Logger
	opts     Options
	writes   chan core.Decision
	evicts   workqueue.TypedInterface[evictReq]
	synced   []toolscache.ResourceEventHandlerRegistration
	nsMu     sync.RWMutex
	nsLabels map[string]labels.Set
}

// evictReq asks for a workload's quota to be taken away. rule is set for a
// preemption: it then also gets the Preempted condition and a backoff.
type evictReq struct{ key, reason, message, rule string }

// Setup registers the controller with mgr.
func Setup(ctx context.Context, mgr manager.Manager, sched *scheduler.Scheduler, opts Options) (*Controller, error) {
	if opts.Writers <= 0 {
		opts.Writers = 16
	}
	if opts.PendingDelay <= 0 {
		opts.PendingDelay = time.Second
	}
	c := &Controller{
		client: mgr.GetClient(), sched: sched, rec: mgr.GetEventRecorder("berth"), clock: clock.RealClock{},
		log: mgr.GetLogger().WithName("admission"), opts: opts,
		writes:   make(chan core.Decision, 1024),
		evicts:   workqueue.NewTyped[evictReq](),
		nsLabels: map[string]labels.Set{},
	}
	nsInf, err := mgr.GetCache().GetInformer(ctx, &corev1.Namespace{})
	if err != nil {
		return nil, err
	}
	reg, err := nsInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onNamespace,
		UpdateFunc: func(_, obj any) { c.onNamespace(obj) },
		DeleteFunc: func(obj any) {
			if ns, ok := unwrap(obj).(*corev1.Namespace); ok {
				c.nsMu.Lock()
				delete(c.nsLabels, ns.Name)
				c.nsMu.Unlock()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	c.synced = append(c.synced, reg)
	wlInf, err := mgr.GetCache().GetInformer(ctx, &berthv1.Workload{})
	if err != nil {
		return nil, err
	}
	reg, err = wlInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onWorkload,
		UpdateFunc: func(_, obj any) { c.onWorkload(obj) },
		DeleteFunc: func(obj any) {
			if wl, ok := unwrap(obj).(*berthv1.Workload); ok {
				c.sched.WorkloadGone(workload.Key(wl))
			}
		},
	})
	if err != nil {
		return nil, err
	}
	c.synced = append(c.synced, reg)

	runnables := []manager.RunnableFunc{c.cycleLoop, c.pendingLoop, c.evictLoop, c.sweepOrphans}
	for range opts.Writers {
		runnables = append(runnables, c.writeLoop)
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func unwrap(obj any) any {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// HasSynced reports whether the Workload and Namespace handlers have seen
// their initial lists.
func (c *Controller) HasSynced() bool {
	for _, r := range c.synced {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

func (c *Controller) onNamespace(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	c.nsMu.Lock()
	old, known := c.nsLabels[ns.Name]
	c.nsLabels[ns.Name] = labels.Set(ns.Labels)
	c.nsMu.Unlock()
	if known && !labels.Equals(old, ns.Labels) {
		// The namespaceSelector answer may change for its pending workloads.
		var list berthv1.WorkloadList
		if err := c.client.List(context.Background(), &list, client.InNamespace(ns.Name)); err != nil {
			c.log.Error(err, "listing workloads after a namespace label change", "namespace", ns.Name)
			return
		}
		for i := range list.Items {
			c.onWorkload(&list.Items[i])
		}
	}
}

func (c *Controller) labelsOf(ns string) labels.Set {
	c.nsMu.RLock()
	defer c.nsMu.RUnlock()
	return c.nsLabels[ns]
}

// onWorkload tells the scheduler what the API says about a workload.
func (c *Controller) onWorkload(obj any) {
	wl, ok := obj.(*berthv1.Workload)
	if !ok {
		return
	}
	key := workload.Key(wl)
	switch {
	case workload.IsFinished(wl) || wl.DeletionTimestamp != nil || wl.Spec.QueueName == "":
		c.sched.WorkloadGone(key)
	case workload.HasQuota(wl):
		c.sched.WorkloadAdmitted(workload.AdmittedOf(wl), workload.LocalQueueKey(wl))
	default:
		c.sched.WorkloadPending(workload.ToCore(wl, c.labelsOf(wl.Namespace)), workload.LocalQueueKey(wl))
	}
}

// ruleText says in words which rule chose a victim.
var ruleText = map[string]string{
	core.InClusterQueue:                "priority within the ClusterQueue",
	core.InCohortReclamation:           "reclaiming quota lent in the cohort",
	core.InCohortReclaimWhileBorrowing: "borrowing within the cohort from a lower-priority workload",
	core.InCohortFairSharing:           "fair sharing within the cohort",
}

// Evict queues evictions; it never blocks.
func (c *Controller) Evict(keys []string, reason, message string) {
	for _, k := range keys {
		c.evicts.Add(evictReq{key: k, reason: reason, message: message})
	}
}

// waitSynced blocks until every handler feeding the scheduler has seen its
// initial list, or ctx ends.
func (c *Controller) waitSynced(ctx context.Context) bool {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if c.HasSynced() && (c.opts.Synced == nil || c.opts.Synced()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// cycleLoop runs a cycle whenever the scheduler may have work.
func (c *Controller) cycleLoop(ctx context.Context) error {
	if !c.waitSynced(ctx) {
		return nil
	}
	c.log.Info("admission loop started")
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Evicted workloads wait out their backoff; wake when the next one may go.
		if at, ok := c.sched.NextWake(); ok {
			timer.Reset(max(time.Until(at), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.sched.Wake():
		case <-timer.C:
			if !c.sched.Ready() {
				continue
			}
		}
		began := time.Now()
		ds := c.sched.Cycle()
		metrics.AdmissionCycleDuration.Observe(time.Since(began).Seconds())
		for _, d := range ds {
			switch {
			case d.Admit != nil:
				metrics.AdmissionAttempts.WithLabelValues("admitted").Inc()
				select {
				case c.writes <- d:
				case <-ctx.Done():
					return nil
				}
			case len(d.Preempt) > 0 || d.Pending.Reason == core.Preempting:
				metrics.AdmissionAttempts.WithLabelValues("preempting").Inc()
				for _, v := range d.Preempt {
					metrics.PreemptedWorkloads.WithLabelValues(d.Workload.ClusterQueue, v.Reason).Inc()
					c.evicts.Add(evictReq{key: v.Key, reason: "Preempted", rule: v.Reason,
						message: fmt.Sprintf("preempted to make room for %s (%s)", d.Workload.Key, ruleText[v.Reason])})
				}
			case d.Pending.Reason == core.Contention:
				metrics.AdmissionAttempts.WithLabelValues("contention").Inc()
			default:
				metrics.AdmissionAttempts.WithLabelValues("pending").Inc()
			}
		}
	}
}

// writeLoop writes admissions.
func (c *Controller) writeLoop(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case d := <-c.writes:
			c.admit(ctx, d)
		}
	}
}

// admit writes one admission: a single status patch onto the version the
// decision was made for. Anything else (the workload changed, the write
// failed) withdraws the decision.
func (c *Controller) admit(ctx context.Context, d core.Decision) {
	key := d.Workload.Key
	wl, err := c.get(ctx, key)
	if apierrors.IsNotFound(err) {
		c.sched.WorkloadGone(key)
		return
	}
	if err != nil || wl.ResourceVersion != d.Workload.Version || workload.HasQuota(wl) || workload.IsFinished(wl) {
		c.sched.Undo(key)
		return
	}
	orig := wl.DeepCopy()
	now := c.clock.Now()
	workload.SetAdmitted(wl, workload.AdmissionOf(d.Admit), now)
	err = c.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			c.log.Error(err, "writing admission", "workload", key)
			// Do not hammer a failing API server from the next cycle.
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
		c.sched.Undo(key)
		return
	}
	metrics.AdmittedWorkloads.WithLabelValues(d.Admit.ClusterQueue).Inc()
	metrics.AdmissionWaitTime.WithLabelValues(d.Admit.ClusterQueue).Observe(now.Sub(d.Workload.Timestamp).Seconds())
}

func (c *Controller) get(ctx context.Context, key string) (*berthv1.Workload, error) {
	ns, name, _ := strings.Cut(key, "/")
	var wl berthv1.Workload
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &wl); err != nil {
		return nil, err
	}
	return &wl, nil
}

// pendingLoop writes why workloads wait, with an event, when the reason
// changed in more than drifting amounts, and not before PendingDelay has
// passed since it was first known.
func (c *Controller) pendingLoop(ctx context.Context) error {
	if !c.waitSynced(ctx) {
		return nil
	}
	due := map[string]time.Time{}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := c.clock.Now()
		for key := range c.sched.TakePendingChanges() {
			if _, ok := due[key]; !ok {
				due[key] = now.Add(c.opts.PendingDelay)
			}
		}
		for key, at := range due {
			if at.After(now) {
				continue
			}
			delete(due, key)
			if retry := c.writePending(ctx, key); retry {
				due[key] = now.Add(c.opts.PendingDelay)
			}
		}
	}
}

// writePending writes the scheduler's current reason for key; it reports
// whether to try again (a conflicting write).
func (c *Controller) writePending(ctx context.Context, key string) bool {
	p := c.sched.Pending(key)
	if p == nil || p.Reason == core.Contention {
		return false // admitted, gone, or about to be looked at again
	}
	wl, err := c.get(ctx, key)
	if err != nil || workload.HasQuota(wl) || workload.IsFinished(wl) {
		return false
	}
	orig := wl.DeepCopy()
	if !workload.SetPending(wl, string(p.Reason), p.Message, c.clock.Now()) {
		return false
	}
	err = c.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return true
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			c.log.Error(err, "writing pending reason", "workload", key)
		}
		return false
	}
	c.rec.Eventf(wl, nil, corev1.EventTypeNormal, "Pending", "Admission", "%s", p.Message)
	return false
}

// evictLoop takes quota away from workloads, one status write each.
func (c *Controller) evictLoop(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		c.evicts.ShutDown()
	}()
	for {
		req, quit := c.evicts.Get()
		if quit {
			return nil
		}
		if err := c.evict(ctx, req); err != nil {
			c.log.Error(err, "evicting", "workload", req.key)
		}
		c.evicts.Done(req)
	}
}

func (c *Controller) evict(ctx context.Context, req evictReq) error {
	for attempt := 0; attempt < 5; attempt++ {
		wl, err := c.get(ctx, req.key)
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		if !workload.HasQuota(wl) || workload.IsFinished(wl) {
			return nil
		}
		orig := wl.DeepCopy()
		now := c.clock.Now()
		workload.SetEvicted(wl, req.reason, req.message, now, req.rule != "")
		if req.rule != "" {
			workload.SetPreempted(wl, req.rule, req.message, now)
		}
		err = c.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			// The cache may still hold the old version; give it a moment.
			time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
			continue
		}
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		reason := "Evicted"
		if req.rule != "" {
			reason = "Preempted"
		}
		c.rec.Eventf(wl, nil, corev1.EventTypeNormal, reason, "Eviction", "%s", req.message)
		return nil
	}
	if req.rule != "" {
		c.sched.CancelEviction(req.key)
	}
	return fmt.Errorf("workload %s kept changing; eviction (%s) not written", req.key, req.reason)
}

// sweepOrphans evicts, once at start-up, workloads holding quota in a
// ClusterQueue that no longer exists (deleted while the controller was down).
// It runs only after every informer has delivered its initial list, so a
// ClusterQueue the cache has not seen yet is never mistaken for a deleted one.
func (c *Controller) sweepOrphans(ctx context.Context) error {
	if !c.waitSynced(ctx) {
		return nil
	}
	var list berthv1.WorkloadList
	if err := c.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing workloads: %w", err)
	}
	for i := range list.Items {
		wl := &list.Items[i]
		if workload.HasQuota(wl) && !workload.IsFinished(wl) && !c.sched.HasClusterQueue(wl.Status.Admission.ClusterQueue) {
			cq := wl.Status.Admission.ClusterQueue
			c.Evict([]string{workload.Key(wl)}, "ClusterQueueDeleted", fmt.Sprintf("ClusterQueue %s was deleted", cq))
		}
	}
	return nil
}
