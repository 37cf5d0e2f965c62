package ops_test

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A gradient flows through casts to and from the half types: each Cast's
// gradient casts back, so it arrives rounded to the half type.
func TestGradientThroughHalfCasts(t *testing.T) {
	for _, h := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		x := tensor.FromSlice([]float64{1.5, -0.25, 3})
		w := tensor.FromSlice([]float64{0.1, 1000.3, -7.7})
		tp := tape.New()
		tp.Watch(x)
		y := ops.Cast(ops.Cast(x, h), tensor.Float64)
		g := tp.Gradient(ops.Sum(ops.Mul(y, w)), x)[0]
		want := ops.Cast(ops.Cast(w, h), tensor.Float64)
		diff(t, fmt.Sprintf("through %v", h), g, want, 0)
		if got := tensor.ToSlice[float64](y); got[0] != 1.5 || got[2] != 3 {
			t.Errorf("%v round trip of exact values: %v", h, got)
		}
	}
}
