// Package v1beta1 is berth's visibility API, visibility.berth.dev/v1beta1:
// read-only views of the pending queues, served by the controller from
// memory through the Kubernetes API server (an aggregated API). Nothing is
// stored; every answer is computed when asked.
//
//	GET /apis/visibility.berth.dev/v1beta1/clusterqueues/NAME/pendingworkloads
//	GET /apis/visibility.berth.dev/v1beta1/namespaces/NS/localqueues/NAME/pendingworkloads
//
// Both take offset (default 0) and limit (default 1000) and answer a
// PendingWorkloadsSummary.
package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

const (
	// GroupName is the API group.
	GroupName = "visibility.berth.dev"
	// Version is the API version.
	Version = "v1beta1"
	// PendingWorkloads is the subresource of clusterqueues and localqueues.
	PendingWorkloads = "pendingworkloads"
	// DefaultLimit is how many workloads a page holds unless limit says.
	DefaultLimit = 1000
	// MaxLimit and MaxOffset bound limit and offset: larger ones are
	// refused with 400 Bad Request.
	MaxLimit  = 10_000
	MaxOffset = 100_000_000
)

// PendingWorkloadsSummary is one page of a queue's waiting workloads, in the
// order berth will look at them.
type PendingWorkloadsSummary struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata names the queue asked about.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Total is how many workloads wait in the queue asked about, on every page.
	Total int32 `json:"total"`
	// Items are the page's workloads, first in line first.
	Items []PendingWorkload `json:"items"`
}

// PendingWorkload is a workload waiting in its ClusterQueue's line.
type PendingWorkload struct {
	// Metadata has the Workload's name and namespace.
	metav1.ObjectMeta `json:"metadata"`
	// Priority is the workload's own priority.
	Priority int32 `json:"priority"`
	// Aged is what waiting added to Priority for ordering, under the
	// ClusterQueue's aging policy.
	Aged int32 `json:"aged,omitempty"`
	// QueuedAt orders workloads of equal priority: when the workload was
	// created, or last evicted.
	QueuedAt metav1.Time `json:"queuedAt"`
	// LocalQueueName is the LocalQueue it was submitted to, in its namespace.
	LocalQueueName string `json:"localQueueName"`
	// ClusterQueueName is the ClusterQueue whose line it waits in.
	ClusterQueueName string `json:"clusterQueueName"`
	// PositionInClusterQueue is its place in the ClusterQueue's line: 1 is
	// next.
	PositionInClusterQueue int32 `json:"positionInClusterQueue"`
	// PositionInLocalQueue is its place among the line's workloads from the
	// same LocalQueue: 1 is next.
	PositionInLocalQueue int32 `json:"positionInLocalQueue"`
	// Reason and Message say why it waits, as berth last decided; empty
	// when it has not been looked at yet (it waits its turn).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}
