package queues

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// InUseFinalizer keeps a ClusterQueue, LocalQueue or ResourceFlavor that
// admitted work still uses from going away under it: deleting one leaves it
// Terminating, with a Terminating condition naming what holds it, until that
// work has finished or been removed. The running work is not evicted.
const InUseFinalizer = berthv1.ResourceInUseFinalizer

// TerminatingCondition is the condition type that says what holds a queue
// object being deleted.
const TerminatingCondition = "Terminating"

// finalizerStep is what an object's in-use finalizer needs next.
type finalizerStep int

const (
	stepNone   finalizerStep = iota
	stepAdd                  // a live object without the finalizer
	stepHold                 // being deleted, still in use: say by what
	stepRemove               // being deleted, no longer in use: let it go
)

// nextFinalizerStep decides, from the object and how many admitted
// workloads use it, what its finalizer needs.
func nextFinalizerStep(obj client.Object, users int) finalizerStep {
	has := controllerutil.ContainsFinalizer(obj, InUseFinalizer)
	deleting := obj.GetDeletionTimestamp() != nil
	switch {
	case !deleting && !has:
		return stepAdd
	case deleting && has && users > 0:
		return stepHold
	case deleting && has:
		return stepRemove
	}
	return stepNone
}

// heldBy says in words which admitted workloads hold an object, naming the
// first few.
func heldBy(users []string) string {
	users = slices.Sorted(slices.Values(users))
	const shown = 5
	names := strings.Join(users[:min(shown, len(users))], ", ")
	if len(users) > shown {
		names += fmt.Sprintf(" and %d more", len(users)-shown)
	}
	noun := "workloads"
	if len(users) == 1 {
		noun = "workload"
	}
	return fmt.Sprintf("being deleted; held by %d admitted %s until they finish: %s", len(users), noun, names)
}

// setTerminating records in conditions what holds an object being deleted;
// it reports whether anything changed.
func setTerminating(conditions *[]metav1.Condition, users []string, generation int64, now time.Time) bool {
	c := metav1.Condition{Type: TerminatingCondition, Status: metav1.ConditionTrue, Reason: "InUse",
		Message: heldBy(users), ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	if old := meta.FindStatusCondition(*conditions, TerminatingCondition); old != nil &&
		old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return false
	}
	meta.SetStatusCondition(conditions, c)
	return true
}

// tend notes an object whose in-use finalizer needs a step.
func (c *Controller) tend(ref objRef, obj client.Object) {
	if nextFinalizerStep(obj, 0) == stepNone {
		return
	}
	c.tendMu.Lock()
	c.tending[ref] = true
	c.tendMu.Unlock()
}

// usersOf lists the admitted workloads that use an object.
func (c *Controller) usersOf(ref objRef) []string {
	switch ref.kind {
	case clusterQueueKind:
		return c.sched.AdmittedIn(ref.key)
	case localQueueKind:
		return c.sched.AdmittedThrough(ref.key)
	default:
		return c.sched.FlavorUsers(ref.key)
	}
}

// tendFinalizers takes each noted object one step: adds the finalizer to a
// live object, says what holds one being deleted, and lets it go once
// nothing does. A failed write is retried at the next interval.
func (c *Controller) tendFinalizers(ctx context.Context) {
	c.tendMu.Lock()
	refs := make([]objRef, 0, len(c.tending))
	for ref := range c.tending {
		refs = append(refs, ref)
	}
	c.tendMu.Unlock()
	for _, ref := range refs {
		done, err := c.tendOne(ctx, ref)
		if err != nil {
			c.log.Error(err, "tending the in-use finalizer; will retry", "kind", ref.kind, "name", ref.key)
		}
		if done {
			c.tendMu.Lock()
			delete(c.tending, ref)
			c.tendMu.Unlock()
		}
	}
}

// tendOne takes one step for ref and reports whether nothing more is due.
func (c *Controller) tendOne(ctx context.Context, ref objRef) (bool, error) {
	var obj client.Object
	switch ref.kind {
	case clusterQueueKind:
		obj = &berthv1.ClusterQueue{}
	case localQueueKind:
		obj = &berthv1.LocalQueue{}
	default:
		obj = &berthv1.ResourceFlavor{}
	}
	ns, name, found := strings.Cut(ref.key, "/")
	if !found {
		ns, name = "", ref.key
	}
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	users := c.usersOf(ref)
	switch nextFinalizerStep(obj, len(users)) {
	case stepAdd, stepRemove:
		orig := obj.DeepCopyObject().(client.Object)
		if !controllerutil.AddFinalizer(obj, InUseFinalizer) {
			controllerutil.RemoveFinalizer(obj, InUseFinalizer)
		}
		err := c.client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		return err == nil || apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	case stepHold:
		switch o := obj.(type) {
		case *berthv1.ClusterQueue:
			c.sched.MarkDirty([]string{o.Name}, nil, nil) // its status writer says what holds it
		case *berthv1.LocalQueue:
			c.sched.MarkDirty(nil, []string{ref.key}, nil)
		case *berthv1.ResourceFlavor:
			st := *o.Status.DeepCopy()
			if setTerminating(&st.Conditions, users, o.Generation, c.clock.Now()) {
				return false, c.patchStatus(ctx, o, st)
			}
		}
		return false, nil
	}
	return true, nil
}
