package ops_test

import (
	"errors"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// TanhGrad and SigmoidGrad (the backward ops of Tanh and Sigmoid) against
// their definitions from y, and GeluTanhGrad and GeluGrad from x, in
// both float dtypes; their own gradients are checked from the
// conformance table's samples.
func TestOutputGradOps(t *testing.T) {
	cases := []struct {
		op   string
		want func(y, dy float64) float64
	}{
		{"TanhGrad", func(y, dy float64) float64 { return dy * (1 - y*y) }},
		{"SigmoidGrad", func(y, dy float64) float64 { return dy * y * (1 - y) }},
		{"GeluTanhGrad", func(x, dy float64) float64 { // from the input x
			const k, a = 0.7978845608028654, 0.044715
			t := math.Tanh(k * (x + a*x*x*x))
			return dy * (0.5*(1+t) + 0.5*x*(1-t*t)*k*(1+3*a*x*x))
		}},
		{"GeluGrad", func(x, dy float64) float64 { // Φ(x) + x·φ(x)
			return dy * (0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi))
		}},
	}
	for _, c := range cases {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			y, dy := ops.Cast(rnd(1, -1, 1, 3, 101), dt), ops.Cast(rnd(2, -2, 2, 3, 101), dt) // more than a block of 256
			got := tensor.ToSlice[float64](ops.Cast(eager.Run1(eager.Lookup(c.op), nil, y, dy), tensor.Float64))
			ys, ds := tensor.ToSlice[float64](ops.Cast(y, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(dy, tensor.Float64))
			want := make([]float64, len(ys))
			for i := range ys {
				want[i] = c.want(ys[i], ds[i])
			}
			tol := approx.Float64
			if dt == tensor.Float32 {
				tol = approx.Float32
			}
			if d := approx.Diff(got, want, tol); d != "" {
				t.Errorf("%s %v: %s", c.op, dt, d)
			}
		}
	}
}

func TestOutputGradOpsBadInputs(t *testing.T) {
	for _, op := range []string{"TanhGrad", "SigmoidGrad", "GeluTanhGrad", "GeluGrad"} {
		for _, c := range []struct {
			name  string
			y, dy *tensor.Tensor
			want  error
		}{
			{"shapes differ", rnd(1, -1, 1, 3), rnd(2, -1, 1, 4), tensor.ErrShape},
			{"dtypes differ", rnd(1, -1, 1, 3), ops.Cast(rnd(2, -1, 1, 3), tensor.Float32), tensor.ErrDType},
			{"integers", tensor.FromSlice([]int32{1, 2}), tensor.FromSlice([]int32{1, 2}), tensor.ErrDType},
		} {
			err := tensor.Catch(func() { eager.Run1(eager.Lookup(op), nil, c.y, c.dy) })
			if !errors.Is(err, c.want) {
				t.Errorf("%s, %s: error %v, want %v", op, c.name, err, c.want)
			}
		}
	}
}
