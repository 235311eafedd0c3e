// Package visibility answers berth's visibility API (visibility.berth.dev,
// see api/visibility/v1beta1): where each pending workload stands in its
// ClusterQueue's and LocalQueue's line, and why it waits, read from the
// scheduler's queues in memory. Nothing is written to answer.
//
// The Kubernetes API server authenticates and authorises the user, then
// forwards the request with a client certificate of its front-proxy CA;
// Server answers only requests that bring one. Summarize, the paging and
// positions, is a pure function of a sorted line.
package visibility
