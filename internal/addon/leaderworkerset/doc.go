// Package leaderworkerset runs sigs.k8s.io/lws's LeaderWorkerSet controller
// and webhooks as a component of a local instance (berth up --with
// leaderworkerset).
package leaderworkerset
