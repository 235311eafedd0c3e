// Package v1beta1 holds berth's API, group berth.dev, version v1beta1: the
// objects users write to queue batch work (ResourceFlavor, ClusterQueue, Cohort,
// LocalQueue, WorkloadPriorityClass) and the Workload berth keeps for
// each job. Validation lives in the CRD schema (OpenAPI and CEL markers here)
// so the API server refuses bad input with a message naming the field.
//
// +kubebuilder:object:generate=true
// +groupName=berth.dev
package v1beta1
