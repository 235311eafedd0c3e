// Package upsert makes one Kubernetes object be as berth wants it: created
// when missing, its berth-owned fields updated when they differ, and left
// alone (no write) when they already agree. The CLI's `cluster add`, the
// multi-cluster benchmark and the visibility controller all use it.
package upsert
