package placement

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/podgroups"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/workload"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;update;delete
// +kubebuilder:rbac:groups=berth.dev,resources=workloads,verbs=get;list;watch

// WebhookPath is where the Gater is served.
const WebhookPath = "/mutate-v1-pod-topology"

// Gater is the Pod webhook that creates each pod labelled
// berth.dev/topology-placed with the gate berth.dev/topology.
type Gater struct{ decoder admission.Decoder }

// NewGater returns the webhook handler.
func NewGater(scheme *runtime.Scheme) *Gater { return &Gater{decoder: admission.NewDecoder(scheme)} }

// Handle gates a new pod of a topology-aware pod set.
func (g *Gater) Handle(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := g.decoder.Decode(req, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if pod.Labels[berthv1.TopologyPlacedLabel] == "" || Gated(&pod) {
		return admission.Allowed("nothing to gate")
	}
	gates := func() []integration.Field {
		return []integration.Field{{Path: "/spec/schedulingGates", Value: pod.Spec.SchedulingGates}}
	}
	before, err := integration.Snapshot(gates())
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: berthv1.TopologyGate})
	return integration.FieldPatch(before, gates())
}

// WorkloadOf is the Workload a topology-placed pod belongs to.
func WorkloadOf(pod client.Object) (types.NamespacedName, bool) {
	if pod.GetLabels()[berthv1.TopologyPlacedLabel] == "" {
		return types.NamespacedName{}, false
	}
	return PodWorkload(pod)
}

// PodWorkload is the Workload a pod would belong to if berth queued it:
// the prebuilt one its template names (a JobSet's or Job's a manager
// cluster made here), its JobSet's, its Job's, its pod group's, or its own.
// The dashboard finds a workload's pods with it too.
func PodWorkload(pod client.Object) (types.NamespacedName, bool) {
	key := types.NamespacedName{Namespace: pod.GetNamespace()}
	ref := metav1.GetControllerOf(pod)
	labels := pod.GetLabels()
	switch group, _, _ := pods.Group(pod); {
	case ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") && labels[berthv1.PrebuiltWorkloadLabel] != "":
		// Its Job's template carries it: a copy a manager made, or the Job
		// of such a JobSet.
		key.Name = labels[berthv1.PrebuiltWorkloadLabel]
	case labels[jobsetv1.JobSetNameKey] != "" && labels[jobsetv1.JobSetUIDKey] != "":
		// A JobSet's, through one of its Jobs.
		key.Name = integration.WorkloadName("jobset", labels[jobsetv1.JobSetNameKey], types.UID(labels[jobsetv1.JobSetUIDKey]))
	case ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/"):
		key.Name = jobs.WorkloadNameFor(ref.Name, ref.UID)
	case labels[berthv1.OwnerUIDLabel] != "":
		// A configured kind's, labelled by berth with its owner's UID.
		name, ok := configured.PodWorkload(pod)
		if !ok {
			return types.NamespacedName{}, false
		}
		key.Name = name
	case group != "":
		key.Name = podgroups.WorkloadName(group)
	default:
		p, ok := pod.(*corev1.Pod)
		if !ok {
			return types.NamespacedName{}, false
		}
		key.Name = pods.WorkloadName(p)
	}
	return key, true
}

// podSetOf is the pod set of wl a pod runs in: a JobSet's is its
// replicated Job's, a pod group's records it (podgroups.PodSetOf), a
// configured kind's is written on its template (configured.Kind.Start); a
// Job's or a single Pod's Workload has one.
func podSetOf(wl *berthv1.Workload, pod *corev1.Pod) string {
	if len(wl.Spec.PodSets) == 1 {
		return wl.Spec.PodSets[0].Name
	}
	if wl.Labels[berthv1.ConfiguredKindLabel] != "" {
		return pod.Annotations[berthv1.PodSetAnnotation]
	}
	if rj := pod.Labels[jobsetv1.ReplicatedJobNameKey]; rj != "" && pod.Labels[jobsetv1.JobSetUIDKey] != "" {
		return rj
	}
	return podgroups.PodSetOf(pod)
}

const workloadIndex = "berth.dev/placed-workload"

// Reconciler lifts the gates of a Workload's pods. Its requests name the
// Workload.
type Reconciler struct {
	client client.Client
	// unqueued reads the placed pods that carry no queue label, which the
	// manager's cache (queued pods only) leaves out: those of a kind queued
	// from configuration. nil where no kind is.
	unqueued client.Reader
	// lifted remembers the pods whose gate this reconciler lifted, and with
	// which node selector, until the cache shows them lifted: a cache behind
	// must not make a domain look emptier than it is.
	mu     sync.Mutex
	lifted map[types.NamespacedName]map[types.UID]map[string]string // by Workload
}

// Setup registers the reconciler with mgr; configured says whether kinds
// are queued from configuration, whose pods need a cache of their own.
func Setup(ctx context.Context, mgr ctrl.Manager, configured bool) error {
	byWorkload := func(o client.Object) []string {
		if key, ok := WorkloadOf(o); ok {
			return []string{key.Name}
		}
		return nil
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, workloadIndex, byWorkload); err != nil {
		return err
	}
	r := &Reconciler{client: mgr.GetClient(), lifted: map[types.NamespacedName]map[types.UID]map[string]string{}}
	b := ctrl.NewControllerManagedBy(mgr)
	if configured {
		// A configured kind's pods carry no queue label: its controller makes
		// them from templates berth does not queue one by one.
		sel, err := labels.Parse(berthv1.TopologyPlacedLabel + ",!" + berthv1.QueueNameLabel)
		if err != nil {
			return err
		}
		c, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			DefaultLabelSelector: sel, DefaultTransform: cache.TransformStripManagedFields()})
		if err != nil {
			return err
		}
		if err := mgr.Add(c); err != nil {
			return err
		}
		if err := c.IndexField(ctx, &corev1.Pod{}, workloadIndex, byWorkload); err != nil {
			return err
		}
		r.unqueued = c
		b = b.WatchesRawSource(source.Kind(c, client.Object(&corev1.Pod{}), handler.EnqueueRequestsFromMapFunc(workloadOfPod)))
	}
	return b.
		Named("placement").
		// Only Workloads placed by topology: the others need nothing here.
		For(&berthv1.Workload{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return placed(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return placed(e.ObjectOld) || placed(e.ObjectNew) },
			DeleteFunc:  func(e event.DeleteEvent) bool { return placed(e.Object) },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(workloadOfPod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

func workloadOfPod(_ context.Context, o client.Object) []reconcile.Request {
	if key, ok := WorkloadOf(o); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

// Reconcile gives the Workload's gated pods the domains with room.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wl berthv1.Workload
	err := r.client.Get(ctx, req.NamespacedName, &wl)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if err != nil || !workload.IsAdmitted(&wl) || workload.IsFinished(&wl) {
		r.mu.Lock()
		delete(r.lifted, req.NamespacedName)
		r.mu.Unlock()
		return reconcile.Result{}, nil
	}
	var list corev1.PodList
	var pods client.Reader = r.client
	if wl.Labels[berthv1.ConfiguredKindLabel] != "" {
		if r.unqueued == nil {
			return reconcile.Result{}, nil
		}
		pods = r.unqueued
	}
	if err := pods.List(ctx, &list, client.InNamespace(req.Namespace), client.MatchingFields{workloadIndex: req.Name}); err != nil {
		return reconcile.Result{}, err
	}
	placed, gated := map[string][]*corev1.Pod{}, map[string][]*corev1.Pod{} // by pod set
	// One Workload is never reconciled twice at once: its entry is ours
	// until we put it back.
	r.mu.Lock()
	before, pending := r.lifted[req.NamespacedName], map[types.UID]map[string]string{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if len(pending) > 0 {
			r.lifted[req.NamespacedName] = pending
		} else {
			delete(r.lifted, req.NamespacedName) // nothing to remember: no entry per Workload ever placed
		}
		r.mu.Unlock()
	}()
	for i := range list.Items {
		p := &list.Items[i]
		ps := podSetOf(&wl, p)
		sel, lifted := before[p.UID]
		switch {
		case !Live(p) || admissionGated(p):
			// Ended, or not started by its integration yet.
		case !Gated(p):
			placed[ps] = append(placed[ps], p)
		case lifted:
			// Lifted already; the cache does not show it yet.
			pending[p.UID] = sel
			p = p.DeepCopy()
			Lift(p, sel)
			placed[ps] = append(placed[ps], p)
		default:
			gated[ps] = append(gated[ps], p)
		}
	}
	var ungate []Ungate
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		if psa.TopologyAssignment == nil {
			continue
		}
		g := gated[psa.Name]
		slices.SortFunc(g, func(a, b *corev1.Pod) int {
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		ungate = append(ungate, Assign(psa.TopologyAssignment, placed[psa.Name], g)...)
		for _, p := range Stray(psa.TopologyAssignment, placed[psa.Name]) {
			// Its domain failed: its controller makes a new pod, which this
			// reconciler gives the domain that took its place. A pod no
			// controller makes again is left to Kubernetes' own eviction.
			if metav1.GetControllerOfNoCopy(p) == nil {
				continue
			}
			uid := p.UID
			err := r.client.Delete(ctx, p, client.Preconditions{UID: &uid})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return reconcile.Result{}, err
			}
		}
	}
	for _, u := range ungate {
		pod := u.Pod.DeepCopy()
		Lift(pod, u.NodeSelector)
		err := r.client.Update(ctx, pod)
		if err == nil {
			pending[pod.UID] = u.NodeSelector
			continue
		}
		if apierrors.IsConflict(err) {
			// A cache behind the API server: the newer pod's event brings
			// the Workload back; this is a safety net.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}

// admissionGated: the pod's integration has not started it yet (a plain Pod
// or a pod group's): its pod set is known, and its domain given, only after.
func admissionGated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == berthv1.AdmissionGate
	})
}

// placed: the Workload holds a topology assignment.
func placed(o client.Object) bool {
	wl, ok := o.(*berthv1.Workload)
	if !ok || wl.Status.Admission == nil {
		return false
	}
	return slices.ContainsFunc(wl.Status.Admission.PodSetAssignments, func(psa berthv1.PodSetAssignment) bool {
		return psa.TopologyAssignment != nil
	})
}
