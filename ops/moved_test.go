package ops_test

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
)

// The deprecated in-place kernels still run backend/cpu's.
func TestMovedInPlaceKernels(t *testing.T) {
	dst, x := []float32{1, 2, 3}, []float32{10, 20, 30}
	ops.AxpyInPlace(dst, 0.5, x)
	if !slices.Equal(dst, []float32{6, 12, 18}) {
		t.Errorf("AxpyInPlace: %v", dst)
	}
	w, m, v, g := []float64{1}, []float64{0}, []float64{0}, []float64{2}
	ops.AdamInPlace(w, m, v, g, ops.AdamParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 0})
	// m = 0.2, v = 0.004; w -= 0.1 * (0.2/0.1) / sqrt(0.004/0.001) = 0.1
	near := func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
	if !near(m[0], 0.2) || !near(v[0], 0.004) || !near(w[0], 0.9) {
		t.Errorf("AdamInPlace: w %v m %v v %v", w, m, v)
	}
}
