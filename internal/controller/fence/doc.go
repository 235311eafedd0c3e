// Package fence keeps a leader that lost its lease from writing. A replica
// paused (SIGSTOP, a long GC, a frozen VM) past its lease resumes with work
// in hand, and its workers may send writes before its leader election
// notices the loss; meanwhile another replica leads. The fence records when
// this replica last renewed its lease (the moment the renewal was sent) and
// refuses every write once that is older than the renew deadline, which is
// shorter than the lease: another replica can take the lease only a lease
// duration after it last saw the renewal, so the two never write at once.
// Time is the process's monotonic clock, which runs on while it is paused.
package fence
