// Package perf holds benchmarks that need a real control plane. They only run
// with -bench; results go to docs/benchmarks.md with the machine and the date.
package perf
