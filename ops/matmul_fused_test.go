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
