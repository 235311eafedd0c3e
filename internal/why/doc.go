// Package why explains, in words, why a workload is where it is: pending
// and what for, its place in its ClusterQueue's line and who is ahead, what
// it needs and what its queue has free, and what berth's scheduling core
// decides for it right now (admit, wait, or preempt whom), worked out by
// running the same core the controller runs on a copy of the queues and
// admitted workloads. Explain and Render are pure; `berth why` reads the
// objects and prints.
package why
