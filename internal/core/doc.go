// Package core is berth's scheduling core: quota accounting over a tree of
// ClusterQueues and cohorts, flavor assignment and the admission cycle.
//
// It is pure: no client-go, no I/O, no clocks of its own. Controllers translate
// API objects into the types here, feed changes in (flavors, queues, cohorts,
// admitted workloads) and turn the Decisions a Cycle returns into API writes.
// That keeps every rule testable in microseconds and lets the simulator and
// benchmarks reuse the same code.
//
// Quantities are int64 in milli-units of the resource (Milli), so cpu "1" is
// 1000 and memory "1Ki" is 1024000. Arithmetic on them saturates at
// MaxAmount (AddAmounts, MulAmount) rather than wrapping around.
//
// Quota semantics follow Kueue's, so its users can move over. ClusterQueues are
// the leaves of a tree whose inner nodes are cohorts. A node keeps for itself
// the part of its quota it may not lend (its nominal quota minus its lending
// limit) and lends the rest to its parent. A cohort's capacity is its own quota
// plus what its children lend. A ClusterQueue may use what it keeps plus what is
// free above it, up to its borrowing limit.
package core
