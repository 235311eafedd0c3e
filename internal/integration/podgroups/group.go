package podgroups

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/pods"
	"github.com/berth-dev/berth/internal/workload"
)

// Group is what berth knows of one pod group at one moment.
type Group struct {
	Name  string
	Total int32
	// Pods of the group that berth holds (its gate or finalizer), oldest
	// first.
	Pods []*corev1.Pod
	// Workload of the group, nil when it has none.
	Workload *berthv1.Workload
	// Queue, Priority, PriorityClass and Topology the group's Workload
	// should have (read from its oldest Pod).
	Queue         string
	Priority      *int32
	PriorityClass string
	// Topology is the group's topology request, for each of its pod sets.
	Topology *berthv1.TopologyRequest
	// StatefulSet whose Pods make the group, nil for a group of Pods users
	// made: Total is then its replicas, its Pods may come one at a time
	// (the StatefulSet makes the next once the last is Ready), and the
	// group serves until scaled to 0 rather than finishing.
	StatefulSet *StatefulSet
}

// StatefulSet is what a pod group needs to know of the StatefulSet whose
// Pods it is.
type StatefulSet struct {
	Name string
	UID  types.UID
}

// Plan is what to do to bring a group and its Workload in step. The
// reconciler carries it out in the order of the fields.
type Plan struct {
	// Create the group's Workload with Spec; Update the spec of its pending
	// Workload to Spec (its Pods changed while it waited).
	Create, Update bool
	Spec           berthv1.WorkloadSpec
	// Delete the group's Workload: it waits, or has stopped, with Pods
	// missing, and is made again when they are all there.
	Delete bool
	// Resize: evict the admitted Workload of a StatefulSet whose replicas
	// changed, with Message: it queues again at its new size.
	Resize bool
	// Release the quota of a stopping Workload whose Pods have all stopped:
	// it queues again.
	Release bool
	// Finish the Workload with Reason and Message: all its Pods have ended.
	Finish          bool
	Reason, Message string
	// Adopt: Pods to add to the Workload's owners, so that it goes when the
	// last of them goes.
	Adopt []*corev1.Pod
	// Start: gated Pods to run, and the pod set each goes in.
	Start []Start
	// Stop: Pods to delete, and why.
	Stop    []*corev1.Pod
	StopWhy string
	// LetGo: Pods whose finalizer berth no longer needs.
	LetGo []*corev1.Pod
	// Waiting says why the group is not queued or not complete, "" if it is.
	Waiting string
	// RecheckAfter: a Pod being deleted may still run until then, or an
	// incomplete group is said to wait then.
	RecheckAfter time.Duration
	// PodsReady, when not empty, says that every Pod of an admitted
	// StatefulSet's group is Ready, for its Workload's PodsReady condition
	// (recorded with --wait-for-pods-ready).
	PodsReady string
}

// Start is a gated Pod to run in pod set PodSet of the admitted Workload.
type Start struct {
	Pod    *corev1.Pod
	PodSet string
}

// Decide plans one step for g at now. It is pure: the reconciler reads g and
// writes the plan.
func Decide(g Group, now time.Time) Plan {
	var p Plan
	var running, waiting []*corev1.Pod
	for _, pod := range g.Pods {
		switch {
		case ended(pod, now):
			if pod.DeletionTimestamp != nil || !holdsQuota(g.Workload) {
				p.LetGo = append(p.LetGo, pod)
			}
		case pods.Gated(pod):
			waiting = append(waiting, pod)
		default:
			running = append(running, pod)
			if pod.DeletionTimestamp != nil {
				p.recheck(pod.DeletionTimestamp.Sub(now))
			}
		}
	}
	wl := g.Workload
	if g.StatefulSet != nil {
		decideServing(g, wl, running, waiting, &p)
		return p
	}
	switch {
	case wl == nil:
		p.stop(running, "it runs without a Workload holding quota")
		if len(running) == 0 {
			p.Create = p.complete(g, waiting)
		}
		// A group being created is incomplete for a moment: it is said to
		// wait only once no Pod of it has come for a while.
		if p.Waiting != "" && len(g.Pods) > 0 {
			newest := g.Pods[len(g.Pods)-1]
			if d := newest.CreationTimestamp.Add(WaitingQuiet).Sub(now); d > 0 {
				p.Waiting = ""
				p.recheck(d)
			}
		}
	case workload.IsFinished(wl):
		if len(waiting) > 0 {
			p.Waiting = fmt.Sprintf("pod group %s has finished; its new Pods wait until its old ones are deleted", g.Name)
		}
	case workload.IsStopping(wl):
		p.stop(running, "its Workload "+wl.Name+" is evicted")
		if len(running) == 0 {
			if p.complete(g, waiting) && sameSpec(wl.Spec, p.Spec) {
				p.Release = true
			} else {
				p.Delete = true
			}
		}
	case workload.IsAdmitted(wl):
		p.adopt(wl, g.Pods)
		p.start(g, running, waiting)
		if len(running) == 0 && len(p.Start) == 0 {
			p.Finish = true
			p.Reason, p.Message = finish(g)
		}
	case workload.HasQuota(wl):
		// Reserved, not yet admitted: its Pods wait.
	default:
		p.stop(running, "its Workload "+wl.Name+" lost its quota")
		if len(running) > 0 {
			break
		}
		if !p.complete(g, waiting) {
			p.Delete = true
			break
		}
		p.adopt(wl, waiting)
		p.Update = !sameSpec(wl.Spec, p.Spec)
	}
	return p
}

// decideServing plans for the group of a StatefulSet's Pods. Unlike a group
// users make, it is queued once its first Pod is there (with OrderedReady,
// the next comes only once that one is Ready), its Workload waits in its
// queue while its Pods come and go, and it does not finish when they end:
// the StatefulSet makes them again. Its quota goes back when it is scaled to
// 0 (or deleted, its Workload then going with it); scaled while admitted, it
// is evicted and queues again whole at its new size.
func decideServing(g Group, wl *berthv1.Workload, running, waiting []*corev1.Pod, p *Plan) {
	switch {
	case g.Total == 0:
		// Scaled to 0: the StatefulSet deletes its Pods; once they have
		// stopped, the quota goes back.
		if wl != nil && len(running) == 0 {
			p.Delete = true
		}
	case wl == nil:
		p.stop(running, "it runs without a Workload holding quota")
		if len(running) == 0 {
			p.Create = p.serving(g, waiting)
		}
	case workload.IsFinished(wl):
		// Finished by an older berth or by hand: made again.
		if len(running) == 0 {
			p.Delete = true
		}
	case workload.IsStopping(wl):
		p.stop(running, "its Workload "+wl.Name+" is evicted")
		// Resized, it is made again at its new size: released at its old
		// one, it could be admitted so before its spec caught up.
		if len(running) == 0 {
			p.Release = podCount(wl) == g.Total
			p.Delete = !p.Release
		}
	case workload.IsAdmitted(wl):
		if n := podCount(wl); n != g.Total {
			p.Resize = true
			p.Reason = "Resized"
			p.Message = fmt.Sprintf("StatefulSet %s was scaled from %d to %d replicas; it queues again whole at its new size",
				g.StatefulSet.Name, n, g.Total)
			return
		}
		p.adopt(wl, g.Pods)
		p.start(g, running, waiting)
		if ready := countReady(running); !workload.PodsReady(wl) && ready >= g.Total {
			p.PodsReady = fmt.Sprintf("%d of %d pods Ready", ready, g.Total)
		}
	case workload.HasQuota(wl):
		// Reserved, not yet admitted: its Pods wait.
	default:
		p.stop(running, "its Workload "+wl.Name+" lost its quota")
		if len(running) == 0 && p.serving(g, waiting) {
			p.adopt(wl, waiting)
			p.Update = !sameSpec(wl.Spec, p.Spec)
		}
	}
}

// countReady counts the Pods Ready and not being deleted.
func countReady(running []*corev1.Pod) int32 {
	var n int32
	for _, pod := range running {
		if pod.DeletionTimestamp != nil {
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// podCount is how many Pods wl holds quota for.
func podCount(wl *berthv1.Workload) int32 {
	var n int32
	for _, ps := range wl.Spec.PodSets {
		n += ps.Count
	}
	return n
}

// serving sets the Workload spec of a StatefulSet's group from its waiting
// Pods: one pod set of the StatefulSet's replicas, of their shape. It
// reports false, with Waiting saying why, when no Pod is there yet or they
// are not all of one shape.
func (p *Plan) serving(g Group, waiting []*corev1.Pod) bool {
	if len(waiting) == 0 {
		return false
	}
	if g.Total > pods.MaxGroupSize {
		p.Waiting = fmt.Sprintf("StatefulSet %s has %d replicas; at most %d are queued as one group", g.StatefulSet.Name, g.Total, pods.MaxGroupSize)
		return false
	}
	sets := PodSets(waiting)
	if len(sets) > 1 {
		p.Waiting = fmt.Sprintf("the Pods of StatefulSet %s are of %d different shapes (requests, node selector, tolerations, affinity); "+
			"it queues once they are of one", g.StatefulSet.Name, len(sets))
		return false
	}
	sets[0].Count = g.Total
	sets[0].TopologyRequest = g.Topology
	p.Spec = berthv1.WorkloadSpec{PodSets: sets, QueueName: g.Queue, Priority: g.Priority, PriorityClassName: g.PriorityClass}
	return true
}

// WaitingQuiet is how long after its newest Pod came an incomplete group is
// said to wait (Plan.Waiting): a group whose Pods are being created needs no
// event for each of them.
const WaitingQuiet = 5 * time.Second

func (p *Plan) recheck(d time.Duration) {
	if p.RecheckAfter == 0 || d < p.RecheckAfter {
		p.RecheckAfter = d
	}
}

// ended: the Pod succeeded or failed, or is being deleted and no longer
// runs.
func ended(pod *corev1.Pod, now time.Time) bool {
	finished, _ := pods.Kind{}.Finished(pod)
	return finished || pods.Gone(pod, now)
}

// holdsQuota: berth must see how each of the Workload's Pods ended, to know
// when the group is over, so it keeps their finalizers.
func holdsQuota(wl *berthv1.Workload) bool {
	return wl != nil && workload.HasQuota(wl) && !workload.IsFinished(wl)
}

func (p *Plan) stop(running []*corev1.Pod, why string) {
	for _, pod := range running {
		if pod.DeletionTimestamp == nil {
			p.Stop = append(p.Stop, pod)
			p.StopWhy = why
		}
	}
}

// complete reports whether the waiting Pods are the whole group, and sets
// the Workload spec they make; otherwise Waiting says what is wrong.
func (p *Plan) complete(g Group, waiting []*corev1.Pod) bool {
	n := int32(len(waiting))
	switch {
	case n < g.Total:
		p.Waiting = fmt.Sprintf("pod group %s has %d of its %d Pods; waiting for %d more", g.Name, n, g.Total, g.Total-n)
		return false
	case n > g.Total:
		p.Waiting = fmt.Sprintf("pod group %s has %d Pods waiting, more than its total count of %d; delete %d of them",
			g.Name, n, g.Total, n-g.Total)
		return false
	}
	sets := PodSets(waiting)
	for i := range sets {
		sets[i].TopologyRequest = g.Topology
	}
	if len(sets) > maxPodSets {
		p.Waiting = fmt.Sprintf("pod group %s has Pods of %d different shapes (requests, node selector, tolerations, affinity); at most %d are supported",
			g.Name, len(sets), maxPodSets)
		return false
	}
	p.Spec = berthv1.WorkloadSpec{PodSets: sets, QueueName: g.Queue, Priority: g.Priority, PriorityClassName: g.PriorityClass}
	return true
}

// maxPodSets is the Workload API's limit on pod sets.
const maxPodSets = 8

// sameSpec reports whether a and b ask for the same: what the group's Pods
// make of a Workload. Whether it is active is the user's (berth stop), not
// the Pods', and is kept as it is (carryOut).
func sameSpec(a, b berthv1.WorkloadSpec) bool {
	a.Active, b.Active = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// adopt makes the Pods not being deleted owners of wl.
func (p *Plan) adopt(wl *berthv1.Workload, candidates []*corev1.Pod) {
	for _, pod := range candidates {
		if pod.DeletionTimestamp == nil && !owns(wl, pod.UID) {
			p.Adopt = append(p.Adopt, pod)
		}
	}
}

func owns(wl *berthv1.Workload, uid types.UID) bool {
	return slices.ContainsFunc(wl.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// start fills each pod set of the admitted wl up to its count with waiting
// Pods of its shape, oldest first: the first Pods at admission, later a
// replacement for a Pod that ended.
func (p *Plan) start(g Group, running, waiting []*corev1.Pod) {
	room := map[string]int32{}
	for _, ps := range g.Workload.Spec.PodSets {
		room[ps.Name] = ps.Count
	}
	for _, pod := range running {
		room[PodSetOf(pod)]--
	}
	blocked := 0
	for _, pod := range waiting {
		if s := Shape(pod); room[s] > 0 {
			room[s]--
			p.Start = append(p.Start, Start{Pod: pod, PodSet: s})
		} else {
			blocked++
		}
	}
	if blocked > 0 {
		p.Waiting = fmt.Sprintf("%d Pods of running pod group %s wait for a Pod of their shape to end", blocked, g.Name)
	}
}

// finish says how the group ended: succeeded when at least its total count
// of Pods succeeded.
func finish(g Group) (reason, message string) {
	var succeeded int32
	for _, pod := range g.Pods {
		if pod.Status.Phase == corev1.PodSucceeded {
			succeeded++
		}
	}
	if succeeded >= g.Total {
		return "PodsSucceeded", fmt.Sprintf("all %d Pods of pod group %s succeeded", g.Total, g.Name)
	}
	return "PodsFailed", fmt.Sprintf("%d of the %d Pods of pod group %s succeeded; the others failed or were deleted",
		succeeded, g.Total, g.Name)
}

// PodSetOf is the pod set a Pod of a group belongs to: the one recorded
// when berth started it (berthv1.PodSetAnnotation), else its Shape, which
// was the pod set's name before its flavors' node labels and tolerations
// were added.
func PodSetOf(pod *corev1.Pod) string {
	if s := pod.Annotations[berthv1.PodSetAnnotation]; s != "" {
		return s
	}
	return Shape(pod)
}

// Shape names what a Pod needs of a node (PodSetOf): Pods of one shape make
// one pod set of the group's Workload, named so.
func Shape(pod *corev1.Pod) string {
	raw, _ := json.Marshal(integration.PodSetOf("", 1, &pod.Spec))
	sum := sha256.Sum256(raw)
	return "pods-" + hex.EncodeToString(sum[:])[:10]
}

// PodSets makes one pod set per shape of pods, sorted by name.
func PodSets(pods []*corev1.Pod) []berthv1.PodSet {
	var out []berthv1.PodSet
	for _, pod := range pods {
		s := Shape(pod)
		if i := slices.IndexFunc(out, func(ps berthv1.PodSet) bool { return ps.Name == s }); i >= 0 {
			out[i].Count++
			continue
		}
		out = append(out, integration.PodSetOf(s, 1, &pod.Spec))
	}
	slices.SortFunc(out, func(a, b berthv1.PodSet) int { return strings.Compare(a.Name, b.Name) })
	return out
}
