// Package examples embeds the example manifests that berth itself applies
// (`berth up --demo`) or writes (`berth import`), so the files users read
// are the ones it uses.
package examples

import _ "embed"

// Queues is queues.yaml: two teams sharing a cohort, one of them borrowing.
//
//go:embed queues.yaml
var Queues []byte

// DemoJobs is demo-jobs.yaml: the mix of Jobs the demo submits.
//
//go:embed demo-jobs.yaml
var DemoJobs []byte

// ConfiguredMPIJob is configured/kinds.yaml: the MPI Operator's MPIJob,
// described for --configured-kinds (`berth import` of a Kueue
// Configuration turns kubeflow.org/mpijob into it).
//
//go:embed configured/kinds.yaml
var ConfiguredMPIJob []byte
