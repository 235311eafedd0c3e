// Package deployments queues the pods of apps/v1 Deployments, one by one, as
// serving workloads that grow and shrink: a Deployment that asks for a queue
// (berth's or Kueue's queue label on the Deployment) gets that queue, and its
// priority class label, on its pod template, so each of its pods is queued as
// a plain Pod (package pods): held until admitted, its quota given back when
// it goes (scaled down, replaced by a rollout), deleted when evicted (its
// ReplicaSet makes another, which queues again).
package deployments
