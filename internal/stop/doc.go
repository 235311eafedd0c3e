// Package stop stops and resumes berth's queues and workloads: a
// ClusterQueue's or LocalQueue's spec.stopPolicy, a Workload's spec.active.
// `berth stop` / `berth resume` and the dashboard's actions both write
// through it, each with the client of whoever asked.
package stop
