// Package integration is what every kind of workload berth queues has in
// common: the Kind interface each one implements (jobs for batch/v1 Job,
// pods for plain Pods), the webhook that holds a new object back until it is
// admitted, and the pieces every kind reads the same way: the queue label,
// the priority class, the pod set of a pod spec, and the flavors' node labels
// and tolerations added to pods that start.
//
// A kind's methods are pure: they read and change objects in memory. Its
// reconciler, in the kind's own package, does the I/O.
package integration
