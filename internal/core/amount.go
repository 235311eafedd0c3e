package core

import (
	"math"
	"math/bits"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxAmount is the largest amount the core counts, in milli-units (about
// 9.2e15 units: 8 PiB of memory, 9.2 trillion cpus). A quantity, a product or
// a sum beyond it is MaxAmount: arithmetic saturates instead of wrapping
// around to a negative number that would pass every fit check. A quota of
// MaxAmount is therefore unlimited, and a request of MaxAmount fits nothing
// smaller.
const MaxAmount = math.MaxInt64

// maxMilliQuantity is MaxAmount as a Quantity, for comparisons.
var maxMilliQuantity = resource.NewMilliQuantity(MaxAmount, resource.DecimalSI)

// Milli converts a quantity to milli-units, saturating at ±MaxAmount
// (resource.Quantity's MilliValue wraps around instead).
func Milli(q resource.Quantity) int64 {
	if q.Cmp(*maxMilliQuantity) >= 0 {
		return MaxAmount
	}
	neg := q.DeepCopy()
	neg.Neg()
	if neg.Cmp(*maxMilliQuantity) >= 0 {
		return -MaxAmount
	}
	return q.MilliValue()
}

// AddAmounts returns a+b, saturating at ±MaxAmount.
func AddAmounts(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return MaxAmount
	case a < 0 && b < 0 && s >= 0:
		return -MaxAmount
	case s == math.MinInt64:
		return -MaxAmount
	}
	return s
}

// MulAmount returns a*n for n >= 0, saturating at ±MaxAmount.
func MulAmount(a, n int64) int64 {
	if a == 0 || n <= 0 {
		return 0
	}
	neg := a < 0
	if neg {
		a = -a
	}
	hi, lo := bits.Mul64(uint64(a), uint64(n))
	if hi != 0 || lo > MaxAmount {
		if neg {
			return -MaxAmount
		}
		return MaxAmount
	}
	if neg {
		return -int64(lo)
	}
	return int64(lo)
}
