// Package multicluster runs multicluster admission checks on a manager
// cluster: it is the one reconciler of WorkerClusters, reaching each worker,
// reporting so in its Active condition, keeping a client and a watch open
// to it while it is reached, and deleting this manager's copies there
// before a deleted WorkerCluster goes (workers.go); it keeps each multicluster AdmissionCheck's Active
// condition true (checks.go), dispatches the workloads that reserve quota
// behind such a check to the workers and follows them there (dispatch.go),
// and gives a Job created in such a queue spec.managedBy so that the
// manager's own Job controller leaves it alone (Dispatched, asked by the Job
// webhook).
//
// The decisions are internal/multicluster's and internal/workercluster's;
// this package reads and writes.
package multicluster
