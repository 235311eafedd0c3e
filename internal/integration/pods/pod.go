package pods

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// DefaultLocalQueue is where an object asking for no queue goes, in a
// namespace where every object is queued.
const DefaultLocalQueue = integration.DefaultLocalQueue

// Kind is the plain Pod as an integration.Kind. With Default, a Pod that
// carries no queue label is queued in DefaultLocalQueue (the webhook for
// opted-in namespaces); Hold then labels it so.
type Kind struct{ Default bool }

var (
	_ integration.Kind  = Kind{}
	_ integration.Owned = Kind{}
)

func (Kind) New() client.Object { return &corev1.Pod{} }

func (k Kind) QueueName(obj client.Object) string {
	if ownedByJob(obj) {
		return "" // queued as its Job
	}
	if q := integration.QueueName(obj.GetLabels()); q != "" {
		return q
	}
	if k.Default {
		return DefaultLocalQueue
	}
	return ""
}

// PodSets is one pod set of the Pod alone, with the topology request of its
// annotations.
func (Kind) PodSets(obj client.Object) []berthv1.PodSet {
	pod := obj.(*corev1.Pod)
	ps := integration.PodSetOf("main", 1, &pod.Spec)
	ps.TopologyRequest, _ = integration.TopologyRequestOf(pod.Annotations) // the webhook refuses wrong ones
	return []berthv1.PodSet{ps}
}

// Hold creates a queued Pod gated and with berth's finalizer, and labelled
// with berth's queue label (the queue Kueue's label or the namespace's
// opt-in gave it), so that every Pod berth manages carries that label. A
// pod of a LeaderWorkerSet is labelled with its group's pod group. A
// Pod that asks for topology-aware placement is also labelled
// berth.dev/topology-placed and gated by berth.dev/topology.
func (k Kind) Hold(obj client.Object) bool {
	pod := obj.(*corev1.Pod)
	changed := false
	if q := k.QueueName(pod); pod.Labels[berthv1.QueueNameLabel] != q {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[berthv1.QueueNameLabel] = q
		changed = true
	}
	if !Gated(pod) {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: berthv1.AdmissionGate})
		changed = true
	}
	if controllerutil.AddFinalizer(pod, berthv1.PodFinalizer) {
		changed = true
	}
	if g, _, _ := LeaderWorkerSetGroup(pod); g != "" && pod.Labels[berthv1.PodGroupNameLabel] == "" && pod.Labels[berthv1.KueuePodGroupNameLabel] == "" {
		// A LeaderWorkerSet's group, leader and workers, is admitted whole.
		pod.Labels[berthv1.PodGroupNameLabel] = g
		changed = true
	}
	if integration.HasTopologyAnnotations(pod.Annotations) && pod.Labels[berthv1.TopologyPlacedLabel] == "" {
		// Placed by topology: its room is counted by the placement, and it
		// waits for a domain once admitted (package placement).
		pod.Labels[berthv1.TopologyPlacedLabel] = "true"
		changed = true
	}
	if !hasGate(pod, berthv1.TopologyGate) {
		// Every queued Pod: one admitted in a flavor with a topology is
		// placed though it asks for nothing, and a gate cannot be added
		// after creation. Steer lifts it at start when it is not placed.
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: berthv1.TopologyGate})
		changed = true
	}
	return changed
}

// HeldFields are what Hold changes: the Pod's labels and finalizers, and
// its scheduling gates.
func (Kind) HeldFields(obj client.Object) []integration.Field {
	pod := obj.(*corev1.Pod)
	return []integration.Field{
		{Path: "/metadata/labels", Value: pod.Labels},
		{Path: "/metadata/finalizers", Value: pod.Finalizers},
		{Path: "/spec/schedulingGates", Value: pod.Spec.SchedulingGates},
	}
}

// Steer keeps, at start, a placed Pod behind the topology gate, labelled
// so that the placement reconciler gives it its domain, and lifts the gate
// of one that is not placed. A Pod created without the gate (before berth
// gated every queued Pod) cannot be steered: it starts where kube-scheduler
// puts it.
func (Kind) Steer(obj client.Object, _ string, placed bool) error {
	pod := obj.(*corev1.Pod)
	switch {
	case placed && hasGate(pod, berthv1.TopologyGate):
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[berthv1.TopologyPlacedLabel] = "true"
	case !placed:
		pod.Spec.SchedulingGates = slices.DeleteFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
			return g.Name == berthv1.TopologyGate
		})
	}
	return nil
}

func hasGate(pod *corev1.Pod, name string) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == name })
}

// Start adds the flavors' node labels and tolerations to the Pod, which
// the API server allows while it is gated, and lifts the gate.
func (Kind) Start(obj client.Object, flavors map[string][]*berthv1.ResourceFlavor) error {
	pod := obj.(*corev1.Pod)
	integration.InjectFlavors(&pod.Spec, flavors["main"])
	pod.Spec.SchedulingGates = slices.DeleteFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == berthv1.AdmissionGate
	})
	return nil
}

// Finished reports whether the Pod succeeded or failed.
func (Kind) Finished(obj client.Object) (finished, failed bool) {
	switch obj.(*corev1.Pod).Status.Phase {
	case corev1.PodSucceeded:
		return true, false
	case corev1.PodFailed:
		return true, true
	}
	return false, false
}

// ownedByJob reports whether a Job controls the Pod: berth queues the Job,
// so its pods (which may carry the queue label in their template) are not
// queued again one by one.
func ownedByJob(obj client.Object) bool { return Kind{}.QueuingOwner(obj) != nil }

// QueuingOwner is the Pod's controller reference when it names a Job: the
// Job is queued, not its Pods.
func (Kind) QueuingOwner(obj client.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != "Job" || !strings.HasPrefix(ref.APIVersion, "batch/") {
		return nil
	}
	return ref
}

// Group is the pod group a Pod belongs to: its name (berth's label, else
// Kueue's), "" for a Pod on its own, and the total count of Pods its
// annotation declares (berth's, else Kueue's), or 0 for the group of a
// StatefulSet's Pods (StatefulSetGroup), whose replicas say it. err says what is wrong with a
// group Pod's count, naming the annotation.
func Group(obj client.Object) (name string, total int32, err error) {
	name = obj.GetLabels()[berthv1.PodGroupNameLabel]
	if name == "" {
		name = obj.GetLabels()[berthv1.KueuePodGroupNameLabel]
	}
	if name == "" {
		return "", 0, nil
	}
	if sts := StatefulSetOf(obj); sts != "" && name == StatefulSetGroup(sts) {
		return name, 0, nil // as many Pods as its StatefulSet has replicas
	}
	if g, size, lerr := LeaderWorkerSetGroup(obj); g != "" && name == g {
		return name, size, lerr
	}
	key := berthv1.PodGroupTotalCountAnnotation
	v, ok := obj.GetAnnotations()[key]
	if !ok {
		key = berthv1.KueuePodGroupTotalCountAnnotation
		if v, ok = obj.GetAnnotations()[key]; !ok {
			return name, 0, fmt.Errorf("pod group %s: annotation %s is missing: it says how many Pods the group has",
				name, berthv1.PodGroupTotalCountAnnotation)
		}
	}
	n, perr := strconv.ParseInt(v, 10, 32)
	if perr != nil || n < 1 || n > MaxGroupSize {
		return name, 0, fmt.Errorf("pod group %s: annotation %s=%q: want a whole number from 1 to %d", name, key, v, MaxGroupSize)
	}
	return name, int32(n), nil
}

// StatefulSetOf names the StatefulSet that controls the Pod, or "".
func StatefulSetOf(obj client.Object) string {
	if ref := metav1.GetControllerOf(obj); ref != nil && ref.Kind == "StatefulSet" && ref.APIVersion == "apps/v1" {
		return ref.Name
	}
	return ""
}

// StatefulSetGroup is the pod group of a queued StatefulSet's Pods: the
// StatefulSet's name, prefixed so that it cannot be taken for a group users
// name, and shortened with a hash of the whole to fit a label value.
func StatefulSetGroup(statefulSet string) string {
	return labelValue("statefulset-" + statefulSet)
}

// labelValue is g, shortened with a hash of the whole when it is longer
// than a label value may be.
func labelValue(g string) string {
	if len(g) <= 63 {
		return g
	}
	sum := sha256.Sum256([]byte(g))
	return g[:52] + "-" + hex.EncodeToString(sum[:])[:10]
}

// Labels and annotations LeaderWorkerSet's controller and webhook put on
// the pods of its groups.
const (
	lwsNameLabel        = "leaderworkerset.sigs.k8s.io/name"
	lwsGroupIndexLabel  = "leaderworkerset.sigs.k8s.io/group-index"
	lwsWorkerIndexLabel = "leaderworkerset.sigs.k8s.io/worker-index"
	lwsSizeAnnotation   = "leaderworkerset.sigs.k8s.io/size"
	// podIndexLabel is the ordinal the StatefulSet controller gives a pod:
	// a leader's is its group's index. (LeaderWorkerSet's webhook labels
	// it so too, but may come after berth's.)
	podIndexLabel = "apps.kubernetes.io/pod-index"
)

// LeaderWorkerSetGroup is the pod group of a LeaderWorkerSet's pod: one per
// group (a leader and its workers) of the LeaderWorkerSet, of its size. ""
// for a pod of no LeaderWorkerSet; err says what is wrong with its size.
func LeaderWorkerSetGroup(obj client.Object) (group string, size int32, err error) {
	l := obj.GetLabels()
	lws := l[lwsNameLabel]
	index, ok := l[lwsGroupIndexLabel]
	if !ok && l[lwsWorkerIndexLabel] == "0" {
		index, ok = l[podIndexLabel]
	}
	if lws == "" || !ok {
		return "", 0, nil
	}
	g := labelValue("lws-" + lws + "-" + index)
	v := obj.GetAnnotations()[lwsSizeAnnotation]
	n, perr := strconv.ParseInt(v, 10, 32)
	if perr != nil || n < 1 || n > MaxGroupSize {
		return g, 0, fmt.Errorf("pod group %s: annotation %s=%q: want a whole number from 1 to %d", g, lwsSizeAnnotation, v, MaxGroupSize)
	}
	return g, int32(n), nil
}

// MaxGroupSize bounds a pod group: its Workload lists each of its Pods as
// an owner, and must stay well within the API server's object size limit.
const MaxGroupSize = 1000

// Refuse refuses a queued Pod of a pod group that does not say, or says
// wrongly, how many Pods the group has (it could never be admitted), and one
// whose topology annotations are wrong, naming the annotation.
func (k Kind) Refuse(obj client.Object) string {
	if k.QueueName(obj) == "" {
		return ""
	}
	if _, _, err := Group(obj); err != nil {
		return fmt.Sprintf("Pod %s: %v", obj.GetName(), err)
	}
	if _, err := integration.TopologyRequestOf(obj.GetAnnotations()); err != nil {
		return fmt.Sprintf("Pod %s: %v", obj.GetName(), err)
	}
	return ""
}

// Gone reports whether a Pod being deleted no longer runs: it was never
// bound to a node, or its grace period is over (its node has stopped it, or
// is not there to; a force deletion has none).
func Gone(pod *corev1.Pod, now time.Time) bool {
	return pod.DeletionTimestamp != nil && (pod.Spec.NodeName == "" || !now.Before(pod.DeletionTimestamp.Time))
}

// Gated reports whether the Pod is held back by berth's scheduling gate.
func Gated(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == berthv1.AdmissionGate
	})
}

// WorkloadName is the name of a Pod's Workload: stable for the Pod, and
// different for a new Pod of the same name.
func WorkloadName(pod *corev1.Pod) string {
	return integration.WorkloadName("pod", pod.Name, pod.UID)
}

// NewWorkload makes a Pod's Workload, owned by the Pod so that it goes when
// the Pod goes.
func NewWorkload(pod *corev1.Pod, queue string, priority *int32, priorityClass string) *berthv1.Workload {
	return integration.NewWorkload(pod, corev1.SchemeGroupVersion.WithKind("Pod"), WorkloadName(pod),
		map[string]string{"berth.dev/pod-uid": string(pod.UID)},
		berthv1.WorkloadSpec{PodSets: Kind{}.PodSets(pod), QueueName: queue, Priority: priority, PriorityClassName: priorityClass})
}

// Where the Pod webhooks (integration.Holder) are served: for Pods that carry
// a queue label, and for unlabelled Pods of opted-in namespaces.
const (
	WebhookPath        = "/mutate-v1-pod"
	DefaultWebhookPath = "/mutate-v1-pod-default"
)
