// Package audit checks, from what the API server stores, the promises berth
// makes: no ClusterQueue holds more quota than it may (its own, what it may
// borrow, what its cohort tree has), no workload is admitted twice at once,
// no queued Job or Pod runs without an admission, and, once things settle, every
// workload has ended or waits with a reason, no finalizer is left on a
// deleted Pod or ClusterQueue, and each ClusterQueue's reported usage is the sum of its
// admitted workloads.
//
// The checks are pure functions of a Snapshot, written apart from the
// scheduling core on purpose: an auditor that shared the core's quota
// arithmetic would share its mistakes. The Auditor watches the API and runs
// them as things change, recording each Violation with the objects and the
// moment; tests and benchmarks run it alongside what they exercise.
package audit
