package admissionfairsharing

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultHalfLife         = time.Hour
	DefaultSamplingInterval = time.Minute
)

// Config is how consumption is measured, the same for every ClusterQueue.
type Config struct {
	// HalfLife: usage held this long ago counts half as much as now.
	HalfLife time.Duration
	// SamplingInterval: how often consumption takes in the usage held.
	SamplingInterval time.Duration
	// ResourceWeights multiply each resource's amount (in its units: cores,
	// bytes, devices) in a score; a resource not named weighs 1.
	ResourceWeights map[string]float64
}

// Default is the Config with its defaults.
func Default() Config {
	return Config{HalfLife: DefaultHalfLife, SamplingInterval: DefaultSamplingInterval}
}

// Validate says what is wrong with c, naming the flag that sets it.
func (c Config) Validate() error {
	switch {
	case c.HalfLife <= 0:
		return fmt.Errorf("--admission-fair-sharing-half-life %v: must be positive", c.HalfLife)
	case c.SamplingInterval <= 0:
		return fmt.Errorf("--admission-fair-sharing-sampling-interval %v: must be positive", c.SamplingInterval)
	}
	for _, r := range slices.Sorted(maps.Keys(c.ResourceWeights)) {
		if w := c.ResourceWeights[r]; w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return fmt.Errorf("--admission-fair-sharing-resource-weights %s=%v: must be a finite number, 0 or more", r, w)
		}
	}
	return nil
}

// ParseWeights reads resource weights written as "nvidia.com/gpu=10,cpu=1".
func ParseWeights(s string) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--admission-fair-sharing-resource-weights %q: %q is not resource=weight", s, kv)
		}
		w, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("--admission-fair-sharing-resource-weights %q: weight of %s %q is not a number", s, k, v)
		}
		out[k] = w
	}
	return out, nil
}

// Usage is an amount per resource name, in the resource's units.
type Usage map[string]float64

// Share is what one LocalQueue has consumed.
type Share struct {
	// Consumed is the decayed average of the usage it held, as of At.
	Consumed Usage
	// At is the last sample; zero before the first.
	At time.Time
	// Penalty is what the workloads admitted since At add until the next
	// sample takes them in.
	Penalty Usage
}

// alpha is how far a sample elapsed after the last moves consumption
// toward the usage held.
func (c Config) alpha(elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return 1 - math.Pow(0.5, elapsed.Seconds()/c.HalfLife.Seconds())
}

// Due reports whether s should be sampled at now.
func (c Config) Due(s Share, now time.Time) bool {
	return s.At.IsZero() || !now.Before(s.At.Add(c.SamplingInterval))
}

// Sample takes in held, the usage the LocalQueue's workloads hold at now,
// as held since the last sample (one SamplingInterval for the first), and
// drops the penalties: the usage held now counts what they stood for. A
// now before the last sample (a clock set back) only drops the penalties.
func (c Config) Sample(s Share, held Usage, now time.Time) Share {
	elapsed := c.SamplingInterval
	if !s.At.IsZero() {
		elapsed = now.Sub(s.At)
	}
	a := c.alpha(elapsed)
	out := Share{Consumed: Usage{}, At: now}
	if elapsed < 0 {
		out.At = s.At
	}
	for r, v := range s.Consumed {
		out.Consumed[r] = v * (1 - a)
	}
	for r, v := range held {
		out.Consumed[r] += v * a
	}
	for r, v := range out.Consumed {
		if v < 1e-9 {
			delete(out.Consumed, r) // decayed to nothing
		}
	}
	return out
}

// Enter adds the penalty of a workload admitted with requests: what it
// would add to consumption at the next sample.
func (c Config) Enter(s Share, requests Usage) Share {
	a := c.alpha(c.SamplingInterval)
	out := Share{Consumed: s.Consumed, At: s.At, Penalty: Usage{}}
	for r, v := range s.Penalty {
		out.Penalty[r] = v
	}
	for r, v := range requests {
		out.Penalty[r] += v * a
	}
	return out
}

// Score is s weighed by resource and divided by the LocalQueue's weight:
// lower goes sooner. A weight of 0 (or less) scores +Inf, after every
// LocalQueue with a weight.
func (c Config) Score(s Share, weight float64) float64 {
	if weight <= 0 {
		return math.Inf(1)
	}
	// In a fixed order: the same share always scores the same, to the bit.
	var sum float64
	for _, u := range []Usage{s.Consumed, s.Penalty} {
		for _, r := range slices.Sorted(maps.Keys(u)) {
			w, ok := c.ResourceWeights[r]
			if !ok {
				w = 1
			}
			sum += w * u[r]
		}
	}
	return sum / weight
}
