package dashboard

import (
	"math"
	"time"

	"github.com/berth-dev/berth/internal/top"
)

// History keeps, for every ClusterQueue, what the charts draw over the
// last span: its pending and admitted workloads, how many were admitted in
// each step, and its usage per flavor and resource, sampled once per step.
// All queues are sampled at the same moments, so one list of times serves
// them all; a queue seen late has nothing before (NaN kept, null served).
type History struct {
	step time.Duration
	keep int
	at   []time.Time
	cqs  map[string]*series
}

// series are float32s, NaN for "not there": a thousand queues' hour takes
// a few MiB.
type series struct {
	pending, admitted, admissions []float32
	usage                         map[string][]float32 // by "flavor/resource"
}

// Chart is one ClusterQueue's history, as /api/history serves it: values
// line up with At; null where the queue was not there.
type Chart struct {
	Step       float64               `json:"step"` // seconds
	At         []int64               `json:"at"`   // unix seconds
	Pending    []*float64            `json:"pending"`
	Admitted   []*float64            `json:"admitted"`
	Admissions []*float64            `json:"admissions"`
	Usage      map[string][]*float64 `json:"usage"` // used, in the resource's units (cpu in cores)
}

// NewHistory keeps span of samples taken every step.
func NewHistory(step, span time.Duration) *History {
	return &History{step: step, keep: max(1, int(span/step)), cqs: map[string]*series{}}
}

// Record takes a sample at now of the tree's ClusterQueues, with the
// admissions counted per ClusterQueue since the last sample; queues gone
// from the tree are forgotten.
func (h *History) Record(now time.Time, roots []top.Node, admissions map[string]int) {
	n := len(h.at)
	h.at = append(h.at, now)
	seen := map[string]bool{}
	var walk func(nodes []top.Node)
	walk = func(nodes []top.Node) {
		for _, node := range nodes {
			walk(node.Children)
			if node.Kind != "ClusterQueue" {
				continue
			}
			seen[node.Name] = true
			s := h.cqs[node.Name]
			if s == nil {
				s = &series{pending: nans(n), admitted: nans(n), admissions: nans(n), usage: map[string][]float32{}}
				h.cqs[node.Name] = s
			}
			s.pending = append(s.pending, float32(node.Pending))
			s.admitted = append(s.admitted, float32(node.Admitted))
			s.admissions = append(s.admissions, float32(admissions[node.Name]))
			for _, r := range node.Resources {
				key := r.Flavor + "/" + r.Resource
				if s.usage[key] == nil {
					s.usage[key] = nans(n)
				}
				s.usage[key] = append(s.usage[key], float32(r.Used.AsApproximateFloat64()))
			}
			for key, v := range s.usage {
				if len(v) == n { // a resource the queue no longer has
					s.usage[key] = append(v, float32(math.NaN()))
				}
			}
		}
	}
	walk(roots)
	for name := range h.cqs {
		if !seen[name] {
			delete(h.cqs, name)
		}
	}
	if len(h.at) > h.keep {
		drop := len(h.at) - h.keep
		h.at = h.at[drop:]
		for _, s := range h.cqs {
			s.pending, s.admitted, s.admissions = s.pending[drop:], s.admitted[drop:], s.admissions[drop:]
			for key, v := range s.usage {
				s.usage[key] = v[drop:]
			}
		}
	}
}

// Of returns cq's chart, and false when the history has no such queue.
func (h *History) Of(cq string) (Chart, bool) {
	s, ok := h.cqs[cq]
	if !ok {
		return Chart{}, false
	}
	c := Chart{Step: h.step.Seconds(), At: make([]int64, len(h.at)), Pending: values(s.pending), Admitted: values(s.admitted),
		Admissions: values(s.admissions), Usage: map[string][]*float64{}}
	for i, t := range h.at {
		c.At[i] = t.Unix()
	}
	for key, v := range s.usage {
		c.Usage[key] = values(v)
	}
	return c, true
}

func nans(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(math.NaN())
	}
	return out
}

// values are vs for JSON: NaN, which it cannot carry, as null.
func values(vs []float32) []*float64 {
	out := make([]*float64, len(vs))
	for i, v := range vs {
		if !math.IsNaN(float64(v)) {
			f := float64(v)
			out[i] = &f
		}
	}
	return out
}
