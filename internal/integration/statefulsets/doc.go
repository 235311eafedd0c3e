// Package statefulsets queues apps/v1 StatefulSets: the Pods of a
// StatefulSet that asks for a queue (berth's or Kueue's queue label on the
// StatefulSet) are one pod group (package podgroups) of as many Pods as it
// has replicas, admitted whole. Its webhook puts the queue, the priority
// class and the group's name on the pod template; each Pod is then held as
// a plain Pod until the group is admitted. The group is queued as soon as
// its first Pod is there (with OrderedReady the next comes only once that
// one is Ready), and serves until the StatefulSet is scaled to 0 or deleted,
// which gives its quota back.
package statefulsets
