package ops_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func rnd(seed uint64, lo, hi float64, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(tensor.NewRNG(seed), tensor.Float64, lo, hi, shape...)
}

type T = *tensor.Tensor

// Every differentiable op, checked against finite differences in float64.
func TestGradients(t *testing.T) {
	cases := []gradCase{
		{"Add broadcast", func(x []T) T { return ops.Add(x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 3)}},
		{"Sub broadcast col", func(x []T) T { return ops.Sub(x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 2, 1)}},
		{"Mul outer", func(x []T) T { return ops.Mul(x[0], x[1]) }, []T{rnd(1, -1, 1, 4, 1), rnd(2, -1, 1, 1, 3)}},
		{"Div", func(x []T) T { return ops.Div(x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, 0.5, 2, 3)}},
		{"Rem", func(x []T) T { return ops.Rem(x[0], x[1]) }, []T{rnd(1, 1.1, 2.9, 5), rnd(2, 0.7, 0.9, 5)}},
		{"Max", func(x []T) T { return ops.Max(x[0], x[1]) }, []T{rnd(1, -1, 1, 6), rnd(2, -1, 1, 6)}},
		{"Min", func(x []T) T { return ops.Min(x[0], x[1]) }, []T{rnd(1, -1, 1, 6), rnd(2, -1, 1, 6)}},
		{"Pow", func(x []T) T { return ops.Pow(x[0], x[1]) }, []T{rnd(1, 0.5, 2, 4), rnd(2, -2, 2, 4)}},
		{"BroadcastDims", func(x []T) T { return ops.BroadcastDims(ops.Mul, x[0], x[1], 0) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 2)}},
		{"Neg", func(x []T) T { return ops.Neg(x[0]) }, []T{rnd(1, -1, 1, 5)}},
		{"Abs", func(x []T) T { return ops.Abs(x[0]) }, []T{rnd(1, 0.1, 1, 5)}},
		{"Sign", func(x []T) T { return ops.Mul(ops.Sign(x[0]), x[0]) }, []T{rnd(1, 0.1, 1, 5)}},
		{"Square", func(x []T) T { return ops.Square(x[0]) }, []T{rnd(1, -1, 1, 5)}},
		{"Relu", func(x []T) T { return ops.Relu(x[0]) }, []T{rnd(1, -1, 1, 9)}},
		// Relu's backward (the ReluGrad op) differentiated again, in dy.
		{"ReluGrad", func(x []T) T {
			inner := tape.New()
			inner.Watch(x[0])
			y := ops.Sum(ops.Mul(ops.Relu(x[0]), x[1]))
			inner.Stop()
			return inner.Gradient(y, x[0])[0]
		}, []T{rnd(1, -1, 1, 9), rnd(2, -1, 1, 9)}},
		{"Exp", func(x []T) T { return ops.Exp(x[0]) }, []T{rnd(1, -1, 1, 5)}},
		{"Log", func(x []T) T { return ops.Log(x[0]) }, []T{rnd(1, 0.5, 2, 5)}},
		{"Sqrt", func(x []T) T { return ops.Sqrt(x[0]) }, []T{rnd(1, 0.5, 2, 5)}},
		{"Rsqrt", func(x []T) T { return ops.Rsqrt(x[0]) }, []T{rnd(1, 0.5, 2, 5)}},
		{"Tanh", func(x []T) T { return ops.Tanh(x[0]) }, []T{rnd(1, -2, 2, 5)}},
		{"Sigmoid", func(x []T) T { return ops.Sigmoid(x[0]) }, []T{rnd(1, -4, 4, 5)}},
		{"Identity", func(x []T) T { return ops.Identity(x[0]) }, []T{rnd(1, -1, 1, 3)}},
		{"Select", func(x []T) T { return ops.Select(ops.Gt(x[0], x[1]), x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 3)}},
		{"Cast", func(x []T) T {
			return ops.Cast(ops.Mul(ops.Cast(x[0], tensor.Float32), ops.Cast(x[0], tensor.Float32)), tensor.Float64)
		},
			[]T{rnd(1, -1, 1, 3)}},
		{"Reshape", func(x []T) T { return ops.Reshape(x[0], 3, -1) }, []T{rnd(1, -1, 1, 2, 3)}},
		{"Transpose", func(x []T) T { return ops.Mul(ops.Transpose(x[0], 2, 0, 1), x[1]) }, []T{rnd(1, -1, 1, 2, 3, 4), rnd(2, -1, 1, 4, 2, 3)}},
		{"BroadcastTo", func(x []T) T { return ops.BroadcastTo(x[0], 2, 3, 4) }, []T{rnd(1, -1, 1, 3, 1)}},
		{"Slice strided", func(x []T) T { return ops.Slice(x[0], []int{1, 0}, []int{5, 4}, []int{2, 3}) }, []T{rnd(1, -1, 1, 6, 5)}},
		{"Pad interior negative", func(x []T) T {
			return ops.Pad(x[0], x[1], ops.PadDim{Low: -1, High: 2, Interior: 1}, ops.PadDim{Low: 1, High: -1, Interior: 2})
		}, []T{rnd(1, -1, 1, 3, 4), rnd(2, -1, 1)}},
		{"Concatenate", func(x []T) T { return ops.Concatenate(1, x[0], x[1], x[0]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 2, 1)}},
		{"Sum dims", func(x []T) T { return ops.Sum(x[0], 0, 2) }, []T{rnd(1, -1, 1, 2, 3, 4)}},
		{"Sum all", func(x []T) T { return ops.Sum(x[0]) }, []T{rnd(1, -1, 1, 2, 3)}},
		{"Mean keep", func(x []T) T {
			return ops.Reduce(x[0], ops.Reduction{Kind: ops.ReduceMean, Dims: []int{1}, KeepDims: true})
		}, []T{rnd(1, -1, 1, 2, 3, 2)}},
		{"ReduceMax", func(x []T) T { return ops.ReduceMaxOf(x[0], 1) }, []T{rnd(1, -1, 1, 3, 4)}},
		{"ReduceMin", func(x []T) T { return ops.ReduceMinOf(x[0], 0, 1) }, []T{rnd(1, -1, 1, 3, 4, 2)}},
		{"Prod", func(x []T) T { return ops.Prod(x[0], 1) }, []T{rnd(1, 0.5, 1.5, 3, 4)}},
		{"Prod with zero", func(x []T) T {
			return ops.Prod(ops.Mul(x[0], tensor.FromSlice([]float64{1, 0, 1, 1, 1, 1, 0, 0}, 2, 4)), 1)
		}, []T{rnd(1, 0.5, 1.5, 2, 4)}},
		{"MatMul", func(x []T) T { return ops.MatMul(x[0], x[1]) }, []T{rnd(1, -1, 1, 3, 4), rnd(2, -1, 1, 4, 5)}},
		{"MatMul TA", func(x []T) T { return ops.MatMulT(x[0], x[1], true, false) }, []T{rnd(1, -1, 1, 4, 3), rnd(2, -1, 1, 4, 5)}},
		{"MatMul TB", func(x []T) T { return ops.MatMulT(x[0], x[1], false, true) }, []T{rnd(1, -1, 1, 3, 4), rnd(2, -1, 1, 5, 4)}},
		{"MatMul TATB", func(x []T) T { return ops.MatMulT(x[0], x[1], true, true) }, []T{rnd(1, -1, 1, 4, 3), rnd(2, -1, 1, 5, 4)}},
		{"MatMul batched", func(x []T) T { return ops.MatMul(x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3, 4), rnd(2, -1, 1, 2, 4, 2)}},
		{"MatMul shared b", func(x []T) T { return ops.MatMul(x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3, 4), rnd(2, -1, 1, 4, 2)}},
		// A batched operand transposed against a rank-2 one, either side
		// (the rules' products put the rank-2 operand on the left).
		{"MatMul batched TA shared b", func(x []T) T { return ops.MatMulT(x[0], x[1], true, false) }, []T{rnd(1, -1, 1, 2, 3, 4), rnd(2, -1, 1, 3, 5)}},
		{"MatMul batched TATB shared b", func(x []T) T { return ops.MatMulT(x[0], x[1], true, true) }, []T{rnd(1, -1, 1, 2, 3, 4), rnd(2, -1, 1, 5, 3)}},
		{"MatMul batched TB shared b", func(x []T) T { return ops.MatMulT(x[0], x[1], false, true) }, []T{rnd(1, -1, 1, 2, 4, 3), rnd(2, -1, 1, 5, 3)}},
		{"MatMul shared a", func(x []T) T { return ops.MatMul(x[0], x[1]) }, []T{rnd(1, -1, 1, 3, 4), rnd(2, -1, 1, 2, 4, 2)}},
		{"MatMul shared a TATB", func(x []T) T { return ops.MatMulT(x[0], x[1], true, true) }, []T{rnd(1, -1, 1, 4, 3), rnd(2, -1, 1, 2, 2, 4)}},
		{"LogSoftmax", func(x []T) T { return ops.LogSoftmax(x[0], -1) }, []T{rnd(1, -2, 2, 3, 4)}},
		{"LogSoftmax axis 0", func(x []T) T { return ops.LogSoftmax(x[0], 0) }, []T{rnd(1, -2, 2, 3, 4)}},
		{"Softmax", func(x []T) T { return ops.Softmax(x[0], -1) }, []T{rnd(1, -2, 2, 3, 4)}},
		{"Softmax axis 0", func(x []T) T { return ops.Softmax(x[0], 0) }, []T{rnd(1, -2, 2, 3, 4)}},
		{"SoftmaxCrossEntropy", func(x []T) T { return ops.SoftmaxCrossEntropy(x[0], ops.Softmax(x[1], -1)) },
			[]T{rnd(1, -2, 2, 3, 4), rnd(2, -2, 2, 3, 4)}},
		{"SparseSoftmaxCrossEntropy", func(x []T) T {
			return ops.SparseSoftmaxCrossEntropy(x[0], tensor.FromSlice([]int64{3, 0, 1}))
		}, []T{rnd(1, -2, 2, 3, 4)}},
	}
	// Through float32 only a large step is meaningful (x*x is exact under
	// it), and the analytic side carries float32 rounding.
	steps := map[string]float64{"Cast": 1e-2}
	tols := map[string]float64{"Cast": approx.Float32}
	runGradients(t, cases, steps, tols)
}

// Non-differentiable ops block gradients rather than give silent zeros.
func TestNonDifferentiableOpsBlock(t *testing.T) {
	x := rnd(1, -1, 1, 3)
	tp := tape.New(tape.Options{Persistent: true})
	tp.Watch(x)
	for name, y := range map[string]T{
		"StopGradient": ops.StopGradient(x),
		"Cast to int":  ops.Cast(ops.Cast(x, tensor.Int32), tensor.Float64),
		"Eq":           ops.Cast(ops.Eq(x, x), tensor.Float64),
	} {
		if g := tp.Gradient(ops.Sum(y), x)[0]; g != nil {
			t.Errorf("%s: gradient %v, want nil", name, g)
		}
	}
}
