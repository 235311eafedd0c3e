// Package leaderworkersets queues LeaderWorkerSets (sigs.k8s.io/lws): each
// group of a LeaderWorkerSet that asks for a queue (berth's or Kueue's queue
// label on the LeaderWorkerSet), its leader and its workers, is one pod group
// (package podgroups), admitted whole. Its webhook puts the queue and the
// priority class on the leader's and the workers' pod templates; each pod is
// then held as a plain Pod and labelled with its group (pods.Hold). Scaling
// up makes new groups, which queue; scaling down deletes groups, whose quota
// goes back with their pods.
package leaderworkersets
