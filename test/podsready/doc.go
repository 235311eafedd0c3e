// Package podsready tests all-or-nothing start (berth controller
// --wait-for-pods-ready) on what `berth up` runs: a Job whose pods cannot all
// run is evicted after the timeout, queued again with a backoff, its quota
// used by others meanwhile, deactivated after the limit, and resumed. Its
// control plane runs the controller with short timeouts, so it is the
// package's own.
package podsready
