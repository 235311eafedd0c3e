package integration

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
