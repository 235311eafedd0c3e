// Package dashboard is berth's web dashboard: the cohort tree (the view
// `berth top` draws, internal/top) and each ClusterQueue's workloads,
// served to a browser on loopback and kept live with server-sent events
// fed from one watch of the cluster, whatever the number of browsers.
//
// Each view is pure and tested without a cluster, in a file named for it
// (view.go: the tree and a queue's workloads; detail.go, action.go,
// topology.go, workers.go, vclusters.go, history.go; whatif.go, a trace
// replayed against two plans); its handler is beside
// it in server_<view>.go. Server (server.go) holds the watch, the live
// events and the routes; the page itself is in web/, embedded in the
// binary.
package dashboard
