// Package vcluster tests virtual clusters against real control planes: one
// host (berth's, with the simulator) and three virtual ones, each with its
// syncer, started once for the package and shared by its tests. Each test
// has its own host namespace (for its fake nodes' taint) and its own
// virtual namespaces.
package vcluster
