package ops_test

import (
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// SumOfSquares sums every element's square of every tensor (float32 in
// float64, rounded once; the half types through float32; a transposed
// view as its elements), and its gradient is 2·x·dy; ScaleEach multiplies
// each tensor by the scale as Mul does, differentiable in both; both
// refuse what they cannot take.
func TestSumOfSquaresAndScaleEach(t *testing.T) {
	a := tensor.FromSlice([]float64{1, -2, 3, 4, 0.5, -0.25}, 2, 3)
	b := tensor.FromSlice([]float64{2})
	e := tensor.Zeros(tensor.Float64, 0, 3)
	if got := ops.SumOfSquares(a, b, e, ops.Transpose(a, 1, 0)).Float(); got != 2*(1+4+9+16+0.25+0.0625)+4 {
		t.Errorf("SumOfSquares: %v", got)
	}
	f := []float32{1e8, 1, -1e8, 3}
	if got, want := ops.SumOfSquares(tensor.FromSlice(f)).Float(), float64(float32(2e16+10)); got != want {
		t.Errorf("float32 SumOfSquares: %v, want %v (summed in float64)", got, want)
	}
	s := tensor.Scalar(1.5)
	out := ops.ScaleEach(s, a, b, e)
	for i, x := range []*tensor.Tensor{a, b, e} {
		if want := ops.Mul(x, s); !out[i].Shape().Equal(x.Shape()) || !slices.Equal(tensor.ToSlice[float64](out[i]), tensor.ToSlice[float64](want)) {
			t.Errorf("ScaleEach output %d: %v, want %v", i, out[i], want)
		}
	}
	x32 := tensor.FromSlice([]float32{0.1, 0.7, -3.3})
	if got, want := tensor.ToSlice[float32](ops.ScaleEach(tensor.Scalar(float32(1/3.0)), x32)[0]), tensor.ToSlice[float32](ops.Mul(x32, tensor.Scalar(float32(1/3.0)))); !slices.Equal(got, want) {
		t.Errorf("float32 ScaleEach %v, Mul %v", got, want)
	}
	runGradients(t, []gradCase{
		{"SumOfSquares", func(x []T) T { return ops.SumOfSquares(x[0], x[1]) }, []T{a, b}},
		{"ScaleEach", func(x []T) T {
			ys := ops.ScaleEach(x[0], x[1], x[2])
			return ops.Add(ops.Sum(ops.Mul(ys[0], ys[0])), ops.Sum(ys[1]))
		}, []T{tensor.Scalar(0.7), a, b}},
	}, nil, nil)
	i32 := tensor.FromSlice([]int32{1, 2})
	runBadInput(t, []badInput{
		{"SumOfSquares of nothing", func() { ops.SumOfSquares() }, tensor.ErrArity, "one or more"},
		{"SumOfSquares of mixed dtypes", func() { ops.SumOfSquares(a, ops.Cast(b, tensor.Float32)) }, tensor.ErrDType, ""},
		{"SumOfSquares of integers", func() { ops.SumOfSquares(i32) }, tensor.ErrDType, ""},
		{"ScaleEach of nothing", func() { ops.ScaleEach(s) }, tensor.ErrArity, "one or more"},
		{"ScaleEach by a vector", func() { ops.ScaleEach(b, a) }, tensor.ErrRank, "scalar"},
		{"ScaleEach of mixed dtypes", func() { ops.ScaleEach(ops.ScalarLike(a, 1.5), ops.Cast(a, tensor.Float32)) }, tensor.ErrDType, ""},
		{"ScaleEach of a nil tensor", func() { ops.ScaleEach(s, a, nil) }, tensor.ErrArity, "nil"},
	})
	// The half types through float32: the sum, and each product, rounded
	// once to the dtype, as the float32 ops' results cast.
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		h := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, dt) }
		w := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(h(x), tensor.Float32) }
		xs := []*tensor.Tensor{tensor.FromSlice([]float32{0.3, -1.7, 2.9}), tensor.FromSlice([]float32{5.5, 0.01}, 2, 1)}
		got := ops.SumOfSquares(h(xs[0]), h(xs[1]))
		if want := h(ops.SumOfSquares(w(xs[0]), w(xs[1]))); got.DType() != dt || got.Float() != want.Float() {
			t.Errorf("%v SumOfSquares: %v, want %v", dt, got, want)
		}
		scaled := ops.ScaleEach(h(tensor.Scalar(float32(0.37))), h(xs[0]), h(xs[1]))
		for i, x := range xs {
			want := h(ops.Mul(w(x), w(tensor.Scalar(float32(0.37)))))
			if scaled[i].DType() != dt || !slices.Equal(scaled[i].HostBytes(), want.HostBytes()) {
				t.Errorf("%v ScaleEach output %d: %v, want %v", dt, i, scaled[i], want)
			}
		}
	}
	if math.IsNaN(ops.SumOfSquares(tensor.FromSlice([]float64{math.Inf(1)})).Float()) {
		t.Error("the square of an infinity summed to NaN")
	}
}

// SumOfSquaresAs rounds the sum once to the dtype asked for: half inputs'
// to float32 as the float32 sum of their widenings (no half rounding),
// float32 inputs' to float64 unrounded; its gradient is SumOfSquares';
// a narrower dtype is refused.
func TestSumOfSquaresAs(t *testing.T) {
	xs := []*tensor.Tensor{tensor.FromSlice([]float32{0.3, -1.7, 2.9, 1e-3}), tensor.FromSlice([]float32{5.5, 0.01}, 2, 1)}
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		h := []*tensor.Tensor{ops.Cast(xs[0], dt), ops.Cast(xs[1], dt)}
		w := []*tensor.Tensor{ops.Cast(h[0], tensor.Float32), ops.Cast(h[1], tensor.Float32)}
		got, want := ops.SumOfSquaresAs(tensor.Float32, h...), ops.SumOfSquares(w...)
		if got.DType() != tensor.Float32 || got.Float() != want.Float() {
			t.Errorf("%v as float32: %v, want %v", dt, got, want)
		}
		if got.Float() == ops.SumOfSquares(h...).Float() {
			t.Errorf("%v as float32 equals the sum rounded to %v (%v): the test cannot tell them apart", dt, dt, got)
		}
		if got := ops.SumOfSquaresAs(tensor.Float64, h...); got.DType() != tensor.Float64 || got.Float() != ops.SumOfSquares(ops.Cast(w[0], tensor.Float64), ops.Cast(w[1], tensor.Float64)).Float() {
			t.Errorf("%v as float64: %v", dt, got)
		}
		if got := ops.SumOfSquaresAs(dt, h...); got.DType() != dt || got.Float() != ops.SumOfSquares(h...).Float() {
			t.Errorf("%v as itself: %v", dt, got)
		}
	}
	f := tensor.FromSlice([]float32{1e8, 1, -1e8, 3})
	if got := ops.SumOfSquaresAs(tensor.Float64, f); got.DType() != tensor.Float64 || got.Float() != 2e16+10 {
		t.Errorf("float32 as float64: %v, want 2e16+10 unrounded", got)
	}
	a := tensor.FromSlice([]float64{1, -2, 3, 4, 0.5, -0.25}, 2, 3)
	b := tensor.FromSlice([]float32{2, -0.5})
	runGradients(t, []gradCase{
		{"SumOfSquaresAs", func(x []T) T { return ops.SumOfSquaresAs(tensor.Float64, x[0], x[1]) }, []T{a, ops.Cast(b, tensor.Float64)}},
	}, nil, nil)
	// float32 inputs, a float64 sum: dy rounded to float32, 2·x·dy.
	tp := tape.New(tape.Options{})
	tp.Watch(b)
	sum := ops.SumOfSquaresAs(tensor.Float64, b)
	dx := tp.Gradient(sum, b)
	tp.Stop()
	if dx[0].DType() != tensor.Float32 || !slices.Equal(tensor.ToSlice[float32](dx[0]), []float32{4, -1}) {
		t.Errorf("the float32 input's gradient: %v, want [4 -1] float32", dx[0])
	}
	runBadInput(t, []badInput{
		{"SumOfSquaresAs of nothing", func() { ops.SumOfSquaresAs(tensor.Float32) }, tensor.ErrArity, "one or more"},
		{"SumOfSquaresAs narrower", func() { ops.SumOfSquaresAs(tensor.Float32, a) }, tensor.ErrDType, "float64"},
		{"SumOfSquaresAs a half type", func() { ops.SumOfSquaresAs(tensor.BFloat16, b) }, tensor.ErrDType, "bfloat16"},
		{"SumOfSquaresAs as an integer", func() { ops.SumOfSquaresAs(tensor.Int32, b) }, tensor.ErrDType, "int32"},
		{"SumOfSquaresAs of a nil tensor", func() { ops.SumOfSquaresAs(tensor.Float32, b, nil) }, tensor.ErrArity, "nil"},
	})
}

// SumOfSquares of a transposed view is its row-major copy's, bit for bit
// (summed in the buffer's order, the two differed in the last bit: an
// eager call and its trace, which copies the view, disagreed).
func TestSumOfSquaresIgnoresLayout(t *testing.T) {
	for seed := range uint64(8) {
		x := tensor.RandUniform(tensor.NewRNG(seed), tensor.Float64, -2, 2, 37, 53)
		view := ops.Transpose(x, 1, 0)
		copied := ops.Add(view, ops.ZerosLike(view)) // row-major
		a := tensor.ToSlice[float64](ops.SumOfSquares(view, x))[0]
		b := tensor.ToSlice[float64](ops.SumOfSquares(copied, x))[0]
		if a != b {
			t.Fatalf("seed %d: the view's sum %v, its copy's %v", seed, a, b)
		}
	}
}
