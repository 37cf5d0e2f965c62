package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// FusedMatMul equals MatMul, Add and Relu as three ops, in value and in
// the gradients of all three inputs: both dtypes, both activations,
// shapes from a single row to ones the CPU splits across its workers,
// and an empty batch.
func TestFusedMatMulMatchesThreeOps(t *testing.T) {
	shapes := [][3]int{{1, 3, 4}, {5, 7, 2}, {64, 33, 17}, {256, 96, 48}, {0, 4, 3}}
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 2e-5}[dt]
		for i, s := range shapes {
			m, k, n := s[0], s[1], s[2]
			for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
				name := fmt.Sprintf("%v %v [%d %d]x[%d %d]", dt, act, m, k, k, n)
				rng := tensor.NewRNG(uint64(i + 3))
				x := tensor.RandUniform(rng, dt, -1, 1, m, k)
				w := tensor.RandUniform(rng, dt, -1, 1, k, n)
				b := tensor.RandUniform(rng, dt, -1, 1, n)
				three := func(x, w, b *tensor.Tensor) *tensor.Tensor {
					y := ops.Add(ops.MatMul(x, w), b)
					if act == ops.ReluActivation {
						y = ops.Relu(y)
					}
					return y
				}
				fused := func(x, w, b *tensor.Tensor) *tensor.Tensor { return ops.FusedMatMul(x, w, b, act) }
				var ys [2]*tensor.Tensor
				var grads [2][]*tensor.Tensor
				for j, fn := range []func(x, w, b *tensor.Tensor) *tensor.Tensor{three, fused} {
					tp := tape.New()
					tp.Watch(x, w, b)
					ys[j] = fn(x, w, b)
					// A weighted sum, so that every output's gradient differs.
					v := tensor.RandUniform(tensor.NewRNG(5), dt, -1, 1, m, n)
					grads[j] = tp.Gradient(ops.Sum(ops.Mul(ys[j], v)), x, w, b)
				}
				diff(t, name+" value", ys[1], ys[0], tol*float64(k))
				for j, what := range []string{"input", "weight", "bias"} {
					diff(t, name+" gradient of the "+what, grads[1][j], grads[0][j], tol*float64(max(m, k, 1)))
				}
			}
		}
	}
}

func TestFusedMatMulBadInputs(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 4, 3)
	w := tensor.Zeros(tensor.Float32, 3, 5)
	b := tensor.Zeros(tensor.Float32, 5)
	for _, c := range []struct {
		name string
		call func()
		kind error
		says string
	}{
		{"bias of the wrong length", func() { ops.FusedMatMul(x, w, tensor.Zeros(tensor.Float32, 3), ops.ReluActivation) }, tensor.ErrShape, "bias [3]"},
		{"bias a matrix", func() { ops.FusedMatMul(x, w, tensor.Zeros(tensor.Float32, 1, 5), ops.NoActivation) }, tensor.ErrRank, "vector bias"},
		{"input of rank 3", func() { ops.FusedMatMul(tensor.Zeros(tensor.Float32, 2, 4, 3), w, b, ops.NoActivation) }, tensor.ErrRank, "[2 4 3]"},
		{"contracting dimensions that differ", func() { ops.FusedMatMul(tensor.Zeros(tensor.Float32, 4, 2), w, b, ops.NoActivation) }, tensor.ErrShape, "2 and 3"},
		{"bias of another dtype", func() { ops.FusedMatMul(x, w, tensor.Zeros(tensor.Float64, 5), ops.NoActivation) }, tensor.ErrDType, ""},
		{"integer operands", func() {
			ops.FusedMatMul(tensor.Zeros(tensor.Int32, 4, 3), tensor.Zeros(tensor.Int32, 3, 5), tensor.Zeros(tensor.Int32, 5), ops.NoActivation)
		}, tensor.ErrDType, ""},
		{"unknown activation", func() { ops.FusedMatMul(x, w, b, ops.FusedActivation(9)) }, tensor.ErrAttr, "activation"},
		{"nil bias", func() { ops.FusedMatMul(x, w, nil, ops.NoActivation) }, tensor.ErrArity, "input 2 is nil"},
	} {
		err := tensor.Catch(c.call)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), "FusedMatMul") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming FusedMatMul and %q", c.name, err, c.kind, c.says)
		}
	}
}

// ScaledMatMul multiplies 8-bit floats exactly in float32, scales the sum
// once by both scales and rounds it once to out, on E4M3 and E5M2, and
// rejects what torch._scaled_mm rejects.
func TestScaledMatMul(t *testing.T) {
	r := tensor.NewRNG(8)
	a32 := tensor.RandNormal(r, tensor.Float32, 5, 16)
	b32 := tensor.RandNormal(r, tensor.Float32, 16, 3)
	sa, sb := tensor.Scalar(float32(0.5)), tensor.Scalar(float32(3))
	for _, dt := range []tensor.DType{tensor.Float8E4M3, tensor.Float8E5M2} {
		a, b := ops.Cast(a32, dt), ops.Cast(b32, dt)
		// The reference: the 8-bit values in float64, summed, scaled, then
		// rounded once.
		av, bv := tensor.ToSlice[float64](ops.Cast(a, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(b, tensor.Float64))
		for _, out := range []tensor.DType{tensor.Float32, tensor.BFloat16, tensor.Float16} {
			y := ops.ScaledMatMul(a, b, sa, sb, out)
			if y.DType() != out || !y.Shape().Equal(tensor.Shape{5, 3}) {
				t.Fatalf("%v -> %v: %s", dt, out, tensor.Describe(y))
			}
			got := tensor.ToSlice[float64](ops.Cast(y, tensor.Float64))
			for i := range 5 {
				for j := range 3 {
					s := 0.0
					for k := range 16 {
						s += av[16*i+k] * bv[3*k+j]
					}
					want := tensor.ToSlice[float64](ops.Cast(ops.Cast(tensor.Scalar(float32(s*1.5)), out), tensor.Float64))[0]
					if got[3*i+j] != want {
						t.Fatalf("%v -> %v: element [%d %d] %g, want %g", dt, out, i, j, got[3*i+j], want)
					}
				}
			}
		}
	}
	a, b := ops.Cast(a32, tensor.Float8E4M3), ops.Cast(b32, tensor.Float8E4M3)
	for _, c := range []struct {
		name string
		call func()
		kind error
		says string
	}{
		{"a vector", func() { ops.ScaledMatMul(ops.Reshape(a, -1), b, sa, sb, tensor.Float32) }, tensor.ErrRank, "matrices"},
		{"contraction", func() { ops.ScaledMatMul(b, b, sa, sb, tensor.Float32) }, tensor.ErrShape, "3 and 16"},
		{"a float64 scale", func() { ops.ScaledMatMul(a, b, tensor.Scalar(0.5), sb, tensor.Float32) }, tensor.ErrAttr, "float32 scalars"},
		{"a vector scale", func() { ops.ScaledMatMul(a, b, sa, tensor.FromSlice([]float32{1, 2}), tensor.Float32) }, tensor.ErrAttr, "float32 scalars"},
		{"an int32 out", func() { ops.ScaledMatMul(a, b, sa, sb, tensor.Int32) }, tensor.ErrAttr, "int32"},
		{"integer operands", func() { ops.ScaledMatMul(tensor.Zeros(tensor.Int32, 2, 2), b, sa, sb, tensor.Float32) }, tensor.ErrDType, "int32"},
		{"nil", func() { ops.ScaledMatMul(a, nil, sa, sb, tensor.Float32) }, tensor.ErrArity, "input 1 is nil"},
	} {
		err := tensor.Catch(c.call)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), "ScaledMatMul") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming ScaledMatMul and %q", c.name, err, c.kind, c.says)
		}
	}
}
