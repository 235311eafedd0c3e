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
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/berth-dev/berth/internal/devicequota"
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
	// Evictors is the number of evictions written at once.
	Evictors int
	// RetryBase and RetryMax bound the exponential backoff of a failed
	// eviction or admission read.
	RetryBase, RetryMax time.Duration
	// VictimAttempts is how many times a preemption victim's eviction is
	// tried before the scheduler stops counting on it, so a victim that
	// cannot be evicted does not hold up its preemptor for ever.
	VictimAttempts int
	// DeviceClasses maps DeviceClasses to the quota resources their devices
	// count as (package devicequota); empty, devices are not counted.
	DeviceClasses devicequota.Mappings
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
	evicts   workqueue.TypedRateLimitingInterface[evictReq]
	synced   []toolscache.ResourceEventHandlerRegistration
	nsMu     sync.RWMutex
	nsLabels map[string]labels.Set
	// deactivated holds workloads taken out of their queue (spec.active
	// false) whose Deactivated reason is to be written.
	deactMu     sync.Mutex
	deactivated map[string]bool
}

// evictReq asks for a workload's quota to be taken away. rule is set for a
// preemption: it then also gets the Preempted condition and a backoff.
// backoff alone delays its next admission too (an admission check's Retry).
type evictReq struct {
	key, reason, message, rule string
	backoff                    bool
}

// Setup registers the controller with mgr.
func Setup(ctx context.Context, mgr manager.Manager, sched *scheduler.Scheduler, opts Options) (*Controller, error) {
	c := newController(mgr.GetClient(), sched, mgr.GetEventRecorder("berth"), mgr.GetLogger().WithName("admission"), opts)
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
	if err := c.watchTemplates(ctx, mgr); err != nil {
		return nil, err
	}

	for _, r := range c.runnables() {
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newController fills in the defaults of opts.
func newController(cl client.Client, sched *scheduler.Scheduler, rec events.EventRecorder, log logr.Logger, opts Options) *Controller {
	if opts.Writers <= 0 {
		opts.Writers = 16
	}
	if opts.Evictors <= 0 {
		opts.Evictors = 8
	}
	if opts.PendingDelay <= 0 {
		opts.PendingDelay = time.Second
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = 100 * time.Millisecond
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = time.Minute
	}
	if opts.VictimAttempts <= 0 {
		opts.VictimAttempts = 5
	}
	return &Controller{
		client: cl, sched: sched, rec: rec, clock: clock.RealClock{}, log: log, opts: opts,
		writes: make(chan core.Decision, 1024),
		evicts: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[evictReq](opts.RetryBase, opts.RetryMax),
			workqueue.TypedRateLimitingQueueConfig[evictReq]{Name: "berth-evictions"}),
		nsLabels: map[string]labels.Set{}, deactivated: map[string]bool{},
	}
}

// runnables are the controller's loops: one cycle loop, the writers of
// admissions, pending reasons and evictions, and the start-up orphan sweep.
func (c *Controller) runnables() []manager.RunnableFunc {
	out := []manager.RunnableFunc{c.cycleLoop, c.pendingLoop, c.sweepOrphans, c.stopEvictions}
	for range c.opts.Writers {
		out = append(out, c.writeLoop)
	}
	for range c.opts.Evictors {
		out = append(out, c.evictLoop)
	}
	return out
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
		// The list comes from the informer cache, which fails only when the
		// manager is stopping: nothing to retry then.
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
	case workload.IsFinished(wl) || wl.Spec.QueueName == "" || (wl.DeletionTimestamp != nil && !workload.HasQuota(wl)):
		c.sched.WorkloadGone(key)
	case wl.DeletionTimestamp != nil:
		// Being deleted, its quota held until its pods are gone (package
		// podsgone): it counts as admitted until then.
		c.sched.WorkloadAdmitted(workload.AdmittedOf(wl), workload.LocalQueueKey(wl))
	case workload.HasQuota(wl):
		c.sched.WorkloadAdmitted(workload.AdmittedOf(wl), workload.LocalQueueKey(wl))
		if !workload.IsActive(wl) && !workload.IsStopping(wl) {
			reason, message := workload.Deactivation(wl, c.clock.Now())
			c.Evict([]string{key}, reason, message)
		}
	case !workload.IsActive(wl):
		// Out of its queue until it is active again.
		c.sched.WorkloadGone(key)
		if !meta.IsStatusConditionTrue(wl.Status.Conditions, berthv1.WorkloadQuotaReserved) &&
			reasonOf(wl) != DeactivatedReason {
			c.deactMu.Lock()
			c.deactivated[key] = true
			c.deactMu.Unlock()
		}
	default:
		cw := workload.ToCore(wl, c.labelsOf(wl.Namespace))
		c.countDevices(wl, cw)
		c.sched.WorkloadPending(cw, workload.LocalQueueKey(wl))
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

// EvictWithBackoff queues an eviction after which the workload waits
// workload.BackoffFor(requeues) before it may be admitted again.
func (c *Controller) EvictWithBackoff(key, reason, message string) {
	c.evicts.Add(evictReq{key: key, reason: reason, message: message, backoff: true})
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
	if err != nil {
		// Undo queues it again, so the next cycle retries; the pause keeps
		// that cycle from hammering an API server that fails reads.
		c.log.Error(err, "reading workload before writing its admission; it is queued again", "workload", key)
		c.pause(ctx)
		c.sched.Undo(key)
		return
	}
	if wl.ResourceVersion != d.Workload.Version || workload.HasQuota(wl) || workload.IsFinished(wl) {
		// It changed since the decision; the event of the change queues it.
		c.sched.Undo(key)
		return
	}
	orig := wl.DeepCopy()
	now := c.clock.Now()
	workload.SetAdmitted(wl, workload.AdmissionOf(d.Admit), d.Admit.AdmissionChecks, now)
	err = c.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			c.log.Error(err, "writing admission; it is queued again", "workload", key)
			c.pause(ctx)
		}
		c.sched.Undo(key)
		return
	}
	metrics.AdmittedWorkloads.WithLabelValues(d.Admit.ClusterQueue).Inc()
	metrics.AdmissionWaitTime.WithLabelValues(d.Admit.ClusterQueue).Observe(now.Sub(d.Workload.Timestamp).Seconds())
}

// pause keeps a writer off a failing API server for a moment, so the retry
// that follows (the next cycle) does not hammer it.
func (c *Controller) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(5 * c.opts.RetryBase):
	}
}

func (c *Controller) get(ctx context.Context, key string) (*berthv1.Workload, error) {
	ns, name, _ := strings.Cut(key, "/")
	var wl berthv1.Workload
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &wl); err != nil {
		return nil, err
	}
	return &wl, nil
}

// pendingLoop writes why workloads wait, when the reason
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
		c.deactMu.Lock()
		deactivated := c.deactivated
		c.deactivated = map[string]bool{}
		c.deactMu.Unlock()
		for key := range deactivated {
			if c.writeDeactivated(ctx, key) {
				c.deactMu.Lock()
				c.deactivated[key] = true
				c.deactMu.Unlock()
			}
		}
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
// whether to try again (a failed read or write other than the workload
// being gone).
func (c *Controller) writePending(ctx context.Context, key string) bool {
	p := c.sched.Pending(key)
	if p == nil || p.Reason == core.Contention {
		return false // admitted, gone, or about to be looked at again
	}
	wl, err := c.get(ctx, key)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		c.log.Error(err, "reading workload to write its pending reason; trying again", "workload", key)
		return true
	}
	if workload.HasQuota(wl) || workload.IsFinished(wl) {
		return false
	}
	orig := wl.DeepCopy()
	// What it asks for, devices counted, goes with why it waits, so that
	// berth why and the dashboard count them too.
	wl.Status.ResourceRequests, _ = c.deviceRequests(wl)
	changed := workload.SetPending(wl, string(p.Reason), p.Message, c.clock.Now())
	if !changed && equality.Semantic.DeepEqual(orig.Status.ResourceRequests, wl.Status.ResourceRequests) {
		return false
	}
	err = c.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return true
	}
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		c.log.Error(err, "writing pending reason; trying again", "workload", key)
		return true
	}
	// No event: the condition says the same, and an event per waiting
	// workload was a quarter of berth's writes in the baseline bench.
	return false
}

// DeactivatedReason is the QuotaReserved reason of a workload taken out of
// its queue (spec.active false).
const DeactivatedReason = "Deactivated"

func reasonOf(wl *berthv1.Workload) string {
	if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved); c != nil {
		return c.Reason
	}
	return ""
}

// writeDeactivated says on a deactivated workload why it waits; it reports
// whether to try again.
func (c *Controller) writeDeactivated(ctx context.Context, key string) bool {
	wl, err := c.get(ctx, key)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		return true
	}
	if workload.IsActive(wl) || workload.HasQuota(wl) || workload.IsFinished(wl) {
		return false
	}
	orig := wl.DeepCopy()
	_, why := workload.Deactivation(wl, c.clock.Now())
	if !workload.SetPending(wl, DeactivatedReason, why+"; it waits out of its queue until it is active again", c.clock.Now()) {
		return false
	}
	err = c.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	return apierrors.IsConflict(err) || (err != nil && !apierrors.IsNotFound(err))
}

// stopEvictions shuts the eviction queue down when the manager stops, which
// ends every evictLoop.
func (c *Controller) stopEvictions(ctx context.Context) error {
	<-ctx.Done()
	c.evicts.ShutDown()
	return nil
}

// evictLoop takes quota away from workloads, one status write each. Several
// run at once; the queue never hands the same request to two of them. A
// failed write is retried with exponential backoff, so a conflict or an
// unreachable API server holds up neither the other evictions nor this one
// for good.
func (c *Controller) evictLoop(ctx context.Context) error {
	for {
		req, quit := c.evicts.Get()
		if quit {
			return nil
		}
		c.evictOnce(ctx, req)
		c.evicts.Done(req)
	}
}

// evictOnce makes one attempt at req and schedules what follows: nothing on
// success, a retry with backoff on failure. A preemption victim is retried
// only VictimAttempts times: then the scheduler stops counting on its quota,
// so its preemptor chooses again (perhaps the same victim, which queues it
// again). Any other eviction (its ClusterQueue was deleted or drained) is
// retried until it is written, since nothing else would ask again.
func (c *Controller) evictOnce(ctx context.Context, req evictReq) {
	err := c.evict(ctx, req)
	if err == nil {
		c.evicts.Forget(req)
		return
	}
	attempts := c.evicts.NumRequeues(req) + 1
	if req.rule != "" && attempts >= c.opts.VictimAttempts {
		c.log.Error(err, "evicting a preemption victim; giving up on it, its preemptor will choose again",
			"workload", req.key, "attempts", attempts)
		c.evicts.Forget(req)
		c.sched.CancelEviction(req.key)
		return
	}
	if ctx.Err() != nil {
		return
	}
	if !apierrors.IsConflict(err) {
		c.log.Error(err, "evicting; will retry", "workload", req.key, "attempts", attempts)
	}
	c.evicts.AddRateLimited(req)
}

// evict makes one attempt to write req's eviction. A workload that is gone,
// or holds no quota any more, needs none.
func (c *Controller) evict(ctx context.Context, req evictReq) error {
	wl, err := c.get(ctx, req.key)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if !workload.HasQuota(wl) || workload.IsFinished(wl) || workload.IsStopping(wl) {
		return nil
	}
	orig := wl.DeepCopy()
	now := c.clock.Now()
	if workload.KeepsQuotaWhileStopping(wl) {
		// It keeps its quota until its pods are gone; its integration then
		// gives it back.
		workload.SetStopping(wl, req.reason, req.message, now, req.rule != "" || req.backoff)
	} else {
		workload.SetEvicted(wl, req.reason, req.message, now, req.rule != "" || req.backoff)
	}
	if req.rule != "" {
		workload.SetPreempted(wl, req.rule, req.message, now)
	}
	err = c.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
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
