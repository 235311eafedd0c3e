// Package jobsets queues JobSets (sigs.k8s.io/jobset): a mutating webhook
// suspends a queued JobSet at creation; a reconciler keeps one Workload per
// JobSet, with one pod set per replicated Job (replicas times the pods each
// Job runs at once), starts the JobSet once the Workload is admitted, each
// replicated Job's pod template given the node labels and tolerations of
// the flavors its pod set was admitted in, suspends it again (restoring the
// templates) when the Workload loses its quota, and finishes the Workload
// when the JobSet completes or fails.
//
// The JobSet controller does the rest: it creates the child Jobs suspended
// while the JobSet is, and resumes them, with the templates' new node
// selectors and tolerations, when it is not.
package jobsets
