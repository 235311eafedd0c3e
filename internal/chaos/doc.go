// Package chaos injects faults into a running berth instance: it plans,
// from a seed, which component to kill when (Plan; the same seed gives the
// same plan, so a failing run can be replayed), carries the plan out with
// the killing and the health checks given to it (Injector), and measures
// each fault's recovery: from the kill until the component is back and
// admissions go on.
package chaos
