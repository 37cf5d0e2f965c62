// Package approx compares floating-point results in tests: one NaN-aware
// absolute-or-relative rule with per-dtype default tolerances.
package approx

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/tensor"
)

// Default tolerances: a few ulps of accumulated rounding; for the half
// types, which compute in float32 and round once, one unit in the last
// place (two devices' float32 results may round either way).
const (
	Float32  = 1e-5
	Float64  = 1e-12
	BFloat16 = 0x1p-7
	Float16  = 0x1p-10
	// FP8GEMM is an FP8 GEMM's on the tensor cores, whatever its output
	// dtype: Hopper adds the products of one MMA step with about 14 bits
	// of mantissa (DeepSeek-V3's report, arXiv 2412.19437, section 3.3.2,
	// on the H800), so a float32 output is about 2^-15 of the products'
	// magnitude off the float32 sums (seen on an H200, 2026-11-28:
	// -0.3564 for -0.3586 over 48 products of [-4, 4]).
	FP8GEMM = 0x1p-7
	// HalfAttentionBF16 and HalfAttentionF16 are attention's in the half
	// types on another device: the GPU's flash kernels round the
	// probabilities (and their gradient) to the half type for the tensor
	// cores' products, as FlashAttention does, where the CPU computes
	// through float32: two units in the last place.
	HalfAttentionBF16 = 0x1p-6
	HalfAttentionF16  = 0x1p-9
)

// Tolerance returns the default tolerance for dt (0 for exact types).
func Tolerance(dt tensor.DType) float64 {
	switch dt {
	case tensor.Float32:
		return Float32
	case tensor.Float64:
		return Float64
	case tensor.BFloat16:
		return BFloat16
	case tensor.Float16:
		return Float16
	}
	return 0
}

// Close reports whether got and want agree within tol: |got-want| <=
// tol*max(1, |want|). NaN equals NaN; infinities must match exactly.
func Close(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// Diff returns "" when every element of got is Close to want, or a
// description of the first element that is not.
func Diff[T float32 | float64](got, want []T, tol float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if !Close(float64(got[i]), float64(want[i]), tol) {
			return fmt.Sprintf("element %d: got %v, want %v (tolerance %g)", i, got[i], want[i], tol)
		}
	}
	return ""
}
