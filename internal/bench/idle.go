package bench

import (
	"maps"
	"math"
	"slices"
	"time"
)

// QuotaTime splits a run's quota-time (every cohort's cpu, over the wall
// time) by what it was doing, as shares that add up to 1. It says why
// utilisation (Run) is what it is: quota held by workloads past their
// runtime (finishing lag), held by admissions that ended in an eviction
// (work preempted), idle because nothing waited for it (the arrivals'
// shape), idle while waiting work would have fit (admission lag: the
// queueing system, the API server and the run's watches), and idle while
// the work still waiting was larger than the room left (packing).
type QuotaTime struct {
	Run                float64 `json:"run"`
	HeldPastRuntime    float64 `json:"heldPastRuntime"`
	Preempted          float64 `json:"preempted"`
	IdleNothingWaiting float64 `json:"idleNothingWaiting"`
	IdleWaitingFits    float64 `json:"idleWaitingFits"`
	IdleWaitingTooBig  float64 `json:"idleWaitingTooBig"`
}

// quotaTime computes QuotaTime from the records, between the first
// arrival (first) and the last finish (last). A workload waits from its
// creation to its first admission, and from each eviction to its next
// admission; it holds its quota in each admission until its eviction or
// finish, as the run saw them.
func quotaTime(s *Scenario, records []Record, first, last time.Duration) QuotaTime {
	var q QuotaTime
	capacity := float64(int64(s.QueuesPerCohort) * s.NominalCPU)
	total := capacity * float64(s.Cohorts) * (last - first).Seconds()
	if total <= 0 {
		return q
	}
	cpu := map[string]Class{}
	for _, c := range s.Classes {
		cpu[c.Name] = c
	}
	type event struct {
		at               time.Duration
		cohort           int
		size             int64
		pending, holding int // +1, -1 or 0
	}
	var events []event
	held := 0.0 // by the admissions that were not evicted
	for _, r := range records {
		c, ok := cpu[r.Class]
		if !ok || r.Cohort < 0 || r.Cohort >= s.Cohorts {
			continue
		}
		add := func(at time.Duration, pending, holding int) {
			events = append(events, event{at: at, cohort: r.Cohort, size: c.CPU, pending: pending, holding: holding})
		}
		add(r.Created, 1, 0)
		if !r.WasAdmitted {
			continue
		}
		if r.WasFinished {
			q.Run += float64(c.CPU) * c.Runtime.Seconds()
		}
		for i, start := range append([]time.Duration{r.Admitted}, r.Readmitted...) {
			add(start, -1, 1)
			end := last
			switch {
			case i < len(r.Released):
				end = r.Released[i]
				add(end, 1, -1)
				q.Preempted += float64(c.CPU) * (end - start).Seconds()
				continue
			case r.WasFinished:
				end = r.Finished
				add(end, 0, -1)
			}
			held += float64(c.CPU) * (end - start).Seconds()
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return int(a.at - b.at) })

	type state struct {
		held    int64
		pending map[int64]int // waiting workloads by cpu
	}
	cohorts := make([]state, s.Cohorts)
	for i := range cohorts {
		cohorts[i].pending = map[int64]int{}
	}
	var nothing, fits, tooBig float64
	// Between two events every cohort's state stands still: its free quota
	// is filled with the waiting work, largest first, as far as it goes;
	// what stays free is idle for want of work, or because what waits is
	// too large for it.
	account := func(from, to time.Duration) {
		from, to = max(from, first), min(to, last)
		if to <= from {
			return
		}
		dt := (to - from).Seconds()
		for _, c := range cohorts {
			free := max(0, capacity-float64(c.held))
			room, left := free, false
			sizes := slices.Sorted(maps.Keys(c.pending))
			for i := len(sizes) - 1; i >= 0; i-- {
				n := float64(c.pending[sizes[i]])
				if n <= 0 {
					continue
				}
				k := min(n, math.Floor(room/float64(sizes[i])))
				room -= k * float64(sizes[i])
				left = left || k < n
			}
			fits += (free - room) * dt
			if left {
				tooBig += room * dt
			} else {
				nothing += room * dt
			}
		}
	}
	at := first
	for _, e := range events {
		account(at, e.at)
		at = max(at, e.at)
		c := &cohorts[e.cohort]
		c.pending[e.size] += e.pending
		c.held += int64(e.holding) * e.size
	}
	account(at, last)

	q.HeldPastRuntime = (held - q.Run) / total
	q.Run /= total
	q.Preempted /= total
	q.IdleNothingWaiting = nothing / total
	q.IdleWaitingFits = fits / total
	q.IdleWaitingTooBig = tooBig / total
	return q
}
