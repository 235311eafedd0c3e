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
)

// KueueGroup is the API group of Kueue's Workloads, which FromKueueWorkloads
// reads (v1beta1 and v1beta2 have the fields it reads alike).
const KueueGroup = "kueue.x-k8s.io"

// SkipUnreadable counts Kueue Workloads whose fields are not what Kueue
// writes.
const SkipUnreadable = "not readable as a Kueue Workload"

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
			Name     string                 `json:"name"`
			Count    int32                  `json:"count"`
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"podSets"`
	} `json:"spec"`
	Status struct {
		Conditions   []metav1.Condition `json:"conditions"`
		RequeueState *struct {
			Count *int32 `json:"count"`
		} `json:"requeueState"`
	} `json:"status"`
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
		r.podSets = append(r.podSets, PodSet{Name: ps.Name, Count: ps.Count, Requests: req})
	}
	if r.name == "" {
		r.problem = SkipUnreadable
	}
	return r
}
