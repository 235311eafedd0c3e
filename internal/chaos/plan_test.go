package chaos_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/chaos"
)

func TestPlanIsReplayableAndFair(t *testing.T) {
	a := chaos.Plan(42, chaos.Components, 10, time.Minute)
	b := chaos.Plan(42, chaos.Components, 10, time.Minute)
	c := chaos.Plan(43, chaos.Components, 10, time.Minute)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed 42 twice:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 42 and 43 gave the same plan %v", a)
	}
	count := map[string]int{}
	for i, f := range a {
		count[f.Component]++
		if f.At < 0 || f.At > time.Minute || (i > 0 && f.At < a[i-1].At) {
			t.Errorf("fault %d at %v: want within the minute, in order", i, f.At)
		}
	}
	for _, k := range chaos.Components {
		if count[k] < 2 || count[k] > 3 {
			t.Errorf("%s killed %d times of 10; want its share, 2 or 3", k, count[k])
		}
	}
	if !slices.ContainsFunc(a, func(f chaos.Fault) bool { return f.Component == "berth-sim" }) {
		t.Error("the simulator is never killed")
	}
}
