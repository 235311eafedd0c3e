package podgroups

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/workload"
	"github.com/berth-dev/berth/internal/written"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update
// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=berth.dev,resources=workloads/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch

// Reconciler keeps each pod group and its Workload in step. Its requests
// name a group: the namespace, and the group's name.
type Reconciler struct {
	client client.Client
	// live reads from the API server: a group is started and released on
	// what it says, never on a cache that may lag it.
	live  client.Reader
	rec   events.EventRecorder
	clock clock.Clock
	// statefulSets: the groups of StatefulSets' Pods are queued (the
	// statefulset integration is on).
	statefulSets bool
	// podsReady: record when a StatefulSet's group has all its Pods Ready
	// (--wait-for-pods-ready).
	podsReady bool
	// written holds the versions client's writes returned: a group the
	// cache shows from before them is not acted on again.
	written *written.Versions
}

// groupIndex indexes cached Pods by the name of their pod group.
const groupIndex = "berth.dev/pod-group"

// Setup registers the pod-group reconciler with mgr; with statefulSets,
// the groups of queued StatefulSets' Pods too; with podsReady, it records
// when those have all their Pods Ready.
func Setup(ctx context.Context, mgr ctrl.Manager, statefulSets, podsReady bool) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, groupIndex, func(o client.Object) []string {
		if g, _, _ := pods.Group(o); g != "" {
			return []string{g}
		}
		return nil
	}); err != nil {
		return err
	}
	w := written.New(time.Now)
	r := &Reconciler{client: w.Client(mgr.GetClient()), live: mgr.GetAPIReader(), rec: mgr.GetEventRecorder("berth-podgroups"),
		clock: clock.RealClock{}, statefulSets: statefulSets, podsReady: podsReady, written: w}
	ofPod := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if g, _, _ := pods.Group(o); g != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: g}}}
		}
		return nil
	})
	ofWorkload := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if g := o.GetLabels()[berthv1.PodGroupNameLabel]; g != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: g}}}
		}
		return nil
	})
	podsOfClass := integration.OfClass(r.client, func() client.ObjectList { return &corev1.PodList{} })
	ofClass := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, req := range podsOfClass(ctx, o) {
			var pod corev1.Pod
			if r.client.Get(ctx, req.NamespacedName, &pod) == nil {
				if g, _, _ := pods.Group(&pod); g != "" {
					out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: g}})
				}
			}
		}
		return out
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("podgroup").
		Watches(&corev1.Pod{}, ofPod).
		Watches(&berthv1.Workload{}, ofWorkload).
		// A class that appears after its Pods were queued (integration.OfClass).
		Watches(&berthv1.WorkloadPriorityClass{}, ofClass)
	if statefulSets {
		// Scaled, a StatefulSet's group changes size.
		b = b.Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if integration.QueueName(o.GetLabels()) == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: pods.StatefulSetGroup(o.GetName())}}}
		}))
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: 8}).Complete(r)
}

// WorkloadName is the name of a pod group's Workload.
func WorkloadName(group string) string {
	return integration.WorkloadName("group", group, types.UID(group))
}

// Reconcile brings one pod group and its Workload in step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	g, err := r.read(ctx, req, false)
	if err != nil || g == nil {
		return reconcile.Result{}, err
	}
	if r.stale(g) {
		// The cache has not caught up with this reconciler's last write (a
		// Pod let go, say): the watch event that brings it asks again.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	p := Decide(*g, r.clock.Now())
	if len(p.Start) > 0 || p.Release {
		// Pods start, or quota goes back, on what the API server says: a
		// cache may still show a Workload admitted that was since evicted,
		// or a Pod gone that runs (after an API-server restart, say).
		if g, err = r.read(ctx, req, true); err != nil || g == nil {
			return reconcile.Result{}, err
		}
		p = Decide(*g, r.clock.Now())
	}
	if err := r.carryOut(ctx, g, p); err != nil {
		if apierrors.IsConflict(err) {
			// Read from a cache behind the API server: the newer object's
			// event brings the group back; this is a safety net.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.RecheckAfter}, nil
}

// stale says whether the cache shows any of the group's objects from
// before this reconciler's last write to it.
func (r *Reconciler) stale(g *Group) bool {
	if g.Workload != nil && r.written.Stale(g.Workload) {
		return true
	}
	return slices.ContainsFunc(g.Pods, func(p *corev1.Pod) bool { return r.written.Stale(p) })
}

// read gathers the group: the Pods berth holds, its Workload, and the
// queue and priority of its oldest Pod; from the cache, or with live from
// the API server. nil when there is nothing to do.
func (r *Reconciler) read(ctx context.Context, req reconcile.Request, live bool) (*Group, error) {
	var list []corev1.Pod
	var from client.Reader = r.client
	if live {
		from = r.live
		// The API server has no index: each pod group label, then the Pods
		// whose group (pods.Group) is this one.
		seen := map[types.UID]bool{}
		for _, label := range []string{berthv1.PodGroupNameLabel, berthv1.KueuePodGroupNameLabel} {
			var l corev1.PodList
			if err := r.live.List(ctx, &l, client.InNamespace(req.Namespace), client.MatchingLabels{label: req.Name}); err != nil {
				return nil, err
			}
			for _, pod := range l.Items {
				if g, _, _ := pods.Group(&pod); g == req.Name && !seen[pod.UID] {
					seen[pod.UID] = true
					list = append(list, pod)
				}
			}
		}
	} else {
		var l corev1.PodList
		if err := r.client.List(ctx, &l, client.InNamespace(req.Namespace), client.MatchingFields{groupIndex: req.Name}); err != nil {
			return nil, err
		}
		list = l.Items
	}
	g := &Group{Name: req.Name}
	totals := map[int32]bool{}
	var sts *types.NamespacedName // the StatefulSet whose Pods these are
	for i := range list {
		pod := &list[i]
		if !controllerutil.ContainsFinalizer(pod, berthv1.PodFinalizer) && !pods.Gated(pod) {
			continue // not held by berth: created before its webhook ran, or let go
		}
		_, total, err := pods.Group(pod)
		if err != nil {
			continue // the webhook refuses such Pods; one changed later is ignored
		}
		if total == 0 {
			sts = &types.NamespacedName{Namespace: pod.Namespace, Name: pods.StatefulSetOf(pod)}
		} else {
			totals[total] = true
			g.Total = total
		}
		g.Pods = append(g.Pods, pod)
	}
	slices.SortFunc(g.Pods, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var wl berthv1.Workload
	err := from.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: WorkloadName(req.Name)}, &wl)
	switch {
	case err == nil:
		g.Workload = &wl
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	if g.Workload != nil {
		if ref := statefulSetOf(g.Workload); ref != nil {
			sts = &types.NamespacedName{Namespace: g.Workload.Namespace, Name: ref.Name}
		}
	}
	if sts != nil {
		if !r.statefulSets {
			return nil, nil // a StatefulSet's Pods are left to it
		}
		return g, r.readStatefulSet(ctx, g, *sts)
	}
	if len(g.Pods) == 0 {
		return nil, nil // the Workload goes with its owners
	}
	newest := g.Pods[len(g.Pods)-1]
	if len(totals) > 1 {
		r.rec.Eventf(newest, nil, corev1.EventTypeWarning, "PodGroupInconsistent", "Admission",
			"the Pods of pod group %s disagree on its total count (annotation %s); it is not queued until they agree",
			req.Name, berthv1.PodGroupTotalCountAnnotation)
		return nil, nil
	}
	r.readQueue(ctx, g)
	return g, nil
}

// readQueue sets the queue, topology and priority of g's Workload from its
// oldest Pod; a Workload holding quota keeps its priority.
func (r *Reconciler) readQueue(ctx context.Context, g *Group) {
	oldest := g.Pods[0]
	g.Queue = pods.Kind{}.QueueName(oldest)
	g.Topology, _ = integration.TopologyRequestOf(oldest.Annotations) // the webhook refuses wrong ones
	if g.Workload == nil || !workload.HasQuota(g.Workload) {
		g.Priority, g.PriorityClass = integration.PriorityOf(ctx, r.client, r.rec, oldest, oldest.Spec.PriorityClassName)
	} else {
		g.Priority, g.PriorityClass = g.Workload.Spec.Priority, g.Workload.Spec.PriorityClassName
	}
}

// readStatefulSet completes g, the group of StatefulSet key's Pods: its
// size is the StatefulSet's replicas, 0 once it is gone (or is another of
// the same name than its Workload's). Only the Pods it controls are of the
// group: another Pod naming it (its owner reference made up) is left out.
func (r *Reconciler) readStatefulSet(ctx context.Context, g *Group, key types.NamespacedName) error {
	g.StatefulSet = &StatefulSet{Name: key.Name}
	var s appsv1.StatefulSet
	switch err := r.client.Get(ctx, key, &s); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case g.Workload != nil && statefulSetOf(g.Workload) != nil && statefulSetOf(g.Workload).UID != s.UID:
		// The Workload of a StatefulSet deleted and made again: it goes.
	default:
		g.StatefulSet.UID = s.UID
		g.Total = ptr.Deref(s.Spec.Replicas, 1)
		g.Pods = slices.DeleteFunc(g.Pods, func(p *corev1.Pod) bool { return !metav1.IsControlledBy(p, &s) })
	}
	if len(g.Pods) > 0 {
		r.readQueue(ctx, g)
	} else if g.Workload != nil {
		g.Queue, g.Priority, g.PriorityClass = g.Workload.Spec.QueueName, g.Workload.Spec.Priority, g.Workload.Spec.PriorityClassName
	}
	return nil
}

// statefulSetOf is the StatefulSet owning a group's Workload, or nil.
func statefulSetOf(wl *berthv1.Workload) *metav1.OwnerReference {
	for i, ref := range wl.OwnerReferences {
		if ref.Kind == "StatefulSet" && ref.APIVersion == "apps/v1" {
			return &wl.OwnerReferences[i]
		}
	}
	return nil
}

// carryOut writes plan p for group g. Each write is idempotent, so a
// failure part-way is finished by the next reconcile.
func (r *Reconciler) carryOut(ctx context.Context, g *Group, p Plan) error {
	for _, pod := range p.Stop {
		if err := pods.Stop(ctx, r.client, r.rec, pod, p.StopWhy, r.clock.Now()); err != nil {
			return err
		}
	}
	for _, pod := range p.LetGo {
		if err := pods.LetGo(ctx, r.client, pod); err != nil {
			return err
		}
	}
	if p.Waiting != "" {
		r.rec.Eventf(g.Pods[len(g.Pods)-1], nil, corev1.EventTypeNormal, "PodGroupWaiting", "Admission", "%s", p.Waiting)
	}
	wl := g.Workload
	now := r.clock.Now()
	switch {
	case p.Create:
		wl = r.newWorkload(g, p.Spec)
		if err := r.client.Create(ctx, wl); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Workload for pod group %s/%s: %w", wl.Namespace, g.Name, err)
		}
		return nil
	case p.Delete:
		return client.IgnoreNotFound(r.client.Delete(ctx, wl, client.Preconditions{UID: &wl.UID, ResourceVersion: &wl.ResourceVersion}))
	case p.Release:
		orig := wl.DeepCopy()
		workload.ReleaseStopped(wl, now)
		return r.patchStatus(ctx, wl, orig)
	case p.Resize:
		orig := wl.DeepCopy()
		workload.SetStopping(wl, p.Reason, p.Message, now, false)
		if err := r.patchStatus(ctx, wl, orig); err != nil {
			return err
		}
		r.rec.Eventf(wl, nil, corev1.EventTypeNormal, "Resized", "Eviction", "%s", p.Message)
		return nil
	case p.Finish:
		orig := wl.DeepCopy()
		workload.SetFinished(wl, p.Reason, p.Message, now)
		return r.patchStatus(ctx, wl, orig)
	}
	if len(p.Adopt) > 0 || p.Update {
		orig := wl.DeepCopy()
		for _, pod := range p.Adopt {
			wl.OwnerReferences = append(wl.OwnerReferences, ownerRef(pod))
		}
		if p.Update {
			active := wl.Spec.Active // stopped or not, by the user (sameSpec)
			wl.Spec = p.Spec
			wl.Spec.Active = active
		}
		if err := r.client.Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	for _, s := range p.Start {
		if err := r.start(ctx, wl, s); err != nil {
			return err
		}
	}
	if p.PodsReady != "" && r.podsReady && workload.PodsReadySubject(wl) {
		orig := wl.DeepCopy()
		workload.SetPodsReady(wl, p.PodsReady, now)
		return r.patchStatus(ctx, wl, orig)
	}
	return nil
}

func (r *Reconciler) patchStatus(ctx context.Context, wl, orig *berthv1.Workload) error {
	return client.IgnoreNotFound(r.client.Status().Patch(ctx, wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// newWorkload makes the group's Workload, owned by each of its Pods so that
// it goes when the last of them goes, and labelled with the group's name.
func (r *Reconciler) newWorkload(g *Group, spec berthv1.WorkloadSpec) *berthv1.Workload {
	first := g.Pods[0]
	wl := integration.NewWorkload(first, corev1.SchemeGroupVersion.WithKind("Pod"), WorkloadName(g.Name),
		map[string]string{berthv1.PodGroupNameLabel: g.Name}, spec)
	wl.OwnerReferences = nil
	if s := g.StatefulSet; s != nil {
		// It stays while the StatefulSet does, its Pods coming and going.
		wl.OwnerReferences = append(wl.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet",
			Name: s.Name, UID: s.UID})
	}
	for _, pod := range g.Pods {
		if pod.DeletionTimestamp == nil {
			wl.OwnerReferences = append(wl.OwnerReferences, ownerRef(pod))
		}
	}
	return wl
}

// ownerRef makes pod one of the owners of its group's Workload. None is its
// controller: the group is.
func ownerRef(pod *corev1.Pod) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
}

// start lets one Pod of an admitted group run in its pod set's flavors,
// recording the pod set on it.
func (r *Reconciler) start(ctx context.Context, wl *berthv1.Workload, s Start) error {
	flavors, err := integration.AdmittedFlavors(ctx, r.client, wl, s.PodSet)
	if err != nil {
		return err
	}
	pod := s.Pod.DeepCopy()
	if err := (pods.Kind{}).Start(pod, map[string][]*berthv1.ResourceFlavor{"main": flavors}); err != nil {
		return err
	}
	if err := (pods.Kind{}).Steer(pod, wl.Spec.QueueName, integration.Placed(wl.Status.Admission, s.PodSet)); err != nil {
		return err
	}
	metav1.SetMetaDataAnnotation(&pod.ObjectMeta, berthv1.PodSetAnnotation, s.PodSet)
	if err := r.client.Update(ctx, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.rec.Eventf(pod, wl, corev1.EventTypeNormal, "Started", "Admission", "admitted with pod group %s by ClusterQueue %s",
		wl.Labels[berthv1.PodGroupNameLabel], wl.Status.Admission.ClusterQueue)
	return nil
}
