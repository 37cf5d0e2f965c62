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

// Ops on the half types compute through float32 and keep their dtype, and
// so do their gradients: a small network's loss and gradients in
// bfloat16 and float16 agree with float32's within the types' precision.
func TestHalfGradientsKeepTheirDType(t *testing.T) {
	r := tensor.NewRNG(5)
	x32 := tensor.RandUniform(r, tensor.Float32, -1, 1, 4, 8)
	w32 := tensor.RandUniform(r, tensor.Float32, -0.5, 0.5, 8, 3)
	b32 := tensor.RandUniform(r, tensor.Float32, -0.5, 0.5, 3)
	net := func(x, w, b *tensor.Tensor) *tensor.Tensor {
		return ops.Mean(ops.Square(ops.Tanh(ops.FusedMatMul(x, w, b, ops.ReluActivation))))
	}
	grads := func(dt tensor.DType) []*tensor.Tensor {
		x, w, b := ops.Cast(x32, dt), ops.Cast(w32, dt), ops.Cast(b32, dt)
		tp := tape.New()
		tp.Watch(w, b)
		loss := net(x, w, b)
		g := tp.Gradient(loss, w, b)
		return []*tensor.Tensor{loss, g[0], g[1]}
	}
	want := grads(tensor.Float32)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		got := grads(dt)
		tol := map[tensor.DType]float64{tensor.BFloat16: 0x1p-5, tensor.Float16: 0x1p-8}[dt]
		for i, what := range []string{"loss", "weight gradient", "bias gradient"} {
			if got[i].DType() != dt {
				t.Fatalf("%v %s is %v", dt, what, got[i].DType())
			}
			diff(t, fmt.Sprintf("%v %s", dt, what), ops.Cast(got[i], tensor.Float32), want[i], tol)
		}
	}
}
