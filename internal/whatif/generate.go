package whatif

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Recipe describes a made-up trace: a team mix, arrivals at a rate (in a
// daily pattern when Daily is set), run times and sizes, so that "what if
// load doubles" can be asked without a history.
type Recipe struct {
	// LocalQueues the workloads go to, "namespace/name", each with a share
	// of the arrivals (Weights, all 1 when nil).
	LocalQueues []string
	Weights     []float64
	Workloads   int
	// Rate is arrivals a second, on average (exponential gaps).
	Rate float64
	// Daily makes the rate follow a day: twice the average at midday,
	// none at midnight.
	Daily bool
	// RunMean is the mean run time in seconds (exponentially distributed,
	// at least a second).
	RunMean float64
	// PodsMin and PodsMax bound the pods of a workload (uniform), each
	// asking for CPU (a quantity) and, if set, Memory.
	PodsMin, PodsMax int32
	CPU, Memory      string
	// Priorities to pick from, uniformly; 0 alone when empty.
	Priorities []int32
	Seed       uint64
}

// Generate makes the workloads of a recipe, the same for the same seed.
func Generate(r Recipe) ([]Workload, error) {
	switch {
	case len(r.LocalQueues) == 0:
		return nil, errors.New("local queues: at least one, as namespace/name")
	case r.Weights != nil && len(r.Weights) != len(r.LocalQueues):
		return nil, fmt.Errorf("weights: %d for %d local queues", len(r.Weights), len(r.LocalQueues))
	case r.Workloads < 1:
		return nil, errors.New("workloads: at least 1")
	case r.Rate <= 0 || math.IsInf(r.Rate, 0) || math.IsNaN(r.Rate):
		return nil, errors.New("rate: a positive number of arrivals a second")
	case r.RunMean <= 0:
		return nil, errors.New("run mean: a positive number of seconds")
	case r.PodsMin < 1 || r.PodsMax < r.PodsMin:
		return nil, fmt.Errorf("pods: %d to %d; want at least 1, the most no fewer than the least", r.PodsMin, r.PodsMax)
	case r.CPU == "":
		return nil, errors.New("cpu: what each pod asks for")
	}
	type lq struct{ ns, name string }
	var lqs []lq
	for _, s := range r.LocalQueues {
		ns, name, ok := strings.Cut(s, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("local queue %q: want namespace/name", s)
		}
		lqs = append(lqs, lq{ns, name})
	}
	weights := r.Weights
	if weights == nil {
		weights = make([]float64, len(lqs))
		for i := range weights {
			weights[i] = 1
		}
	}
	total := 0.0
	for i, w := range weights {
		if w < 0 {
			return nil, fmt.Errorf("weights[%d]: %v is negative", i, w)
		}
		total += w
	}
	if total == 0 {
		return nil, errors.New("weights: all zero")
	}
	rng := rand.New(rand.NewPCG(r.Seed, r.Seed^0x9e3779b97f4a7c15))
	requests := map[string]string{"cpu": r.CPU}
	if r.Memory != "" {
		requests["memory"] = r.Memory
	}
	out := make([]Workload, 0, r.Workloads)
	t := 0.0
	for i := range r.Workloads {
		// Thinning: draw at the peak rate, keep each arrival with the
		// day's rate at its time over the peak.
		for {
			peak := r.Rate
			if r.Daily {
				peak = 2 * r.Rate
			}
			t += rng.ExpFloat64() / peak
			if !r.Daily || rng.Float64() < (1-math.Cos(2*math.Pi*t/86400))/2 {
				break
			}
		}
		pick := rng.Float64() * total
		k := 0
		for ; k < len(weights)-1 && pick >= weights[k]; k++ {
			pick -= weights[k]
		}
		var prio int32
		if len(r.Priorities) > 0 {
			prio = r.Priorities[rng.IntN(len(r.Priorities))]
		}
		pods := r.PodsMin + int32(rng.IntN(int(r.PodsMax-r.PodsMin)+1))
		out = append(out, Workload{Name: fmt.Sprintf("w%d", i), Namespace: lqs[k].ns, LocalQueue: lqs[k].name, Priority: prio,
			Arrival: math.Round(t*1000) / 1000, Run: math.Max(1, math.Round(rng.ExpFloat64()*r.RunMean)),
			PodSets: []PodSet{{Name: "main", Count: pods, Requests: requests}}})
	}
	return out, nil
}
