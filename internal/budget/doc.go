// Package budget decides how much of a ClusterQueue's budget of
// resource-time its workloads have spent, and when it has room again
// (spec.budget: e.g. 2,000 nvidia.com/gpu-hours per 30 days, rolling, or
// per calendar month).
//
// Usage counts from admission to the quota's release: every charge adds
// the resource in use times the time since the last charge, into buckets
// of a slice of the window each (a rolling window's twenty-fourth; a
// calendar month's whole month), so that a rolling window forgets the
// oldest slices as it moves. Each charge takes the larger of what was in
// use at the last charge and what is in use now: it never counts less than
// was held. The Ledger is kept in the ClusterQueue's status; a controller
// that restarts, or a new leader, takes it up and charges the time it did
// not see at the rate the ledger last saw, which is at least what was held
// then (no admission happens while no controller runs).
//
// Everything here is a pure function of its arguments; time is passed in.
package budget
