// Package admissionfairsharing orders the workloads of one ClusterQueue by
// how much their LocalQueues have used lately, so that the teams sharing a
// ClusterQueue take turns rather than first come, first served (a
// ClusterQueue with spec.admissionScope.admissionMode
// UsageBasedAdmissionFairSharing).
//
// A LocalQueue's consumption is a running average of the quota its
// workloads hold, sampled every SamplingInterval and decaying with
// HalfLife: each sample moves it toward the usage held then by
// 1 - 0.5^(elapsed/HalfLife). Between samples every admission adds an
// entry penalty, what that workload alone would add at the next sample, so
// that a burst from one LocalQueue does not jump the line before the
// sample sees it. Its score is the resource-weighted sum of consumption and
// penalty over its weight: the lower, the sooner its workloads go.
//
// Everything here is a pure function of its arguments (time is passed in);
// the scheduler keeps a Share per LocalQueue and the queues controller
// writes it to the LocalQueue's status, from which a restarted controller
// takes it up again.
package admissionfairsharing
