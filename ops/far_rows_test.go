package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// farRows are float32 rows of 1000 values spread over ±1 about offset,
// and the same numbers in float64.
func farRows(offset float64) (x32, x64 *tensor.Tensor) {
	x := ops.Add(tensor.RandUniform(tensor.NewRNG(3), tensor.Float64, -1, 1, 16, 1000), tensor.Scalar(offset))
	x32 = ops.Cast(x, tensor.Float32)
	return x32, ops.Cast(x32, tensor.Float64)
}

// Var and Std of float32 rows far from zero: the mean rounded to float32
// is off by up to half an ulp of the values, which the deviations carried
// (64000 ulps at 1e6 ± 1 before the refinement); now within 4 ulps of the
// float64 values of the same numbers.
func TestVarianceOfRowsFarFromZero(t *testing.T) {
	for _, offset := range []float64{0, 1e4, 1e6} {
		x32, x64 := farRows(offset)
		for _, f := range []struct {
			name string
			fn   func(*tensor.Tensor, ...int) *tensor.Tensor
		}{{"Var", ops.Var}, {"Std", ops.Std}} {
			got, want := tensor.ToSlice[float32](f.fn(x32, -1)), tensor.ToSlice[float64](f.fn(x64, -1))
			for i := range got {
				w := float32(want[i])
				if u := math.Abs(float64(got[i]-w)) / float64(math.Nextafter32(w, 1e30)-w); u > 4 {
					t.Errorf("%s of row %d about %g: %v, want %v (%.0f ulps)", f.name, i, offset, got[i], w, u)
				}
			}
		}
	}
}

// LayerNorm of float32 rows far from zero, its values and the gradient
// of a weighted sum: within 1e-6 of float64's (the deviations were off by
// the float32 mean's δ, 0.057 after the normalization at 1e6 ± 1 and 7e-3
// in the gradient).
func TestLayerNormOfRowsFarFromZero(t *testing.T) {
	w := tensor.RandUniform(tensor.NewRNG(4), tensor.Float64, -1, 1, 16, 1000)
	run := func(x, w *tensor.Tensor) (y, g []float64) {
		dt := x.DType()
		tp := tape.New()
		tp.Watch(x)
		out := ops.LayerNorm(x, tensor.FullOf(dt, 1.5, 1000), tensor.FullOf(dt, 0.5, 1000), 1e-5)
		dx := tp.Gradient(ops.Sum(ops.Mul(out, ops.Cast(w, dt))), x)[0]
		return tensor.ToSlice[float64](ops.Cast(out, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(dx, tensor.Float64))
	}
	for _, offset := range []float64{0, 1e4, 1e6} {
		x32, x64 := farRows(offset)
		y, g := run(x32, w)
		wy, wg := run(x64, w)
		for i := range y {
			if math.Abs(y[i]-wy[i]) > 1e-6 || math.Abs(g[i]-wg[i]) > 1e-6 {
				t.Fatalf("LayerNorm about %g, element %d: value %v, gradient %v; want %v, %v", offset, i, y[i], g[i], wy[i], wg[i])
			}
		}
	}
}
