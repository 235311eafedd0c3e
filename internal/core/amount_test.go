package core_test

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-dev/berth/internal/core"
	. "github.com/berth-dev/berth/internal/core/coretest"
)

func TestAmountArithmeticSaturates(t *testing.T) {
	const max = core.MaxAmount
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"small sum", core.AddAmounts(2, 3), 5},
		{"sum past the top", core.AddAmounts(max-1, 2), max},
		{"sum past the bottom", core.AddAmounts(-max, -2), -max},
		{"mixed signs never saturate", core.AddAmounts(max, -max), 0},
		{"small product", core.MulAmount(2000, 3), 6000},
		{"product past the top", core.MulAmount(1<<40, 1<<40), max},
		{"negative product past the bottom", core.MulAmount(-(1 << 40), 1<<40), -max},
		{"count zero", core.MulAmount(max, 0), 0},
		{"memory 1Pi times 10 pods", core.MulAmount(Milli("1Pi"), 10), max},
		{"quantity in range", core.Milli(resource.MustParse("1.5")), 1500},
		{"quantity past the top (MilliValue wraps)", core.Milli(resource.MustParse("16Ei")), max},
		{"quantity past the bottom", core.Milli(resource.MustParse("-16Ei")), -max},
		{"largest exact quantity", core.Milli(*resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)), max},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// A pod set whose total request does not fit in int64 milli-units must not
// wrap around to a negative amount that passes the fit check.
func TestHugeRequestsDoNotOverflowIntoAFit(t *testing.T) {
	runCycle(t, cycleCase{
		flavors: []core.Flavor{MakeFlavor("default").Obj()},
		cqs: []core.ClusterQueue{MakeClusterQueue("cq").ResourceGroup(
			MakeFlavorQuotas("default").Resource("memory", "1Ti").Obj()).Obj()},
		heads:     []*core.Workload{MakeWorkload("huge", "cq").PodSet("main", 10).Request("memory", "1Pi").Obj()},
		want:      map[string]string{"default/huge": "NoFit:needs more than 8Pi memory in flavor default, 1Ti free"},
		wantUsage: map[string]core.Usage{"cq": {}},
	})
}

// FormatQuantity writes small whole numbers itself, as a quantity would.
func TestFormatQuantityWritesWholeNumbersAsQuantities(t *testing.T) {
	for _, milli := range []int64{0, 1000, 7000, 999000, 1000000, 1500, 2500, 64 * 1000 * 1000} {
		if got, want := core.FormatQuantity("cpu", milli), resource.NewMilliQuantity(milli, resource.DecimalSI).String(); got != want {
			t.Errorf("FormatQuantity(cpu, %d) = %q, want %q", milli, got, want)
		}
	}
}
