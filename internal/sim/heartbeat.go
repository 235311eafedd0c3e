package sim

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/berth-dev/berth/internal/sim/delayqueue"
)

// heartbeat keeps each managed node's Lease in kube-node-lease renewed, as a
// kubelet does: the node lifecycle controller reads node health from it, so
// nodes stay Ready without a status write per heartbeat. Renewals are spread
// over the interval so thousands of nodes do not renew at once.
type heartbeat struct {
	client   kubernetes.Interface
	clock    clock.Clock
	duration time.Duration
	interval time.Duration
	log      logr.Logger
	metrics  *simMetrics
	queue    *delayqueue.Queue

	mu    sync.Mutex
	nodes map[string]*leaseState
	seq   uint64
	rng   *rand.Rand
}

type leaseState struct {
	node  *corev1.Node // name and uid, for the lease's owner reference
	lease *coordinationv1.Lease
}

const leaseNamespace = corev1.NamespaceNodeLease

func newHeartbeat(client kubernetes.Interface, cfg Config, log logr.Logger, m *simMetrics) *heartbeat {
	return &heartbeat{client: client, clock: cfg.Clock, duration: cfg.LeaseDuration, interval: cfg.RenewInterval,
		log: log, metrics: m, queue: delayqueue.New(cfg.Clock), nodes: map[string]*leaseState{},
		rng: rand.New(rand.NewPCG(cfg.Seed, 7))}
}

// track starts renewing a node's lease, at once for a node seen the first time.
func (h *heartbeat) track(n *corev1.Node) {
	if h.register(n) {
		h.schedule(n.Name, 0)
	}
}

// start tracks a node and makes its first renewal (creating its lease) now,
// in the caller's goroutine, unless the node is tracked already.
func (h *heartbeat) start(ctx context.Context, n *corev1.Node) {
	if h.register(n) {
		h.renew(ctx, n.Name)
	}
}

// register records a node to renew; false if it is tracked already.
func (h *heartbeat) register(n *corev1.Node) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.nodes[n.Name]; ok && st.node.UID == n.UID {
		return false
	}
	h.nodes[n.Name] = &leaseState{node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID}}}
	return true
}

func (h *heartbeat) untrack(name string) {
	h.mu.Lock()
	delete(h.nodes, name)
	h.mu.Unlock()
	h.queue.Cancel(name, "")
}

// schedule queues the node's next renewal after about d.
func (h *heartbeat) schedule(name string, d time.Duration) {
	h.mu.Lock()
	h.seq++
	seq := h.seq
	if d > 0 {
		d = d*9/10 + time.Duration(h.rng.Int64N(int64(d/5)+1))
	}
	h.mu.Unlock()
	// Sequence numbers as versions: each renewal supersedes the last.
	h.queue.Offer(delayqueue.Item{Key: name, ResourceVersion: strconv.FormatUint(seq, 10), Stage: "renew", Due: h.clock.Now().Add(d)})
}

func (h *heartbeat) run(ctx context.Context) {
	var wg sync.WaitGroup
	// Enough workers that renewals keep up while the API server is slow
	// under load (5,000 nodes renewing every 30 s at 250 ms a write need 42);
	// each renewal is one small write.
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, ok := h.queue.Get(ctx)
				if !ok {
					return
				}
				h.renew(ctx, it.Key)
				h.queue.Done(it.Key)
			}
		}()
	}
	wg.Wait()
}

func (h *heartbeat) renew(ctx context.Context, name string) {
	h.mu.Lock()
	st, ok := h.nodes[name]
	var lease *coordinationv1.Lease
	if ok && st.lease != nil {
		lease = st.lease.DeepCopy()
	}
	h.mu.Unlock()
	if !ok {
		return // the node is gone
	}
	now := metav1.NewMicroTime(h.clock.Now())
	var err error
	if lease != nil {
		lease.Spec.RenewTime = &now
		lease, err = h.client.CoordinationV1().Leases(leaseNamespace).Update(ctx, lease, metav1.UpdateOptions{})
	}
	if lease == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		lease, err = h.createOrTake(ctx, st.node, now)
	}
	h.mu.Lock()
	if cur, ok := h.nodes[name]; ok && cur == st {
		if err == nil {
			lease.ManagedFields = nil
			st.lease = lease
		} else {
			st.lease = nil // read it afresh next time
		}
	}
	h.mu.Unlock()
	result := "renewed"
	next := h.interval
	if err != nil {
		result = "failed"
		next = min(h.interval, 2*time.Second)
		if ctx.Err() == nil {
			h.log.V(1).Info("renewing node lease failed", "node", name, "reason", err.Error())
		}
	}
	h.metrics.leaseRenewals.WithLabelValues(result).Inc()
	if ctx.Err() == nil {
		h.schedule(name, next)
	}
}

// createOrTake creates the node's lease, or takes over the one there is.
// Creating comes first: for a new node it is the one request needed.
func (h *heartbeat) createOrTake(ctx context.Context, node *corev1.Node, now metav1.MicroTime) (*coordinationv1.Lease, error) {
	leases := h.client.CoordinationV1().Leases(leaseNamespace)
	spec := coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name),
		LeaseDurationSeconds: ptr.To(int32(h.duration / time.Second)), RenewTime: &now}
	lease, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Namespace: leaseNamespace,
			// Deleted with its node, as a kubelet's lease is.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
		Spec: spec,
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return lease, err
	}
	if lease, err = leases.Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = spec.HolderIdentity, spec.LeaseDurationSeconds, spec.RenewTime
	return leases.Update(ctx, lease, metav1.UpdateOptions{})
}
