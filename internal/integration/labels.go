package integration

import (
	"context"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// QueueName is the LocalQueue an object's labels ask for: berth's label,
// else Kueue's, for users moving over; "" when neither is set.
func QueueName(labels map[string]string) string {
	if q := labels[berthv1.QueueNameLabel]; q != "" {
		return q
	}
	return labels[berthv1.KueueQueueNameLabel]
}

// MaxExecTime is the maximum run time an object's labels ask for
// (berth.dev/max-exec-time-seconds, else Kueue's), nil when they ask none;
// the error names the label and says what is wrong with its value.
func MaxExecTime(labels map[string]string) (*int32, error) {
	label := berthv1.MaxExecTimeLabel
	v, ok := labels[label]
	if !ok {
		label = berthv1.KueueMaxExecTimeLabel
		if v, ok = labels[label]; !ok {
			return nil, nil
		}
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("metadata.labels[%s]: %q is not a whole number of seconds from 1 to %d", label, v, math.MaxInt32)
	}
	secs := int32(n)
	return &secs, nil
}

// PriorityClassLabel is the label that names an object's
// WorkloadPriorityClass (berth's, else Kueue's), and the class it names.
func PriorityClassLabel(labels map[string]string) (label, class string) {
	if c := labels[berthv1.PriorityClassLabel]; c != "" {
		return berthv1.PriorityClassLabel, c
	}
	if c := labels[berthv1.KueuePriorityClassLabel]; c != "" {
		return berthv1.KueuePriorityClassLabel, c
	}
	return "", ""
}

// Priority resolves a workload's priority: the WorkloadPriorityClass its
// labels name, else its pods' PriorityClass, else none. A named
// WorkloadPriorityClass that does not exist (yet) gives no priority, its
// name, and the error of the read, for the caller to report; it is resolved
// again when the class appears.
func Priority(ctx context.Context, r client.Reader, labels map[string]string, podPriorityClass string) (*int32, string, error) {
	if _, name := PriorityClassLabel(labels); name != "" {
		var wpc berthv1.WorkloadPriorityClass
		if err := r.Get(ctx, types.NamespacedName{Name: name}, &wpc); err != nil {
			return nil, name, err
		}
		v := wpc.Value
		return &v, name, nil
	}
	if podPriorityClass != "" {
		var pc schedulingv1.PriorityClass
		if err := r.Get(ctx, types.NamespacedName{Name: podPriorityClass}, &pc); err == nil {
			v := pc.Value
			return &v, podPriorityClass, nil
		}
	}
	return nil, "", nil
}

// PriorityOf resolves obj's priority (Priority), saying so on obj with an
// event when the class its labels name does not exist yet.
func PriorityOf(ctx context.Context, r client.Reader, rec events.EventRecorder, obj client.Object, podPriorityClass string) (*int32, string) {
	p, class, err := Priority(ctx, r, obj.GetLabels(), podPriorityClass)
	if err != nil {
		label, _ := PriorityClassLabel(obj.GetLabels())
		rec.Eventf(obj, nil, corev1.EventTypeWarning, "PriorityClassNotFound", "Admission",
			"WorkloadPriorityClass %s (label %s): %v; queued with priority 0 until it exists", class, label, err)
	}
	return p, class
}

// OfClass maps a WorkloadPriorityClass to the objects of a kind that name it
// (by berth's label or Kueue's), listed from the cache into list: a class
// created or changed after its objects were queued is resolved for those
// still waiting, since objects arrive in any order.
func OfClass(c client.Reader, newList func() client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, label := range []string{berthv1.PriorityClassLabel, berthv1.KueuePriorityClassLabel} {
			list := newList()
			if err := c.List(ctx, list, client.MatchingLabels{label: obj.GetName()}); err != nil {
				log.FromContext(ctx).Error(err, "listing the objects of a WorkloadPriorityClass", "class", obj.GetName())
				continue
			}
			_ = meta.EachListItem(list, func(o runtime.Object) error {
				if co, ok := o.(client.Object); ok {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(co)})
				}
				return nil
			})
		}
		return out
	}
}

// QueuedBefore selects the objects queued says are queued, and the updates
// of those that were before: an object that lost its queue label still has
// a Workload for its reconciler to let go of.
func QueuedBefore(queued func(client.Object) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return queued(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return queued(e.ObjectNew) || queued(e.ObjectOld) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return queued(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return queued(e.Object) },
	}
}
