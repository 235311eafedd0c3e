// Package controlplane starts and supervises a local Kubernetes control plane:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, each a child
// process of the berth binary (see package components), on loopback ports, with
// generated certificates, RBAC on and an admin kubeconfig in the data directory.
//
// The supervisor is the process that calls Start: `berth up` in the foreground,
// the background process of `berth up --detach`, or a test binary through
// package testenv. It holds an flock on the data directory for as long as it
// runs and records what it started in instance.json, which is how Status and
// Down, running in other processes, find it. Components die with the
// supervisor (Pdeathsig), so no process outlives it, and stop in reverse start
// order with SIGKILL after a grace period: an API server whose etcd went first
// can ignore SIGTERM for minutes.
package controlplane
