// Package admissioncheck is the I/O of two-phase admission: it tells the
// scheduler which AdmissionChecks exist and are Active, and carries out
// what internal/admissioncheck decides about the check states of workloads
// that hold quota (admit, give the quota back, deactivate, re-list).
package admissioncheck
