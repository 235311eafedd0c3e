// Package metrics defines berth's Prometheus metrics. Every name starts with
// berth_; labels use one vocabulary: cluster_queue, flavor, resource, result.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/berth-dev/berth/internal/version"
)

var (
	// PendingWorkloads by ClusterQueue; status is "active" (waiting its turn)
	// or "inadmissible" (set aside until something changes).
	PendingWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_pending_workloads",
		Help: "Pending workloads per ClusterQueue, by status (active or inadmissible).",
	}, []string{"cluster_queue", "status"})

	// ReservingWorkloads holding quota, by ClusterQueue.
	ReservingWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_reserving_workloads",
		Help: "Workloads holding quota per ClusterQueue.",
	}, []string{"cluster_queue"})

	// AdmissionAttempts counts workloads looked at by a cycle, by result:
	// admitted, preempting, pending (no room, or inadmissible) or contention.
	AdmissionAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_admission_attempts_total",
		Help: "Workloads considered by admission cycles, by result (admitted, pending, contention).",
	}, []string{"result"})

	// AdmissionCycleDuration is the time one cycle takes, without API writes.
	AdmissionCycleDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "berth_admission_cycle_duration_seconds",
		Help:    "Duration of one admission cycle (decisions only; writes happen after).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
	})

	// AdmittedWorkloads counts admissions written to the API, by ClusterQueue.
	AdmittedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_admitted_workloads_total",
		Help: "Admissions written, per ClusterQueue.",
	}, []string{"cluster_queue"})

	// AdmissionWaitTime from a workload's creation (or last eviction) to its admission.
	AdmissionWaitTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "berth_admission_wait_time_seconds",
		Help:    "Time from creation (or last eviction) to admission, per ClusterQueue.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 14),
	}, []string{"cluster_queue"})

	// PreemptedWorkloads counts victims by the preemptor's ClusterQueue and the rule.
	PreemptedWorkloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_preempted_workloads_total",
		Help: "Workloads preempted, by the preemptor's ClusterQueue and the rule that chose them.",
	}, []string{"cluster_queue", "reason"})

	// NodeFailureRepairs counts placements that lost nodes, by what became
	// of them: moved (their lost pods given room within their domain) or
	// evicted (none).
	NodeFailureRepairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_node_failure_repairs_total",
		Help: "Topology-placed workloads whose nodes failed, by result: moved (their lost pods given room within their request) or evicted.",
	}, []string{"result"})

	// RunTimeExceeded counts workloads stopped for running past their
	// maximum run time, by the ClusterQueue they ran in.
	RunTimeExceeded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_run_time_exceeded_workloads_total",
		Help: "Workloads stopped and deactivated for running past spec.maximumExecutionTimeSeconds, by ClusterQueue.",
	}, []string{"cluster_queue"})

	// QuotaUsage and NominalQuota by ClusterQueue, flavor and resource, in the
	// resource's units (cores, bytes, ...).
	QuotaUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cluster_queue_resource_usage",
		Help: "Quota in use per ClusterQueue, flavor and resource, in the resource's units.",
	}, []string{"cluster_queue", "flavor", "resource"})
	NominalQuota = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "berth_cluster_queue_nominal_quota",
		Help: "Nominal quota per ClusterQueue, flavor and resource, in the resource's units.",
	}, []string{"cluster_queue", "flavor", "resource"})
)

// LocalQueueWeightedUsage is what orders a LocalQueue's workloads in a
// ClusterQueue that orders by usage (admission fair sharing), as of its
// last sample.
var LocalQueueWeightedUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "berth_local_queue_weighted_usage",
	Help: "A LocalQueue's recent usage, weighed by resource and divided by its weight, where its ClusterQueue orders by it (lower goes first); +Inf for weight 0.",
}, []string{"local_queue"})

// BudgetSpent is what a ClusterQueue's budget has spent in its window now,
// in resource-hours of its resource.
var BudgetSpent = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "berth_cluster_queue_budget_spent",
	Help: "Resource-hours a ClusterQueue's spec.budget has spent in its window now.",
}, []string{"cluster_queue"})

// BuildInfo is 1, labelled with the build's version, commit (and its date)
// and Go version, so that a dashboard can tell which berth runs.
var BuildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "berth_build_info",
	Help: "Always 1, labelled with the build's version, commit, the commit's date and Go version.",
}, []string{"version", "commit", "date", "go_version"})

var once sync.Once

// Register adds berth's metrics to r, once per process.
func Register(r prometheus.Registerer) {
	once.Do(func() {
		r.MustRegister(PendingWorkloads, ReservingWorkloads, AdmissionAttempts, AdmissionCycleDuration,
			AdmittedWorkloads, AdmissionWaitTime, QuotaUsage, NominalQuota, PreemptedWorkloads, RunTimeExceeded, NodeFailureRepairs, LocalQueueWeightedUsage, BudgetSpent, BuildInfo)
		v := version.Get()
		BuildInfo.WithLabelValues(v.Version, v.Commit, v.Date, v.GoVersion).Set(1)
	})
}

// ForgetClusterQueue drops a deleted ClusterQueue's series.
func ForgetClusterQueue(cq string) {
	l := prometheus.Labels{"cluster_queue": cq}
	PendingWorkloads.DeletePartialMatch(l)
	ReservingWorkloads.DeletePartialMatch(l)
	QuotaUsage.DeletePartialMatch(l)
	NominalQuota.DeletePartialMatch(l)
	AdmittedWorkloads.DeletePartialMatch(l)
	PreemptedWorkloads.DeletePartialMatch(l)
	RunTimeExceeded.DeletePartialMatch(l)
	AdmissionWaitTime.DeletePartialMatch(l)
	BudgetSpent.DeletePartialMatch(l)
}
