// Package workercluster decides about worker clusters without touching
// them: whether a kubeconfig from a Secret is safe to use (it may not run a
// program, use an auth-provider plugin, or read the controller's files),
// the client configuration made from it, the Active condition a connection
// attempt leads to, and when to try again. The controller beside it
// (internal/controller/workercluster) reads the Secret and dials.
package workercluster
