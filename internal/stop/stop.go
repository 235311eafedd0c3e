package stop

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Queue sets the spec.stopPolicy of the ClusterQueue name (namespace "")
// or of the LocalQueue namespace/name, and returns how many workloads it
// had admitted then.
func Queue(ctx context.Context, c client.Client, namespace, name string, policy berthv1.StopPolicy) (int32, error) {
	var obj client.Object
	var admitted func() int32
	if namespace == "" {
		cq := &berthv1.ClusterQueue{}
		cq.Name = name
		obj, admitted = cq, func() int32 { return cq.Status.AdmittedWorkloads }
	} else {
		lq := &berthv1.LocalQueue{}
		lq.Name, lq.Namespace = name, namespace
		obj, admitted = lq, func() int32 { return lq.Status.AdmittedWorkloads }
	}
	if err := c.Patch(ctx, obj, specPatch("stopPolicy", policy)); err != nil {
		return 0, err
	}
	return admitted(), nil
}

// Workload sets the spec.active of the Workload key, and returns it as
// written.
func Workload(ctx context.Context, c client.Client, key types.NamespacedName, active bool) (*berthv1.Workload, error) {
	wl := &berthv1.Workload{}
	wl.Name, wl.Namespace = key.Name, key.Namespace
	if err := c.Patch(ctx, wl, specPatch("active", active)); err != nil {
		return nil, err
	}
	return wl, nil
}

func specPatch(field string, value any) client.Patch {
	data, err := json.Marshal(map[string]any{"spec": map[string]any{field: value}})
	if err != nil {
		panic(fmt.Sprintf("a %T always marshals: %v", value, err)) // a string or a bool
	}
	return client.RawPatch(types.MergePatchType, data)
}

// QueueDone says in words what setting policy on the queue what did;
// admitted is how many workloads it had admitted then.
func QueueDone(what string, policy berthv1.StopPolicy, admitted int32) string {
	switch policy {
	case berthv1.Hold:
		return fmt.Sprintf("%s stopped: it admits nothing new; its %d admitted workloads keep running", what, admitted)
	case berthv1.HoldAndDrain:
		return fmt.Sprintf("%s stopped and draining: it admits nothing new, and its %d admitted workloads are evicted and queue again", what, admitted)
	}
	return what + " resumed: it admits again"
}

// WorkloadDone says in words what setting a workload's spec.active did;
// admitted says whether it held quota.
func WorkloadDone(what string, active, admitted bool) string {
	switch {
	case active:
		return what + " resumed: it queues again"
	case admitted:
		return what + " stopped: it gives its quota back, and waits out of its queue until resumed"
	}
	return what + " stopped: it waits out of its queue until resumed"
}
