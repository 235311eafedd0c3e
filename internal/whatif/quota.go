package whatif

import (
	"cmp"
	"slices"
	"time"

	"github.com/berth-dev/berth/internal/core"
)

// QuotaUse is what a ClusterQueue held of one resource in one flavor over
// a replay, on average from the trace's start to the replay's last event,
// in the resource's units.
type QuotaUse struct {
	ClusterQueue string  `json:"clusterQueue"`
	Flavor       string  `json:"flavor"`
	Resource     string  `json:"resource"`
	Nominal      float64 `json:"nominal"`
	Used         float64 `json:"used"`
	// Borrowed is the part of Used above the nominal quota.
	Borrowed float64 `json:"borrowed"`
}

// Held is what all ClusterQueues together held of a resource from At
// (seconds after the trace's start) until the next change, in its units.
type Held struct {
	At       float64
	Resource string
	Held     float64
}

// meter integrates what each ClusterQueue holds over virtual time: each
// change closes the interval since the queue's last one. It also keeps
// what all of them hold of each resource, change by change, for the chart.
type meter struct {
	start   time.Time
	nominal map[string]core.Usage // by ClusterQueue, milli-units
	held    map[string]core.Usage
	since   map[string]time.Time
	// used and borrowed are milli-unit seconds.
	used, borrowed map[string]map[core.FlavorResource]float64
	total          map[string]int64 // by resource, milli-units
	timeline       []Held
}

func newMeter(start time.Time, cqs []core.ClusterQueue) *meter {
	m := &meter{start: start, nominal: map[string]core.Usage{}, held: map[string]core.Usage{}, since: map[string]time.Time{},
		used: map[string]map[core.FlavorResource]float64{}, borrowed: map[string]map[core.FlavorResource]float64{}, total: map[string]int64{}}
	for _, cq := range cqs {
		n := core.Usage{}
		for _, rg := range cq.ResourceGroups {
			for _, f := range rg.Flavors {
				for r, q := range f.Quotas {
					n[core.FlavorResource{Flavor: f.Name, Resource: r}] = q.Nominal
				}
			}
		}
		m.nominal[cq.Name] = n
	}
	return m
}

// close counts what cq held from its last change until now.
func (m *meter) close(cq string, now time.Time) {
	dt := now.Sub(m.since[cq]).Seconds()
	m.since[cq] = now
	if dt <= 0 {
		return
	}
	if m.used[cq] == nil {
		m.used[cq], m.borrowed[cq] = map[core.FlavorResource]float64{}, map[core.FlavorResource]float64{}
	}
	for fr, v := range m.held[cq] {
		m.used[cq][fr] += float64(v) * dt
		if over := v - m.nominal[cq][fr]; over > 0 {
			m.borrowed[cq][fr] += float64(over) * dt
		}
	}
}

// add changes what cq holds by u (sign 1: admitted, -1: given back) at now.
func (m *meter) add(cq string, u core.Usage, sign int64, now time.Time) {
	if _, ok := m.since[cq]; !ok {
		m.since[cq] = now
	}
	m.close(cq, now)
	if m.held[cq] == nil {
		m.held[cq] = core.Usage{}
	}
	for fr, v := range u {
		m.held[cq][fr] += sign * v
		m.total[fr.Resource] += sign * v
		m.timeline = append(m.timeline, Held{At: now.Sub(m.start).Seconds(), Resource: fr.Resource, Held: float64(m.total[fr.Resource]) / 1000})
	}
}

// nominalTotal is the nominal quota of all ClusterQueues, by resource, in
// its units.
func (m *meter) nominalTotal() map[string]float64 {
	out := map[string]float64{}
	for _, n := range m.nominal {
		for fr, v := range n {
			out[fr.Resource] += float64(v) / 1000
		}
	}
	return out
}

// uses closes every queue at end and says each one's average over the
// replay, from start to end: every resource it has a nominal quota of or
// held, ordered by queue, flavor and resource.
func (m *meter) uses(start, end time.Time) []QuotaUse {
	total := end.Sub(start).Seconds()
	var out []QuotaUse
	for cq, n := range m.nominal {
		if _, ok := m.since[cq]; ok {
			m.close(cq, end)
		}
		frs := map[core.FlavorResource]bool{}
		for fr := range n {
			frs[fr] = true
		}
		for fr := range m.used[cq] {
			frs[fr] = true
		}
		for fr := range frs {
			u := QuotaUse{ClusterQueue: cq, Flavor: fr.Flavor, Resource: fr.Resource, Nominal: float64(n[fr]) / 1000}
			if total > 0 {
				u.Used, u.Borrowed = m.used[cq][fr]/1000/total, m.borrowed[cq][fr]/1000/total
			}
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b QuotaUse) int {
		return cmp.Or(cmp.Compare(a.ClusterQueue, b.ClusterQueue), cmp.Compare(a.Flavor, b.Flavor), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}
