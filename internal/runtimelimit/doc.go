// Package runtimelimit decides when a workload has run as long as it may
// (spec.maximumExecutionTimeSeconds, from its object's
// berth.dev/max-exec-time-seconds label): its run time counts from each
// admission (Admitted) to its quota's release, added up over evictions in
// status.accumulatedPastExecutionTimeSeconds. Past it, the controller in
// internal/controller/runtimelimit deactivates it, and the admission
// controller stops it with reason MaximumExecutionTimeExceeded: its quota
// comes back once its pods are gone, and it is not queued again.
package runtimelimit
