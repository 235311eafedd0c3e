// Package multicluster decides how a workload queued on a manager cluster
// runs on one of its worker clusters: which workers get a copy of its
// Workload, which copy wins (its worker alone gets the Job or JobSet),
// what the manager's multicluster admission check says meanwhile, and when
// a lost worker's workload is taken back and dispatched again. It also makes the copies and says whether an AdmissionCheck that
// dispatches can be used.
//
// Everything here is pure; the controller in internal/controller/multicluster
// reads the manager and the workers, calls Decide, and writes what it says.
package multicluster
