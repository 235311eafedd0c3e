// Package dashboard is berth's web dashboard: the cohort tree (the view
// `berth top` draws, internal/top) and each ClusterQueue's workloads,
// served to a browser on loopback and kept live with server-sent events
// fed from one watch of the cluster, whatever the number of browsers.
//
// The views (view.go) are pure and tested without a cluster; Server
// (server.go) holds the watch and the HTTP handlers; the page itself is in
// web/, embedded in the binary.
package dashboard
