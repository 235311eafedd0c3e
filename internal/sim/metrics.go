package sim

import "github.com/prometheus/client_golang/prometheus"

// simMetrics are served on the simulator's /metrics.
type simMetrics struct {
	applied       *prometheus.CounterVec
	failures      *prometheus.CounterVec
	writes        *prometheus.CounterVec
	skipped       prometheus.Counter
	retries       prometheus.Counter
	pending       prometheus.Gauge
	leaseRenewals *prometheus.CounterVec
}

func newSimMetrics() *simMetrics {
	return &simMetrics{
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_sim_stages_applied_total",
			Help: "Stages applied to objects, by stage."}, []string{"stage"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_sim_stage_failures_total",
			Help: "Stages that could not apply to an object (reported as a Warning event on it), by stage."}, []string{"stage"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_sim_writes_total",
			Help: "API writes made by stages, by kind and action (patch, finalizers, delete)."}, []string{"kind", "action"}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_sim_writes_skipped_total",
			Help: "Stage writes not made because they would change nothing."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_sim_stage_retries_total",
			Help: "Stages queued again after a failed write."}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "berth_sim_pending_stages",
			Help: "Stages queued, due or not."}),
		leaseRenewals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_sim_lease_renewals_total",
			Help: "Node lease renewals, by result (renewed, failed)."}, []string{"result"}),
	}
}

func (m *simMetrics) register(r prometheus.Registerer) {
	r.MustRegister(m.applied, m.failures, m.writes, m.skipped, m.retries, m.pending, m.leaseRenewals)
}
