// Package workercluster connects to the worker clusters WorkerClusters
// name: it reads each one's kubeconfig from its Secret in berth's
// namespace, checks it (internal/workercluster), reaches the worker's API
// server, and reports the Active condition, trying again with backoff.
package workercluster
