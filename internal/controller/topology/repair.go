package topology

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/metrics"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=patch

// NodeFailedReason is the eviction reason of a workload whose pods lost
// their nodes and have no room where its topology request allows.
const NodeFailedReason = "NodeFailed"

// repairAttempts is how often a repair's write is tried before it is
// dropped: a Workload that keeps changing under it is read again from the
// API, and the scheduler looks at what it shows.
const repairAttempts = 10

type pendingRepair struct {
	core.Repair
	attempts int
}

// repairLoop looks for repairs every FlushInterval while this replica
// leads; a look costs nothing unless a node's health changed.
func (c *Controller) repairLoop(ctx context.Context) error {
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			c.repair(ctx)
		}
	}
}

// repair carries out the scheduler's repairs of placements whose nodes
// failed: new domains written into each Workload's admission (its pods'
// placement reconciler then moves the lost pods), or an eviction.
func (c *Controller) repair(ctx context.Context) {
	for _, r := range c.sched.Repairs() {
		if r.Evict != "" {
			metrics.NodeFailureRepairs.WithLabelValues("evicted").Inc()
			c.evict(r.Key, NodeFailedReason, fmt.Sprintf("its pods lost %s, which failed: %s", strings.Join(r.Lost, ", "), r.Evict))
			continue
		}
		c.retry = append(c.retry, pendingRepair{Repair: r})
	}
	left := c.retry[:0]
	for _, p := range c.retry {
		err := c.writeRepair(ctx, p.Repair)
		if err == nil {
			continue
		}
		if p.attempts++; p.attempts < repairAttempts {
			left = append(left, p)
			continue
		}
		c.log.Error(err, "writing a repaired placement; giving up, the scheduler repairs what the API shows", "workload", p.Key)
		c.sched.RepairAgain()
	}
	c.retry = left
}

// writeRepair writes one repair onto the cached Workload, with an
// optimistic lock: a cache behind the API server fails it, to be retried.
func (c *Controller) writeRepair(ctx context.Context, r core.Repair) error {
	ns, name, _ := strings.Cut(r.Key, "/")
	var wl berthv1.Workload
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &wl); err != nil {
		return client.IgnoreNotFound(err)
	}
	orig := wl.DeepCopy()
	if !workload.ApplyRepair(&wl, r) {
		return nil // evicted, finished or repaired since
	}
	err := c.client.Status().Patch(ctx, &wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		if !apierrors.IsConflict(err) {
			c.log.Error(err, "writing a repaired placement; will retry", "workload", r.Key)
		}
		return client.IgnoreNotFound(err)
	}
	metrics.NodeFailureRepairs.WithLabelValues("moved").Inc()
	c.rec.Eventf(&wl, nil, corev1.EventTypeNormal, "PodsMoved", "Placement",
		"its pods on %s, which failed, get room on %s", strings.Join(r.Lost, ", "), strings.Join(r.Gained, ", "))
	return nil
}
