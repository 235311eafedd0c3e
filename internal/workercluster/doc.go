// Package workercluster decides about worker clusters without touching
// them: whether a kubeconfig from a Secret is safe to use (it may not run a
// program, use an auth-provider plugin, or read the controller's files),
// the client configuration made from it, the Active condition a connection
// attempt leads to, when to try again, and when a WorkerCluster being
// deleted may go. internal/controller/multicluster reads the Secret, dials
// and deletes.
package workercluster
