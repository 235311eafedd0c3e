package scheduler

import (
	"maps"
	"time"

	"github.com/berth-dev/berth/internal/admissionfairsharing"
	"github.com/berth-dev/berth/internal/core"
)

// SetAdmissionFairSharing sets how LocalQueues' usage is measured for the
// ClusterQueues that order by it (admissionScope
// UsageBasedAdmissionFairSharing); the default is admissionfairsharing.Default.
func (s *Scheduler) SetAdmissionFairSharing(c admissionfairsharing.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afs = c
	s.nextSample = time.Time{}
	for lq := range s.shares {
		s.rescore(lq)
	}
}

// TakeUpShare takes up what a LocalQueue's status says it consumed, when it
// is newer than what this scheduler knows: at start-up, or on a replica
// that is not the leader, which samples nothing itself.
func (s *Scheduler) TakeUpShare(localQueue string, stored admissionfairsharing.Share) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.shares[localQueue]
	if stored.At.IsZero() || !stored.At.After(old.At) {
		return
	}
	old.Consumed, old.At = stored.Consumed, stored.At
	s.shares[localQueue] = old
	s.rescore(localQueue)
}

// Share returns what a LocalQueue consumed, as of its last sample, and its
// score then (what orders its workloads, lower first), while its
// ClusterQueue orders by it; false otherwise or before its first sample.
func (s *Scheduler) Share(localQueue string) (admissionfairsharing.Share, float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.shares[localQueue]
	if !ok || sh.At.IsZero() || !s.queues.IsFair(localQueue) {
		return admissionfairsharing.Share{}, 0, false
	}
	out := admissionfairsharing.Share{Consumed: maps.Clone(sh.Consumed), At: sh.At}
	return out, s.afs.Score(out, s.weight(localQueue)), true
}

// SampleShares takes in the usage held by every LocalQueue whose
// ClusterQueue orders by it and whose sample is due; the caller calls it
// more often than the sampling interval. The sampled queues' status is
// marked to be written.
func (s *Scheduler) SampleShares() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sampleShares()
}

func (s *Scheduler) sampleShares() {
	now := s.clock.Now()
	// Every cycle calls this: the LocalQueues are walked once per sampling
	// interval, not once per cycle.
	if now.Before(s.nextSample) {
		return
	}
	s.nextSample = now.Add(s.afs.SamplingInterval)
	for _, lq := range s.queues.Fair() {
		sh := s.shares[lq]
		if !s.afs.Due(sh, now) {
			continue
		}
		s.shares[lq] = s.afs.Sample(sh, byResource(s.lqUsage[lq]), now)
		s.rescore(lq)
		s.dirtyLQ[lq] = true
	}
}

// entered adds the entry penalty of a workload admitted through a
// LocalQueue whose ClusterQueue orders by usage.
func (s *Scheduler) entered(localQueue string, usage core.Usage) {
	if !s.queues.IsFair(localQueue) {
		return
	}
	s.shares[localQueue] = s.afs.Enter(s.shares[localQueue], byResource(usage))
	s.rescore(localQueue)
}

func (s *Scheduler) rescore(localQueue string) {
	s.queues.SetScore(localQueue, s.afs.Score(s.shares[localQueue], s.weight(localQueue)))
}

func (s *Scheduler) weight(localQueue string) float64 {
	if w, ok := s.weights[localQueue]; ok {
		return w
	}
	return 1
}

// byResource sums usage over flavors, in the resources' units.
func byResource(u core.Usage) admissionfairsharing.Usage {
	out := admissionfairsharing.Usage{}
	for fr, v := range u {
		out[fr.Resource] += float64(v) / 1000
	}
	return out
}
