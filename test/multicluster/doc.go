// Package multicluster tests dispatch from a manager cluster to worker
// clusters: three control planes, each what `berth up` runs (workers with
// the simulator, so their Jobs really run), started at once for the package
// and shared by its tests.
package multicluster
