// Package podgroups queues pod groups: queued Pods that share the label
// berth.dev/pod-group-name (or Kueue's) and declare, in the annotation
// berth.dev/pod-group-total-count, how many they are. They are held by the
// Pod webhook as single Pods are (package pods); once all of a group's Pods
// are there, one Workload is made for them, with a pod set per distinct Pod
// shape, owned by each of its Pods, and admitted all together or not at all.
//
// Decide is the whole of the group's logic, a pure function of its Pods, its
// Workload and the time; the reconciler reads a group and writes Decide's
// plan.
package podgroups
