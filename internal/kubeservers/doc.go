// Package kubeservers runs one control-plane component (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) or kubectl inside the current process.
//
// berth is one binary: the control-plane supervisor re-executes it as
// "berth component <name> <flags>" for each component, so every component is its
// own process (failures stay isolated, CPU and memory are measured per component)
// while users still install a single file. This is the only package that links the
// Kubernetes server code; everything else talks to those processes over the network.
package kubeservers
