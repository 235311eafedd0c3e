// Package examples embeds the example manifests that berth itself applies
// (`berth up --demo`), so the files users read are the ones it runs.
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
