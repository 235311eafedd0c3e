package podsgone

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// Action is what a Workload calls for.
type Action int

const (
	// Nothing: the Workload is none of this package's business now.
	Nothing Action = iota
	// Wait: pods that ran for it are still there; look again after
	// Decision.RecheckAfter (or when the Workload changes).
	Wait
	// LetGo: take the finalizer off; the Workload, being deleted, goes, and
	// its quota with it.
	LetGo
	// Finish: the object it was made for is gone and so are its pods; it is
	// marked finished (Decision.Reason, Decision.Message), which gives its
	// quota back.
	Finish
)

// Decision is what Decide says.
type Decision struct {
	Action          Action
	RecheckAfter    time.Duration
	Reason, Message string
	// Delete names the pods to delete while it waits: those its going
	// owner left running (the garbage collector would delete them, but
	// late: it backs off while the Workload still stands, and the
	// Workload stands for them).
	Delete []string
}

// Pod is what Decide needs of a pod that matches a Workload's selector.
type Pod struct {
	Name string
	// Ended: Succeeded or Failed; its containers no longer run.
	Ended bool
	// StopsBy is its deletion timestamp: the end of its grace period, by
	// which its node has stopped it. Zero while it is not being deleted.
	StopsBy time.Time
}

// PodOf is what Decide needs of p.
func PodOf(p *corev1.Pod) Pod {
	out := Pod{Name: p.Name, Ended: p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed}
	if p.DeletionTimestamp != nil {
		out.StopsBy = p.DeletionTimestamp.Time
	}
	return out
}

// Rechecks: how soon to look again at pods still there. Most pods stop
// soon after they are deleted, so a Workload being deleted is looked at
// again after half the time since its deletion (from MinRecheck, doubling),
// and no later than the first deadline of its pods (a deleted pod is gone
// by the end of its grace period, unless its node is lost); never more
// than MaxRecheck apart (an orphaned pod, say, which may run for days).
const (
	MinRecheck = 200 * time.Millisecond
	MaxRecheck = 10 * time.Second
)

// Selector is the selector of wl's pods, nil when it has none (a Workload
// made before berth recorded them, or not for an object: a manager's copy,
// one made by hand); an error names a selector that does not parse.
func Selector(wl *berthv1.Workload) (labels.Selector, error) {
	s, ok := wl.Annotations[berthv1.PodSelectorAnnotation]
	if !ok {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("Workload %s/%s: annotation %s %q: %w", wl.Namespace, wl.Name, berthv1.PodSelectorAnnotation, s, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("Workload %s/%s: annotation %s is empty: it would select every pod of the namespace", wl.Namespace, wl.Name, berthv1.PodSelectorAnnotation)
	}
	return sel, nil
}

// Guarded reports whether wl is this package's: it carries the finalizer.
func Guarded(wl *berthv1.Workload) bool {
	return controllerutil.ContainsFinalizer(wl, berthv1.PodsGoneFinalizer)
}

// OwnerGone reports whether wl, made for an object (it knows its pods),
// no longer has it as its controller: the garbage collector took the
// reference away when the object was deleted with --cascade=orphan.
func OwnerGone(wl *berthv1.Workload) bool {
	_, made := wl.Annotations[berthv1.PodSelectorAnnotation]
	return made && metav1.GetControllerOfNoCopy(wl) == nil
}

// Count reports whether Decide needs wl's pods counted: it holds quota
// here and is being deleted, or its owner is gone.
func Count(wl *berthv1.Workload) bool {
	_, settled := settle(wl)
	return !settled
}

// Decide says what wl calls for, given the pods its selector finds (asked
// for only when Count says so):
//   - being deleted, it goes (LetGo) once it holds no quota, or its pods
//     are gone; until then it keeps its quota (Wait). A Workload that ran
//     on a worker cluster waits for the dispatcher to clear its
//     status.clusterName: that says nothing of it is left there.
//   - not being deleted but without its owner, it is finished (Finish)
//     once its pods are gone (at once when it holds no quota: it would
//     only wait for an admission nothing would use).
//
// ownerGoing says the object it was made for is gone or being deleted: the
// pods of a deleted Workload that such an owner left running are deleted
// (Decision.Delete), as the garbage collector would have them.
func Decide(wl *berthv1.Workload, pods []Pod, ownerGoing bool, now time.Time) Decision {
	if d, settled := settle(wl); settled {
		return d
	}
	if left := running(pods); left > 0 {
		d := Decision{Action: Wait, RecheckAfter: recheck(wl, pods, now),
			Message: fmt.Sprintf("%d of its pods are still there", left)}
		if wl.DeletionTimestamp != nil && ownerGoing {
			for _, p := range pods {
				if !p.Ended && p.StopsBy.IsZero() {
					d.Delete = append(d.Delete, p.Name)
				}
			}
		}
		return d
	}
	if wl.DeletionTimestamp != nil {
		return Decision{Action: LetGo}
	}
	return ownerDeleted
}

var ownerDeleted = Decision{Action: Finish, Reason: "OwnerDeleted",
	Message: "the object it was made for was deleted and its pods are gone"}

// settle is what wl calls for whatever its pods, if that does not depend
// on them.
func settle(wl *berthv1.Workload) (Decision, bool) {
	deleting := wl.DeletionTimestamp != nil
	quota := workload.HasQuota(wl) && !workload.IsFinished(wl)
	switch {
	case deleting && !Guarded(wl):
		return Decision{}, true
	case deleting && !quota:
		return Decision{Action: LetGo}, true
	case !deleting && (!OwnerGone(wl) || workload.IsFinished(wl)):
		return Decision{}, true
	case !deleting && !quota:
		return ownerDeleted, true
	case wl.Status.ClusterName != "":
		// The dispatcher's status write brings it back here.
		return Decision{Action: Wait}, true
	}
	return Decision{}, false
}

// running counts the pods that have not ended.
func running(pods []Pod) int {
	n := 0
	for _, p := range pods {
		if !p.Ended {
			n++
		}
	}
	return n
}

// recheck is how long to wait before looking at wl's pods again.
func recheck(wl *berthv1.Workload, pods []Pod, now time.Time) time.Duration {
	wait := MaxRecheck
	if wl.DeletionTimestamp != nil {
		wait = min(wait, now.Sub(wl.DeletionTimestamp.Time)/2)
	}
	for _, p := range pods {
		if !p.Ended && p.StopsBy.After(now) {
			wait = min(wait, p.StopsBy.Sub(now))
		}
	}
	return max(wait, MinRecheck)
}
