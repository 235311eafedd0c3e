package whatif

import (
	"maps"
	"slices"

	"github.com/berth-dev/berth/internal/bench/plot"
)

// chartBuckets is how many steps the time axis is cut into.
const chartBuckets = 200

// Chart draws replays of one trace over its time: how many workloads wait
// (arrived, not yet admitted), how long those arriving in each step waited
// on average, in hours, and what share of the ClusterQueues' nominal quota
// of each resource was held, one line per replay.
func Chart(results ...*Result) plot.Chart {
	end := 0.0
	for _, r := range results {
		end = max(end, r.End)
	}
	step := max(end/chartBuckets, 1)
	waiting := plot.Panel{Title: "workloads waiting (arrived, not yet admitted)"}
	waits := plot.Panel{Title: "mean wait of the workloads arriving then (hours)"}
	for _, r := range results {
		waiting.Series = append(waiting.Series, plot.Series{Name: r.Config, Points: waitingOver(r, step)})
		waits.Series = append(waits.Series, plot.Series{Name: r.Config, Points: waitsOver(r, step)})
	}
	panels := []plot.Panel{waiting, waits}
	resources := map[string]bool{}
	for _, r := range results {
		for res, n := range r.Nominal {
			resources[res] = resources[res] || n > 0
		}
	}
	for _, res := range slices.Sorted(maps.Keys(resources)) {
		if !resources[res] {
			continue
		}
		p := plot.Panel{Title: "quota held, % of the ClusterQueues' nominal " + res}
		for _, r := range results {
			p.Series = append(p.Series, plot.Series{Name: r.Config, Points: heldOver(r, res, step)})
		}
		panels = append(panels, p)
	}
	return plot.Chart{Title: "berth whatif", XLabel: "hours since the trace's start", Panels: panels}
}

// heldOver is, at each step, what the replay's ClusterQueues held of res,
// as a share of their nominal quota of it, in percent (none for a result
// without it: what was recorded).
func heldOver(r *Result, res string, step float64) []plot.Point {
	nominal := r.Nominal[res]
	if nominal <= 0 {
		return nil
	}
	var out []plot.Point
	held, i := 0.0, 0
	for t := 0.0; t <= r.End+step/2; t += step {
		for ; i < len(r.Held) && r.Held[i].At <= t; i++ {
			if r.Held[i].Resource == res {
				held = r.Held[i].Held
			}
		}
		out = append(out, plot.Point{X: t / 3600, Y: 100 * held / nominal})
	}
	return out
}

// waitingOver counts, at each step, the workloads that have arrived and
// are not yet admitted the first time.
func waitingOver(r *Result, step float64) []plot.Point {
	type edge struct {
		at    float64
		delta int
	}
	var edges []edge
	for _, o := range r.Workloads {
		edges = append(edges, edge{o.Arrival, 1}, edge{o.Arrival + o.Wait, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return a.delta - b.delta // an admission at the instant of an arrival first
	})
	var out []plot.Point
	n, i := 0, 0
	for t := 0.0; t <= r.End+step/2; t += step {
		for i < len(edges) && edges[i].at <= t {
			n += edges[i].delta
			i++
		}
		out = append(out, plot.Point{X: t / 3600, Y: float64(n)})
	}
	return out
}

// waitsOver is the mean wait of the workloads arriving in each step (none
// when none arrived), in hours.
func waitsOver(r *Result, step float64) []plot.Point {
	buckets := int(r.End/step) + 1
	sum, count := make([]float64, buckets), make([]int, buckets)
	for _, o := range r.Workloads {
		b := min(int(o.Arrival/step), buckets-1)
		sum[b] += o.Wait
		count[b]++
	}
	var out []plot.Point
	for b := range buckets {
		if count[b] > 0 {
			out = append(out, plot.Point{X: (float64(b) + 0.5) * step / 3600, Y: sum[b] / float64(count[b]) / 3600})
		}
	}
	return out
}
