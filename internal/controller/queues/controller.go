package queues

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/metrics"
	"github.com/berth-dev/berth/internal/scheduler"
)

// Evict asks for workloads to lose their quota; reason is CamelCase, message
// says why in words.
type Evict func(keys []string, reason, message string)

// Controller feeds queue objects to the scheduler and writes their status.
type Controller struct {
	client   client.Client
	sched    *scheduler.Scheduler
	evict    Evict
	clock    clock.Clock
	interval time.Duration
	log      logr.Logger
	synced   []toolscache.ResourceEventHandlerRegistration
	// tending holds the objects whose in-use finalizer needs a step
	// (nextFinalizerStep); the status loop takes them once per interval.
	tendMu  sync.Mutex
	tending map[objRef]bool
}

// objRef names a queue object that carries InUseFinalizer.
type objRef struct {
	kind string // clusterQueueKind, localQueueKind or flavorKind
	key  string // name, or namespace/name
}

const (
	clusterQueueKind = "ClusterQueue"
	localQueueKind   = "LocalQueue"
	flavorKind       = "ResourceFlavor"
)

// HasSynced reports whether every handler has seen its initial list.
func (c *Controller) HasSynced() bool {
	for _, r := range c.synced {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

// StatusInterval is how often queue status is brought up to date. Status
// changes with every admission; coalescing keeps its writes to at most one per
// queue per interval, whatever the admission rate.
const StatusInterval = time.Second

// Setup registers the informer handlers and the status writer with mgr.
func Setup(ctx context.Context, mgr manager.Manager, sched *scheduler.Scheduler, evict Evict) (*Controller, error) {
	c := &Controller{client: mgr.GetClient(), sched: sched, evict: evict, clock: clock.RealClock{},
		interval: StatusInterval, log: mgr.GetLogger().WithName("queues"), tending: map[objRef]bool{}}
	handlers := []struct {
		obj    client.Object
		set    func(obj any)
		del    func(obj any)
		status func(obj any)
	}{
		{&berthv1.ResourceFlavor{}, c.setFlavor, c.deleteFlavor, nil},
		{&berthv1.ClusterQueue{}, c.setClusterQueue, c.deleteClusterQueue, c.takeUpLedger},
		{&berthv1.Cohort{}, c.setCohort, c.deleteCohort, nil},
		{&berthv1.LocalQueue{}, c.setLocalQueue, c.deleteLocalQueue, c.takeUpShare},
	}
	for _, h := range handlers {
		inf, err := mgr.GetCache().GetInformer(ctx, h.obj)
		if err != nil {
			return nil, err
		}
		reg, err := inf.AddEventHandler(handler(h.set, h.del, h.status))
		if err != nil {
			return nil, err
		}
		c.synced = append(c.synced, reg)
	}
	return c, mgr.Add(manager.RunnableFunc(c.writeStatusLoop))
}

// handler calls set for a new object or a changed spec, status (when not
// nil) for any other update, del for a deleted one.
func handler(set, del, status func(obj any)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: set,
		UpdateFunc: func(old, obj any) {
			switch {
			case SpecChanged(old, obj):
				set(obj)
			case status != nil:
				status(obj)
			}
		},
		DeleteFunc: func(obj any) { del(unwrap(obj)) },
	}
}

// SpecChanged reports whether an update of a queue object changed what the
// scheduler is told: its spec (generation), its deletion, or whether it
// carries its in-use finalizer (it admits nothing before). Status-only
// writes, which berth makes to every queue every second while it admits, and
// other metadata-only ones change none, and must not rebuild the quota tree
// and requeue every set-aside workload.
func SpecChanged(old, obj any) bool {
	o, ok1 := old.(client.Object)
	n, ok2 := obj.(client.Object)
	if !ok1 || !ok2 {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() || !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
		controllerutil.ContainsFinalizer(o, InUseFinalizer) != controllerutil.ContainsFinalizer(n, InUseFinalizer)
}

func unwrap(obj any) any {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func (c *Controller) setFlavor(obj any) {
	rf, ok := obj.(*berthv1.ResourceFlavor)
	if !ok {
		return
	}
	if rf.DeletionTimestamp != nil {
		// Nothing new is admitted in a flavor being deleted; what holds
		// it keeps it until it finishes (InUseFinalizer).
		c.sched.DeleteFlavor(rf.Name)
	} else {
		c.sched.SetFlavor(FlavorOf(rf))
	}
	c.tend(objRef{flavorKind, rf.Name}, rf)
}

func (c *Controller) deleteFlavor(obj any) {
	if rf, ok := obj.(*berthv1.ResourceFlavor); ok {
		c.sched.DeleteFlavor(rf.Name)
	}
}

func (c *Controller) setClusterQueue(obj any) {
	cq, ok := obj.(*berthv1.ClusterQueue)
	if !ok {
		return
	}
	c.sched.SetClusterQueue(ClusterQueueOf(cq))
	c.takeUpLedger(cq)
	c.tend(objRef{clusterQueueKind, cq.Name}, cq)
	if cq.Spec.StopPolicy == berthv1.HoldAndDrain {
		if keys := c.sched.AdmittedIn(cq.Name); len(keys) > 0 {
			c.evict(keys, "ClusterQueueStopped", fmt.Sprintf("ClusterQueue %s is stopped with stopPolicy HoldAndDrain", cq.Name))
		}
	}
}

// takeUpLedger hands the scheduler what a ClusterQueue's status says its
// budget spent: after a restart, and on replicas that do not lead, the
// leader's charges.
func (c *Controller) takeUpLedger(obj any) {
	if cq, ok := obj.(*berthv1.ClusterQueue); ok {
		if l, ok := LedgerOf(cq.Status.Budget); ok {
			c.sched.TakeUpLedger(scheduler.BudgetOwner{Name: cq.Name}, l)
		}
	}
}

func (c *Controller) deleteClusterQueue(obj any) {
	cq, ok := obj.(*berthv1.ClusterQueue)
	if !ok {
		return
	}
	if keys := c.sched.DeleteClusterQueue(cq.Name); len(keys) > 0 {
		c.evict(keys, "ClusterQueueDeleted", fmt.Sprintf("ClusterQueue %s was deleted", cq.Name))
	}
	metrics.ForgetClusterQueue(cq.Name)
}

func (c *Controller) setCohort(obj any) {
	if co, ok := obj.(*berthv1.Cohort); ok {
		c.sched.SetCohort(CohortOf(co))
	}
}

func (c *Controller) deleteCohort(obj any) {
	if co, ok := obj.(*berthv1.Cohort); ok {
		c.sched.DeleteCohort(co.Name)
	}
}

func (c *Controller) setLocalQueue(obj any) {
	lq, ok := obj.(*berthv1.LocalQueue)
	if !ok {
		return
	}
	q := LocalQueueOf(lq)
	c.sched.SetLocalQueue(q)
	c.sched.SetLocalQueueWeight(q.Key, WeightOf(lq))
	// The API server refuses a budget berth cannot count by (the field's
	// validation rules), so BudgetOf finds no problem here.
	spec, _ := BudgetOf(lq.Spec.Budget)
	c.sched.SetLocalQueueBudget(q.Key, spec)
	c.takeUpShare(lq)
	c.tend(objRef{localQueueKind, q.Key}, lq)
	if lq.Spec.StopPolicy == berthv1.HoldAndDrain {
		if keys := c.sched.AdmittedThrough(q.Key); len(keys) > 0 {
			c.evict(keys, "LocalQueueStopped", fmt.Sprintf("LocalQueue %s is stopped with stopPolicy HoldAndDrain", q.Key))
		}
	}
}

// takeUpShare hands the scheduler what a LocalQueue's status says it
// consumed: after a restart, and on replicas that do not lead, the leader's
// samples.
func (c *Controller) takeUpShare(obj any) {
	if lq, ok := obj.(*berthv1.LocalQueue); ok {
		key := lq.Namespace + "/" + lq.Name
		if sh, ok := ShareOf(lq); ok {
			c.sched.TakeUpShare(key, sh)
		}
		if l, ok := LedgerOf(lq.Status.Budget); ok {
			c.sched.TakeUpLedger(scheduler.BudgetOwner{LocalQueue: true, Name: key}, l)
		}
	}
}

func (c *Controller) deleteLocalQueue(obj any) {
	if lq, ok := obj.(*berthv1.LocalQueue); ok {
		c.sched.DeleteLocalQueue(lq.Namespace + "/" + lq.Name)
		metrics.LocalQueueWeightedUsage.DeleteLabelValues(lq.Namespace + "/" + lq.Name)
	}
}

// writeStatusLoop brings the status of every queue the scheduler marked dirty
// up to date, once per interval.
func (c *Controller) writeStatusLoop(ctx context.Context) error {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		c.tendFinalizers(ctx)
		c.sched.SampleShares()
		c.sched.ChargeBudgets()
		cqs, lqs, cohorts := c.sched.TakeDirty()
		for _, name := range cohorts {
			if err := c.writeCohortStatus(ctx, name); err != nil {
				c.log.Error(err, "writing status", "cohort", name)
				c.sched.MarkDirty(nil, nil, []string{name})
			}
		}
		for _, name := range cqs {
			if err := c.writeClusterQueueStatus(ctx, name); err != nil {
				c.log.Error(err, "writing status", "clusterQueue", name)
				c.sched.MarkDirty([]string{name}, nil, nil)
			}
		}
		for _, key := range lqs {
			if err := c.writeLocalQueueStatus(ctx, key); err != nil {
				c.log.Error(err, "writing status", "localQueue", key)
				c.sched.MarkDirty(nil, []string{key}, nil)
			}
		}
	}
}

func (c *Controller) writeClusterQueueStatus(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	st := c.sched.ClusterQueueStatus(name)
	c.recordMetrics(name, st)
	var cq berthv1.ClusterQueue
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, &cq); err != nil {
		return client.IgnoreNotFound(err)
	}
	want := ClusterQueueStatusOf(&cq, st, c.clock.Now())
	if spec, l, ok := c.sched.Budget(scheduler.BudgetOwner{Name: name}); ok {
		var cond metav1.Condition
		want.Budget, cond = BudgetStatusOf(spec, l, cq.Generation, c.clock.Now())
		meta.SetStatusCondition(&want.Conditions, cond)
		metrics.BudgetSpent.WithLabelValues(name).Set(spec.Spent(l, c.clock.Now()))
	} else {
		meta.RemoveStatusCondition(&want.Conditions, "BudgetSpent")
	}
	if cq.DeletionTimestamp != nil {
		if users := c.sched.AdmittedIn(name); len(users) > 0 {
			setTerminating(&want.Conditions, users, cq.Generation, c.clock.Now())
		}
	}
	if equality.Semantic.DeepEqual(cq.Status, want) {
		return nil
	}
	return c.patchStatus(ctx, &cq, want)
}

func (c *Controller) writeCohortStatus(ctx context.Context, name string) error {
	var co berthv1.Cohort
	if err := c.client.Get(ctx, types.NamespacedName{Name: name}, &co); err != nil {
		return client.IgnoreNotFound(err) // a cohort only named by ClusterQueues has no object
	}
	want := CohortStatusOf(&co, c.sched.CohortCycle(name), c.clock.Now())
	if equality.Semantic.DeepEqual(co.Status, want) {
		return nil
	}
	return c.patchStatus(ctx, &co, want)
}

func (c *Controller) writeLocalQueueStatus(ctx context.Context, key string) error {
	ns, name, ok := strings.Cut(key, "/")
	if !ok || name == "" {
		return nil
	}
	var lq berthv1.LocalQueue
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &lq); err != nil {
		return client.IgnoreNotFound(err)
	}
	st := c.sched.LocalQueueStatus(key)
	cqInactive := c.sched.ClusterQueueStatus(lq.Spec.ClusterQueue).Inactive
	want := LocalQueueStatusOf(&lq, st, cqInactive, c.clock.Now())
	if spec, l, ok := c.sched.Budget(scheduler.BudgetOwner{LocalQueue: true, Name: key}); ok {
		var cond metav1.Condition
		want.Budget, cond = BudgetStatusOf(spec, l, lq.Generation, c.clock.Now())
		meta.SetStatusCondition(&want.Conditions, cond)
		if cond.Status == metav1.ConditionTrue {
			// Active says it takes nothing now, as for a stopPolicy.
			meta.SetStatusCondition(&want.Conditions, metav1.Condition{Type: "Active", Status: metav1.ConditionFalse, Reason: "BudgetSpent",
				Message: cond.Message, ObservedGeneration: lq.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now())})
		}
	} else {
		meta.RemoveStatusCondition(&want.Conditions, "BudgetSpent")
	}
	if sh, score, ok := c.sched.Share(key); ok {
		want.FairSharing = ShareStatusOf(sh, score)
		metrics.LocalQueueWeightedUsage.WithLabelValues(key).Set(score)
	}
	if lq.DeletionTimestamp != nil {
		if users := c.sched.AdmittedThrough(key); len(users) > 0 {
			setTerminating(&want.Conditions, users, lq.Generation, c.clock.Now())
		}
	}
	if equality.Semantic.DeepEqual(lq.Status, want) {
		return nil
	}
	return c.patchStatus(ctx, &lq, want)
}

func (c *Controller) recordMetrics(name string, st scheduler.ClusterQueueStatus) {
	metrics.PendingWorkloads.WithLabelValues(name, "active").Set(float64(st.Pending))
	metrics.PendingWorkloads.WithLabelValues(name, "inadmissible").Set(float64(st.Inadmissible))
	metrics.ReservingWorkloads.WithLabelValues(name).Set(float64(st.Reserving))
	for fr, v := range st.Nominal {
		metrics.NominalQuota.WithLabelValues(name, fr.Flavor, fr.Resource).Set(float64(v) / 1000)
		metrics.QuotaUsage.WithLabelValues(name, fr.Flavor, fr.Resource).Set(float64(st.Usage[fr]) / 1000)
	}
	for fr, v := range st.Usage {
		if _, ok := st.Nominal[fr]; !ok {
			metrics.QuotaUsage.WithLabelValues(name, fr.Flavor, fr.Resource).Set(float64(v) / 1000)
		}
	}
}

// patchStatus writes a whole status: berth owns all of it, and a diff-based
// patch would leave out counts that are zero.
func (c *Controller) patchStatus(ctx context.Context, obj client.Object, status any) error {
	data, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	return ignoreGone(c.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, data)))
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
