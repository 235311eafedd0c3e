package topology

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/scheduler"
	"github.com/berth-dev/berth/internal/topology"
)

// +kubebuilder:rbac:groups=berth.dev,resources=topologies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// FlushInterval is how often changed nodes are handed to the scheduler:
// pods come and go all the time, and each hand-over looks at the waiting
// workloads again.
const FlushInterval = 500 * time.Millisecond

// Controller tells the scheduler about Topologies and nodes, and carries
// out its repairs of placements whose nodes failed (repair.go).
type Controller struct {
	sched  *scheduler.Scheduler
	client client.Client
	evict  func(key, reason, message string)
	retry  []pendingRepair // repairs whose write failed, only touched by repairLoop
	rec    events.EventRecorder
	cfg    *rest.Config
	ctx    context.Context
	log    logr.Logger
	once   sync.Once

	mu    sync.Mutex
	nodes map[string]*corev1.Node
	used  map[string]map[string]int64 // node -> what its pods take
	pods  map[types.UID]podUse
	dirty map[string]bool
}

type podUse struct {
	node  string
	usage map[string]int64
}

// Setup watches Topologies with mgr's cache; nodes and pods are watched
// from the first Topology on, so that a cluster without topology-aware
// placement pays nothing for it. evict takes a workload's quota away (the
// admission controller's).
func Setup(ctx context.Context, mgr manager.Manager, sched *scheduler.Scheduler, evict func(key, reason, message string)) error {
	c := &Controller{sched: sched, client: mgr.GetClient(), evict: evict,
		rec: mgr.GetEventRecorder("berth-topology"), cfg: mgr.GetConfig(), ctx: ctx,
		log: mgr.GetLogger().WithName("topology"), nodes: map[string]*corev1.Node{},
		used: map[string]map[string]int64{}, pods: map[types.UID]podUse{}, dirty: map[string]bool{}}
	inf, err := mgr.GetCache().GetInformer(ctx, &berthv1.Topology{})
	if err != nil {
		return err
	}
	// Repairs write to the API: the leader's alone (a manager runs a
	// Runnable only while it leads unless the Runnable says otherwise).
	if err := mgr.Add(manager.RunnableFunc(c.repairLoop)); err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.setTopology,
		UpdateFunc: func(_, obj any) { c.setTopology(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if t, ok := obj.(*berthv1.Topology); ok {
				c.sched.DeleteTopology(t.Name)
			}
		},
	})
	return err
}

func (c *Controller) setTopology(obj any) {
	t, ok := obj.(*berthv1.Topology)
	if !ok {
		return
	}
	var levels []string
	for _, l := range t.Spec.Levels {
		levels = append(levels, l.NodeLabel)
	}
	c.sched.SetTopology(t.Name, levels)
	if len(levels) == 0 {
		// The API refuses such a Topology; one stored anyway (by an older
		// version, or straight into etcd) is reported, never indexed.
		c.rec.Eventf(t, nil, corev1.EventTypeWarning, "NoLevels", "Placement",
			"Topology %s has no levels: ClusterQueues of the ResourceFlavors that name it admit nothing until it has", t.Name)
	}
	c.once.Do(func() { go c.watchNodes() })
}

// watchNodes follows nodes and the pods bound to them until the
// controller stops, handing changed nodes to the scheduler in batches.
func (c *Controller) watchNodes() {
	kube, err := kubernetes.NewForConfig(c.cfg)
	if err != nil {
		c.log.Error(err, "watching nodes for topology-aware placement")
		return
	}
	bound := fields.AndSelectors(fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed))).String()
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(slim))
	pods := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(slim),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = bound }))
	_, _ = f.Core().V1().Nodes().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.setNode, UpdateFunc: func(_, o any) { c.setNode(o) }, DeleteFunc: c.deleteNode})
	_, _ = pods.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.setPod, UpdateFunc: func(_, o any) { c.setPod(o) }, DeleteFunc: c.deletePod})
	f.Start(c.ctx.Done())
	pods.Start(c.ctx.Done())
	// Every node seen before the scheduler counts on the feed: one not seen
	// yet must not pass for one deleted.
	f.WaitForCacheSync(c.ctx.Done())
	pods.WaitForCacheSync(c.ctx.Done())
	if c.ctx.Err() != nil {
		return
	}
	c.sched.SetNodeSource(c.take)
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
			c.flush()
		}
	}
}

// slim keeps of nodes and pods only what placement reads.
func slim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: o.Labels, ResourceVersion: o.ResourceVersion},
			Spec:   corev1.NodeSpec{Taints: o.Spec.Taints, Unschedulable: o.Spec.Unschedulable},
			Status: corev1.NodeStatus{Allocatable: o.Status.Allocatable, Conditions: o.Status.Conditions}}, nil
	case *corev1.Pod:
		out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID,
			ResourceVersion: o.ResourceVersion}, Status: corev1.PodStatus{Phase: o.Status.Phase}}
		if v := o.Labels[berthv1.TopologyPlacedLabel]; v != "" {
			out.Labels = map[string]string{berthv1.TopologyPlacedLabel: v}
		}
		out.Spec.NodeName = o.Spec.NodeName
		out.Spec.Overhead = o.Spec.Overhead
		for _, ctr := range o.Spec.Containers {
			out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: ctr.Name, Resources: ctr.Resources})
		}
		for _, ctr := range o.Spec.InitContainers {
			out.Spec.InitContainers = append(out.Spec.InitContainers, corev1.Container{Name: ctr.Name,
				Resources: ctr.Resources, RestartPolicy: ctr.RestartPolicy})
		}
		return out, nil
	}
	return obj, nil
}

func (c *Controller) setNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[n.Name] = n
	c.dirty[n.Name] = true
}

func (c *Controller) deleteNode(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, n.Name)
	c.dirty[n.Name] = true
}

func (c *Controller) setPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(p.UID)
	if u := PodUsage(p); u != nil {
		c.pods[p.UID] = podUse{node: p.Spec.NodeName, usage: u}
		c.add(p.Spec.NodeName, u, 1)
	}
}

func (c *Controller) deletePod(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.forget(p.UID)
	}
}

// forget takes back what a pod was counted for.
func (c *Controller) forget(uid types.UID) {
	if old, ok := c.pods[uid]; ok {
		c.add(old.node, old.usage, -1)
		delete(c.pods, uid)
	}
}

func (c *Controller) add(node string, usage map[string]int64, sign int64) {
	if c.used[node] == nil {
		c.used[node] = map[string]int64{}
	}
	for r, v := range usage {
		c.used[node][r] += sign * v
	}
	c.dirty[node] = true
}

// flush hands the nodes changed since they were last taken to the
// scheduler, and has it look at the waiting workloads again.
func (c *Controller) flush() {
	set, gone := c.take()
	c.sched.SetNodes(set, gone)
}

// take returns the nodes changed since the last take; every scheduling
// cycle takes them too (scheduler.SetNodeSource), so that a placement
// counts every pod the feed has seen.
func (c *Controller) take() (set []topology.Node, gone []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.dirty {
		if n, ok := c.nodes[name]; ok {
			set = append(set, NodeOf(n, c.used[name]))
		} else {
			gone = append(gone, name)
		}
	}
	clear(c.dirty)
	return set, gone
}
