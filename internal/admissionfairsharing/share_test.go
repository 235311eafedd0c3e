package admissionfairsharing

import (
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// Usage held for one half-life counts half; none held for one halves what
// was consumed.
func TestSampleDecaysByHalfLife(t *testing.T) {
	c := Config{HalfLife: time.Hour, SamplingInterval: time.Minute}
	s := Share{At: t0}
	s = c.Sample(s, Usage{"cpu": 8}, t0.Add(time.Hour))
	if got := s.Consumed["cpu"]; !near(got, 4) {
		t.Fatalf("after a half-life holding 8 cpu: consumed %v, want 4", got)
	}
	s = c.Sample(s, nil, t0.Add(2*time.Hour))
	if got := s.Consumed["cpu"]; !near(got, 2) {
		t.Fatalf("after a half-life holding nothing: consumed %v, want 2", got)
	}
	// Sampled often, the same time gives the same result.
	f := Share{At: t0}
	for i := 1; i <= 60; i++ {
		f = c.Sample(f, Usage{"cpu": 8}, t0.Add(time.Duration(i)*time.Minute))
	}
	if got := f.Consumed["cpu"]; !near(got, 4) {
		t.Fatalf("sixty samples over a half-life: consumed %v, want 4", got)
	}
}

// An admission's penalty is what the next sample adds for it, and the
// sample drops it.
func TestEntryPenaltyIsWhatTheNextSampleTakesIn(t *testing.T) {
	c := Config{HalfLife: 10 * time.Minute, SamplingInterval: time.Minute}
	s := c.Sample(Share{}, nil, t0)
	s = c.Enter(s, Usage{"cpu": 4})
	s = c.Enter(s, Usage{"cpu": 2})
	before := c.Score(s, 1)
	s = c.Sample(s, Usage{"cpu": 6}, t0.Add(time.Minute))
	if len(s.Penalty) != 0 {
		t.Fatalf("penalty %v after a sample, want none", s.Penalty)
	}
	if after := c.Score(s, 1); !near(before, after) {
		t.Fatalf("score %v with penalties, %v once sampled: want the same", before, after)
	}
}

func TestScoreWeighsResourcesAndQueues(t *testing.T) {
	c := Config{HalfLife: time.Hour, SamplingInterval: time.Minute, ResourceWeights: map[string]float64{"nvidia.com/gpu": 10}}
	s := Share{Consumed: Usage{"cpu": 3, "nvidia.com/gpu": 1}, Penalty: Usage{"cpu": 1}}
	if got := c.Score(s, 1); !near(got, 14) {
		t.Fatalf("score %v, want 3+1 cpu + 10 x 1 gpu = 14", got)
	}
	if got := c.Score(s, 2); !near(got, 7) {
		t.Fatalf("weight 2: score %v, want 7", got)
	}
	if got := c.Score(s, 0); !math.IsInf(got, 1) {
		t.Fatalf("weight 0: score %v, want +Inf", got)
	}
}

// A clock set back does not make consumption grow or the sample time go
// back.
func TestSampleBeforeTheLastKeepsConsumption(t *testing.T) {
	c := Default()
	s := Share{Consumed: Usage{"cpu": 2}, At: t0, Penalty: Usage{"cpu": 1}}
	got := c.Sample(s, Usage{"cpu": 100}, t0.Add(-time.Minute))
	if !got.At.Equal(t0) || !near(got.Consumed["cpu"], 2) || len(got.Penalty) != 0 {
		t.Fatalf("sampled before its last sample: %+v", got)
	}
}

func TestConfigRefusesWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{HalfLife: 0, SamplingInterval: time.Minute}, "--admission-fair-sharing-half-life 0s: must be positive"},
		{Config{HalfLife: time.Hour, SamplingInterval: -time.Second}, "--admission-fair-sharing-sampling-interval -1s: must be positive"},
		{Config{HalfLife: time.Hour, SamplingInterval: time.Minute, ResourceWeights: map[string]float64{"cpu": -1}}, "cpu=-1: must be a finite number, 0 or more"},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, bad := range []string{"cpu", "=1", "cpu=x"} {
		if _, err := ParseWeights(bad); err == nil {
			t.Errorf("ParseWeights(%q): no error", bad)
		}
	}
	w, err := ParseWeights("nvidia.com/gpu=10, cpu=0.5")
	if err != nil || w["nvidia.com/gpu"] != 10 || w["cpu"] != 0.5 {
		t.Fatalf("ParseWeights: %v %v", w, err)
	}
}

// Whatever the samples, consumption stays between the least and the most
// usage ever held (a running average), and a score is never negative.
func FuzzSampleStaysWithinWhatWasHeld(f *testing.F) {
	f.Add([]byte{10, 0, 200, 3, 7}, int64(60), int64(3600))
	f.Fuzz(func(t *testing.T, held []byte, stepSeconds, halfLifeSeconds int64) {
		// Any step from a second to twelve days, any half-life from a
		// second to four months.
		stepSeconds = 1 + (stepSeconds%1_000_000+1_000_000)%1_000_000
		halfLifeSeconds = 1 + (halfLifeSeconds%10_000_000+10_000_000)%10_000_000
		c := Config{HalfLife: time.Duration(halfLifeSeconds) * time.Second, SamplingInterval: time.Minute}
		s := Share{}
		now := t0
		hi := 0.0
		for _, h := range held {
			now = now.Add(time.Duration(stepSeconds) * time.Second)
			hi = math.Max(hi, float64(h))
			s = c.Enter(s, Usage{"cpu": float64(h)})
			s = c.Sample(s, Usage{"cpu": float64(h)}, now)
			if got := s.Consumed["cpu"]; got < 0 || got > hi*(1+1e-9) {
				t.Fatalf("consumed %v after holding at most %v", got, hi)
			}
			if sc := c.Score(s, 1); sc < 0 || math.IsNaN(sc) {
				t.Fatalf("score %v", sc)
			}
		}
	})
}
