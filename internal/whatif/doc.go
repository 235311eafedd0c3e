// Package whatif replays a recorded (or made-up) history of workloads
// against a queue configuration, in virtual time, with berth's own
// scheduler (package scheduler, the state machine the controller drives),
// to answer "what would this quota plan do to each team's waits" before
// production is changed.
//
// It is pure: a trace (ReadTrace; learnt from a cluster's Workloads by
// FromWorkloads, or made up by Generate) and a configuration (ParseConfig) go in,
// a Result with every workload's wait comes out (Replay), and Compare
// lines two Results up. The loop moves a virtual clock from one event to
// the next (an arrival, a finish, a backoff ending), so a week replays in
// the time its admission cycles take, with no API server and no goroutine
// per workload.
//
// What the replay does not model is refused or said, not ignored:
// admission checks are refused in a configuration, and topology-aware
// placement without the trace's nodes; an evicted workload gives its
// quota back at once (a real one holds it until its pods are gone) and
// runs again from the start.
package whatif
