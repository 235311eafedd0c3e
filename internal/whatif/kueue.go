package whatif

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	resourcehelper "k8s.io/component-helpers/resource"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// KueueGroup is the API group of Kueue's Workloads, which FromKueueWorkloads
// reads (v1beta1 and v1beta2 have the fields it reads alike).
const KueueGroup = "kueue.x-k8s.io"

// SkipUnreadable counts Kueue Workloads whose fields are not what Kueue
// writes.
const SkipUnreadable = "not readable as a Kueue Workload"

// SkipSliceConstraints counts Kueue Workloads placed in slices of several
// levels (podsetSliceRequiredTopologyConstraints), which berth's placement
// does not do yet.
const SkipSliceConstraints = "placed in slices of several topology levels (podsetSliceRequiredTopologyConstraints), which the replay does not do yet"

// FromKueueWorkloads records Kueue's Workloads as FromWorkloads records
// berth's: each that ran to its end arrives at its creation and runs from
// its last admission to its end, in its LocalQueue, at its priority, with
// one pod set per pod set of its, each pod asking for what its template
// asks for (containers, init containers and overhead, as the scheduler
// counts them).
func FromKueueWorkloads(items []unstructured.Unstructured, since time.Time, keepNames bool) Recording {
	runs := make([]ran, 0, len(items))
	for i := range items {
		runs = append(runs, kueueRan(&items[i]))
	}
	return record(runs, since, keepNames)
}

// kueueWorkload is the part of a Kueue Workload a recording reads.
type kueueWorkload struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		QueueName string `json:"queueName"`
		Priority  *int32 `json:"priority"`
		PodSets   []struct {
			Name            string                 `json:"name"`
			Count           int32                  `json:"count"`
			Template        corev1.PodTemplateSpec `json:"template"`
			TopologyRequest *kueueTopologyRequest  `json:"topologyRequest"`
		} `json:"podSets"`
	} `json:"spec"`
	Status struct {
		Conditions   []metav1.Condition `json:"conditions"`
		RequeueState *struct {
			Count *int32 `json:"count"`
		} `json:"requeueState"`
	} `json:"status"`
}

// kueueTopologyRequest is what a recording reads of a Kueue pod set's
// topologyRequest (its other fields name pod indexes, which berth's
// placement does not need).
type kueueTopologyRequest struct {
	Required      *string `json:"required"`
	Preferred     *string `json:"preferred"`
	Unconstrained *bool   `json:"unconstrained"`
	SliceLevel    *string `json:"podSetSliceRequiredTopology"`
	SliceSize     *int32  `json:"podSetSliceSize"`
	Constraints   []any   `json:"podsetSliceRequiredTopologyConstraints"`
}

// berth is the request as berth's API says it: nil when it asks for no
// placement.
func (k *kueueTopologyRequest) berth() *berthv1.TopologyRequest {
	if k == nil || k.Required == nil && k.Preferred == nil && (k.Unconstrained == nil || !*k.Unconstrained) {
		return nil
	}
	return &berthv1.TopologyRequest{Required: k.Required, Preferred: k.Preferred, Unconstrained: k.Unconstrained,
		SliceRequiredLevel: k.SliceLevel, SliceSize: k.SliceSize}
}

func kueueRan(u *unstructured.Unstructured) ran {
	var w kueueWorkload
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
		return ran{problem: SkipUnreadable}
	}
	r := ran{name: w.Name, namespace: w.Namespace, queue: w.Spec.QueueName, created: w.CreationTimestamp.Time,
		admitted: trueSince(w.Status.Conditions, "Admitted"), finished: trueSince(w.Status.Conditions, "Finished")}
	if w.Spec.Priority != nil {
		r.priority = *w.Spec.Priority
	}
	if rs := w.Status.RequeueState; rs != nil && rs.Count != nil {
		r.evicted = *rs.Count
	}
	for _, ps := range w.Spec.PodSets {
		pod := &corev1.Pod{Spec: ps.Template.Spec}
		req := map[string]string{}
		requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		for _, name := range slices.Sorted(maps.Keys(requests)) {
			if q := requests[name]; !q.IsZero() {
				req[string(name)] = q.String()
			}
		}
		if ps.TopologyRequest != nil && len(ps.TopologyRequest.Constraints) > 0 {
			r.problem = SkipSliceConstraints
		}
		r.podSets = append(r.podSets, PodSet{Name: ps.Name, Count: ps.Count, Requests: req, Topology: ps.TopologyRequest.berth()})
	}
	if r.name == "" {
		r.problem = SkipUnreadable
	}
	return r
}
