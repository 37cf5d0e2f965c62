package trace_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// libraryOps are compositions across the library, each applied to x ([2 3
// 4 4] float32): chains the tracer fuses, broadcasting, reductions,
// structure, contractions, convolution and pooling, sorting. (Every
// registered op alone, traced and its gradient traced, is in the
// conformance table, internal/conformance.)
var libraryOps = []struct {
	name string
	fn   func(x T) T
}{
	{"Log1p|x|", func(x T) T { return ops.Log1p(ops.Abs(x)) }},
	{"Sqrt|x|", func(x T) T { return ops.Sqrt(ops.Abs(x)) }},
	{"Floor+x", func(x T) T { return ops.Add(ops.Floor(x), x) }},
	{"Add bcast", func(x T) T { return ops.Add(x, tensor.FromSlice([]float32{1, -2, 3, 0.5})) }},
	{"Sub", func(x T) T { return ops.Sub(ops.Exp(x), x) }},
	{"Mul", func(x T) T { return ops.Mul(x, ops.Cos(x)) }},
	{"Div", func(x T) T { return ops.Div(x, ops.Add(ops.Square(x), tensor.Scalar(float32(1)))) }},
	{"Max Min", func(x T) T {
		return ops.Minimum(ops.Maximum(x, tensor.Scalar(float32(-0.5))), tensor.Scalar(float32(0.7)))
	}},
	{"Pow", func(x T) T {
		return ops.Pow(ops.Add(ops.Abs(x), tensor.Scalar(float32(0.5))), tensor.Scalar(float32(1.5)))
	}},
	{"Select", func(x T) T { return ops.Where(ops.Gt(x, tensor.Scalar(float32(0))), ops.Square(x), ops.Neg(x)) }},
	{"Prod", func(x T) T { return ops.Prod(ops.Tanh(x), 3) }},
	{"Reshape Transpose", func(x T) T { return ops.Transpose(ops.Reshape(x, 6, 16), 1, 0) }},
	{"BroadcastTo", func(x T) T { return ops.BroadcastTo(ops.Sum(x, 0), 3, 3, 4, 4) }},
	{"Concatenate Slice", func(x T) T {
		return ops.Slice(ops.Concatenate(1, x, ops.Neg(x)), []int{0, 1, 0, 1}, []int{2, 5, 4, 4}, []int{1, 2, 1, 1})
	}},
	{"Pad", func(x T) T {
		return ops.Pad(x, tensor.Scalar(float32(0.25)), ops.PadDim{}, ops.PadDim{Low: 1}, ops.PadDim{High: 2}, ops.PadDim{Interior: 1})
	}},
	{"MatMul", func(x T) T { return ops.MatMul(ops.Reshape(x, 12, 8), ops.Transpose(ops.Reshape(x, 12, 8))) }},
	{"Conv2D NCHW", func(x T) T {
		return ops.Conv2D(x, ops.Reshape(ops.Slice(ops.Reshape(x, 96), []int{0}, []int{54}, []int{1}), 3, 3, 3, 2),
			ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW})
	}},
	{"MaxPool2D", func(x T) T {
		return ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}, Format: ops.NCHW})
	}},
	{"Sort", func(x T) T { return ops.Sort(x, 3, true) }},
	{"L2Normalize", func(x T) T { return ops.L2Normalize(x, 3, 1e-6) }},
	{"LogSumExp", func(x T) T { return ops.KeepDims(ops.LogSumExp, x, 1, 3) }},
	{"Var Std", func(x T) T { return ops.Add(ops.KeepDims(ops.Var, x, 0), ops.KeepDims(ops.Std, x, 2)) }},
	{"Tril Triu", func(x T) T { return ops.Add(ops.Tril(x, -1), ops.Triu(x, 2)) }},
	{"Einsum", func(x T) T { return ops.Einsum("abij,abkj->abik", x, ops.Sin(x)) }},
	{"Norm Roll", func(x T) T {
		return ops.Add(ops.Roll(x, 3, -1), ops.KeepDims(func(v T, d ...int) T { return ops.Norm(v, 3, d...) }, x, 1))
	}},
}

// Every op of libraryOps traced gives the eager values bitwise, and,
// differentiated by a tape inside the traced function, the eager gradient.
func TestTracedLibraryMatchesEager(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(21), tensor.Float32, 2, 3, 4, 4)
	x2 := tensor.RandNormal(tensor.NewRNG(22), tensor.Float32, 2, 3, 4, 4)
	for _, c := range libraryOps {
		value := func(a []T) []T { return []T{c.fn(a[0])} }
		grad := func(a []T) []T {
			tp := tape.New()
			tp.Watch(a[0])
			y := c.fn(a[0])
			return []T{tp.Gradient(ops.Sum(ops.Mul(y, y)), a[0])[0]}
		}
		fv, fg := trace.NewFunction(value), trace.NewFunction(grad)
		for i, in := range []T{x, x2} {
			got, err := fv.Call(in)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if want := value([]T{in})[0]; !slices.Equal(tensor.ToSlice[float32](got[0]), tensor.ToSlice[float32](want)) {
				t.Errorf("%s call %d: traced %v, eager %v", c.name, i, got[0], want)
			}
			gg, err := fg.Call(in)
			if err != nil {
				t.Fatalf("%s gradient: %v", c.name, err)
			}
			closeTo(t, fmt.Sprintf("%s gradient call %d", c.name, i), gg[0], grad([]T{in})[0], 1e-6)
		}
		if fv.Traces() != 1 || fg.Traces() != 1 {
			t.Errorf("%s: %d and %d traces", c.name, fv.Traces(), fg.Traces())
		}
	}
}
