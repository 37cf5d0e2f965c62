package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Wrong answers that independent checks against PyTorch found; each test
// pins the fix.

// Softplus's gradient is sigmoid(x): 1/2 at exactly 0, where the composed
// form (Relu + log1p(e^-|x|)) gave 0 (Relu' and Abs' are 0 there).
func TestSoftplusGradientAtZero(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		x := ops.Cast(tensor.FromSlice([]float64{0, -0.0, 2, -3}), dt)
		tp := tape.New()
		tp.Watch(x)
		g := tensor.ToSlice[float64](ops.Cast(tp.Gradient(ops.Sum(ops.Softplus(x)), x)[0], tensor.Float64))
		want := []float64{0.5, 0.5, 1 / (1 + math.Exp(-2)), 1 / (1 + math.Exp(3))}
		for i := range want {
			if math.Abs(g[i]-want[i]) > 1e-7 {
				t.Errorf("%v: softplus'(%v) = %v, want %v", dt, []float64{0, -0.0, 2, -3}[i], g[i], want[i])
			}
		}
	}
}

// Relu propagates NaN (float32 through the vector kernel and the Go loop,
// float64), as the package documents for every op.
func TestReluPropagatesNaN(t *testing.T) {
	nan := math.NaN()
	in := []float64{nan, -1, 0, 2, nan, -0.0, 3, nan, nan, -2, 1} // past one vector of 8
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		got := tensor.ToSlice[float64](ops.Cast(ops.Relu(ops.Cast(tensor.FromSlice(in), dt)), tensor.Float64))
		for i, v := range in {
			want := math.Max(v, 0)
			if math.IsNaN(v) {
				if !math.IsNaN(got[i]) {
					t.Errorf("%v: Relu(NaN) = %v", dt, got[i])
				}
				continue
			}
			if got[i] != want || math.Signbit(got[i]) {
				t.Errorf("%v: Relu(%v) = %v, want %v", dt, v, got[i], want)
			}
		}
	}
}
