// Package top is the view `berth top` draws: the cohort tree with, for each
// ClusterQueue, its pending, reserving and admitted workloads and, per
// flavor and resource, its quota, usage and borrowing, as the queues' status
// reports them. Tree and Render are pure; the command polls and redraws.
package top
