// Package admissioncheck decides what a workload's admission check states
// mean once it holds quota: admit it when every check is Ready, give the
// quota back for a Retry, deactivate it for a Rejected, and keep its list
// of checks in step with its ClusterQueue's while it waits. It reads and
// changes Workload objects; the controller beside it
// (internal/controller/admissioncheck) does the I/O.
package admissioncheck
