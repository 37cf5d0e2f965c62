package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func TestLogSumExp(t *testing.T) {
	inf := math.Inf(1)
	x := tensor.FromSlice([]float64{1, 2, 3, 1000, 1000, -1000}, 2, 3)
	lse := func(v ...float64) float64 {
		s := 0.0
		for _, e := range v {
			s += math.Exp(e)
		}
		return math.Log(s)
	}
	check(t, "rows", ops.LogSumExp(x, 1), tensor.Shape{2}, []float64{lse(1, 2, 3), 1000 + math.Log(2)})
	check(t, "negative dim", ops.LogSumExp(x, -1), tensor.Shape{2}, []float64{lse(1, 2, 3), 1000 + math.Log(2)})
	check(t, "columns", ops.LogSumExp(x, 0), tensor.Shape{3}, []float64{1000, 1000, 3})
	check(t, "all", ops.LogSumExp(x), tensor.Shape{}, []float64{1000 + math.Log(2)})
	check(t, "kept", ops.KeepDims(ops.LogSumExp, x, 1), tensor.Shape{2, 1}, []float64{lse(1, 2, 3), 1000 + math.Log(2)})
	special := tensor.FromSlice([]float64{math.Inf(-1), math.Inf(-1), 0, inf, 5, math.Inf(-1), 1, math.NaN()}, 4, 2)
	check(t, "infinities and NaN", ops.LogSumExp(special, 1), tensor.Shape{4}, []float64{math.Inf(-1), inf, 5, math.NaN()})
	check(t, "empty", ops.LogSumExp(tensor.Zeros(tensor.Float64, 2, 0), 1), tensor.Shape{2}, []float64{math.Inf(-1), math.Inf(-1)})
	check(t, "float32 large", ops.LogSumExp(tensor.FromSlice([]float32{88, 88}), 0), tensor.Shape{}, []float32{88 + float32(math.Log(2))})
	b := ops.Cast(tensor.FromSlice([]float32{100, 100, 1, 2}, 2, 2), tensor.BFloat16)
	got := ops.LogSumExp(b, 1)
	if got.DType() != tensor.BFloat16 {
		t.Errorf("bfloat16: the result is %v", got.DType())
	}
	check(t, "bfloat16, rounded once", ops.Cast(got, tensor.Float32), tensor.Shape{2}, tensor.ToSlice[float32](
		ops.Cast(ops.Cast(tensor.FromSlice([]float32{100 + float32(math.Log(2)), float32(lse(1, 2))}), tensor.BFloat16), tensor.Float32)))

	// The gradient is the softmax over the dims.
	tp := tape.New()
	tp.Watch(x)
	g := tp.Gradient(ops.Sum(ops.LogSumExp(x, 1)), x)[0]
	check(t, "gradient", g, tensor.Shape{2, 3}, tensor.ToSlice[float64](ops.Softmax(x, 1)))
}

func TestVarAndStd(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 2, 2, 2, 2}, 2, 4)
	check(t, "var rows", ops.Var(x, 1), tensor.Shape{2}, []float64{1.25, 0})
	check(t, "var columns", ops.Var(x, 0), tensor.Shape{4}, []float64{0.25, 0, 0.25, 1})
	check(t, "var all", ops.Var(x), tensor.Shape{}, []float64{0.6875})
	check(t, "std rows", ops.Std(x, -1), tensor.Shape{2}, []float64{math.Sqrt(1.25), 0})
	check(t, "std kept", ops.KeepDims(ops.Std, x, 1), tensor.Shape{2, 1}, []float64{math.Sqrt(1.25), 0})
	// Two passes: a mean of 1e4 leaves the float32 variance of ±1 exact
	// (the mean of squares, about 1e8 where float32 values lie 8 apart,
	// less the square of the mean would lose it).
	check(t, "var of a large mean", ops.Var(tensor.FromSlice([]float32{1e4 - 1, 1e4 + 1, 1e4 - 1, 1e4 + 1})), tensor.Shape{}, []float32{1})
	check(t, "var empty", ops.Var(tensor.Zeros(tensor.Float32, 0, 2), 0), tensor.Shape{2}, []float32{float32(math.NaN()), float32(math.NaN())})
	h := ops.Var(ops.Cast(tensor.FromSlice([]float32{1, 2, 3, 4}), tensor.Float16))
	if h.DType() != tensor.Float16 {
		t.Errorf("float16: the result is %v", h.DType())
	}
	check(t, "var float16", ops.Cast(h, tensor.Float32), tensor.Shape{}, []float32{1.25})

	// d var / dx = 2 (x - mean) / n; d std / dx = (x - mean) / (n std),
	// 0 where the variance is 0 (as PyTorch's).
	tp := tape.New()
	tp.Watch(x)
	gv := tp.Gradient(ops.Sum(ops.Var(x, 1)), x)[0]
	tp = tape.New()
	tp.Watch(x)
	gs := tp.Gradient(ops.Sum(ops.Std(x, 1)), x)[0]
	check(t, "var gradient", gv, tensor.Shape{2, 4}, []float64{-0.75, -0.25, 0.25, 0.75, 0, 0, 0, 0})
	s := math.Sqrt(1.25)
	check(t, "std gradient", gs, tensor.Shape{2, 4}, []float64{-1.5 / (4 * s), -0.5 / (4 * s), 0.5 / (4 * s), 1.5 / (4 * s), 0, 0, 0, 0})
	// Its second derivative at a slice of one (variance 0) is 0 too, and
	// a NaN still propagates.
	one := tensor.FromSlice([]float64{0.7})
	outer := tape.New()
	outer.Watch(one)
	inner := tape.New()
	inner.Watch(one)
	d1 := inner.Gradient(ops.Std(one), one)[0]
	d2 := outer.Gradient(ops.Sum(d1), one)[0]
	check(t, "std of one, first and second derivatives", ops.Concatenate(0, d1, d2), tensor.Shape{2}, []float64{0, 0})
	check(t, "std of NaN", ops.Std(tensor.FromSlice([]float64{1, math.NaN()})), tensor.Shape{}, []float64{math.NaN()})
}

func TestNorm(t *testing.T) {
	x := tensor.FromSlice([]float64{3, -4, 0, 0, 1, -2}, 2, 3)
	inf := math.Inf(1)
	check(t, "2", ops.Norm(x, 2, 1), tensor.Shape{2}, []float64{5, math.Sqrt(5)})
	check(t, "1", ops.Norm(x, 1, 1), tensor.Shape{2}, []float64{7, 3})
	check(t, "inf", ops.Norm(x, inf, 1), tensor.Shape{2}, []float64{4, 2})
	check(t, "-inf", ops.Norm(x, math.Inf(-1), 1), tensor.Shape{2}, []float64{0, 0})
	check(t, "0", ops.Norm(x, 0, 1), tensor.Shape{2}, []float64{2, 2})
	check(t, "3", ops.Norm(x, 3, 1), tensor.Shape{2}, []float64{math.Cbrt(91), math.Cbrt(9)})
	check(t, "all", ops.Norm(x, 2), tensor.Shape{}, []float64{math.Sqrt(30)})
	check(t, "columns", ops.Norm(x, 2, -2), tensor.Shape{3}, []float64{3, math.Sqrt(17), 2})
	check(t, "float32", ops.Norm(ops.Cast(x, tensor.Float32), 2, 1), tensor.Shape{2}, []float32{5, float32(math.Sqrt(5))})
	h := ops.Norm(ops.Cast(x, tensor.BFloat16), 2, 1)
	if h.DType() != tensor.BFloat16 {
		t.Errorf("bfloat16: the result is %v", h.DType())
	}

	// The gradients torch.linalg.vector_norm gives (torch 1.13, by hand):
	// 0 at a zero element and at a zero vector, ties sharing Inf's.
	grad := func(ord float64, v ...float64) []float64 {
		x := tensor.FromSlice(v)
		tp := tape.New()
		tp.Watch(x)
		return tensor.ToSlice[float64](tp.Gradient(ops.Norm(x, ord), x)[0])
	}
	for _, c := range []struct {
		name string
		got  []float64
		want []float64
	}{
		{"2 at 0", grad(2, 0, 0, 0), []float64{0, 0, 0}},
		{"3 at 0", grad(3, 0, 0, 0), []float64{0, 0, 0}},
		{"1", grad(1, 0, 1, -2), []float64{0, 1, -1}},
		{"inf, tied", grad(inf, 0, 2, -2), []float64{0, 0.5, -0.5}},
		{"3", grad(3, 0, 1, -2), []float64{0, 1 / math.Pow(9, 2.0/3), -4 / math.Pow(9, 2.0/3)}},
		{"0.5", grad(0.5, 0, 1, -2), []float64{0, 1 + math.Sqrt(2), -(1 + math.Sqrt(2)) / math.Sqrt(2)}},
	} {
		if !sameFloats(c.got, c.want) {
			t.Errorf("Norm's gradient, ord %s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// sameFloats reports whether a and b agree within 1e-12, relatively.
func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12*(1+math.Abs(b[i])) {
			return false
		}
	}
	return true
}

func TestRoll(t *testing.T) {
	m := ops.Reshape(tensor.Arange[int32](0, 6, 1), 2, 3)
	check(t, "1", ops.Roll(m, 1, 1), tensor.Shape{2, 3}, []int32{2, 0, 1, 5, 3, 4})
	check(t, "-1", ops.Roll(m, -1, -1), tensor.Shape{2, 3}, []int32{1, 2, 0, 4, 5, 3})
	check(t, "4 is 1", ops.Roll(m, 4, 1), tensor.Shape{2, 3}, []int32{2, 0, 1, 5, 3, 4})
	check(t, "axis 0", ops.Roll(m, 1, 0), tensor.Shape{2, 3}, []int32{3, 4, 5, 0, 1, 2})
	check(t, "3 is none", ops.Roll(m, 3, 1), tensor.Shape{2, 3}, []int32{0, 1, 2, 3, 4, 5})
	check(t, "empty", ops.Roll(tensor.Zeros(tensor.Float32, 2, 0), 1, 1), tensor.Shape{2, 0}, []float32{})
	x := rnd(1, -1, 1, 5)
	tp := tape.New()
	tp.Watch(x)
	w := tensor.FromSlice([]float64{1, 2, 3, 4, 5})
	g := tp.Gradient(ops.Sum(ops.Mul(ops.Roll(x, 2, 0), w)), x)[0]
	check(t, "gradient", g, tensor.Shape{5}, []float64{3, 4, 5, 1, 2})
}

func TestTrilAndTriu(t *testing.T) {
	m := ops.Reshape(tensor.Arange[int32](1, 13, 1), 3, 4)
	check(t, "tril", ops.Tril(m, 0), tensor.Shape{3, 4}, []int32{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0})
	check(t, "tril 1", ops.Tril(m, 1), tensor.Shape{3, 4}, []int32{1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12})
	check(t, "tril -1", ops.Tril(m, -1), tensor.Shape{3, 4}, []int32{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0})
	check(t, "triu", ops.Triu(m, 0), tensor.Shape{3, 4}, []int32{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12})
	check(t, "triu 2", ops.Triu(m, 2), tensor.Shape{3, 4}, []int32{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0})
	check(t, "triu -5", ops.Triu(m, -5), tensor.Shape{3, 4}, tensor.ToSlice[int32](m))
	batch := ops.Reshape(tensor.Arange[float32](0, 8, 1), 2, 2, 2)
	check(t, "batch", ops.Tril(batch, 0), tensor.Shape{2, 2, 2}, f32(0, 0, 2, 3, 4, 0, 6, 7))
	causal := ops.Tril(tensor.FromSlice([]bool{true, true, true, true}, 2, 2), 0)
	check(t, "a causal mask", causal, tensor.Shape{2, 2}, []bool{true, false, true, true})
	check(t, "empty", ops.Triu(tensor.Zeros(tensor.Float32, 0, 3), 0), tensor.Shape{0, 3}, []float32{})

	x := rnd(1, -1, 1, 3, 3)
	tp := tape.New()
	tp.Watch(x)
	g := tp.Gradient(ops.Sum(ops.Mul(ops.Triu(x, 1), x)), x)[0]
	xs := tensor.ToSlice[float64](x)
	want := make([]float64, 9)
	for i := range 3 {
		for j := range 3 {
			if j-i >= 1 {
				want[i*3+j] = 2 * xs[i*3+j]
			} else {
				want[i*3+j] = 0
			}
		}
	}
	check(t, "gradient", g, tensor.Shape{3, 3}, want)
}

func TestStatisticsGradients(t *testing.T) {
	runGradients(t, []gradCase{
		{"LogSumExp", func(x []T) T { return ops.LogSumExp(x[0], 1) }, []T{rnd(1, -3, 3, 2, 4)}},
		{"LogSumExp all", func(x []T) T { return ops.LogSumExp(x[0]) }, []T{rnd(2, -3, 3, 3, 2)}},
		{"Var", func(x []T) T { return ops.Var(x[0], 0) }, []T{rnd(3, -2, 2, 4, 3)}},
		{"Std", func(x []T) T { return ops.Std(x[0], 1, 2) }, []T{rnd(4, -2, 2, 2, 3, 2)}},
		{"Tril", func(x []T) T { return ops.Tril(x[0], -1) }, []T{rnd(5, -1, 1, 2, 3, 3)}},
		{"Triu", func(x []T) T { return ops.Triu(x[0], 1) }, []T{rnd(6, -1, 1, 3, 4)}},
		{"Norm 2", func(x []T) T { return ops.Norm(x[0], 2, 1) }, []T{rnd(7, -1, 1, 3, 4)}},
		{"Norm 3", func(x []T) T { return ops.Norm(x[0], 3, 0) }, []T{rnd(8, -1, 1, 3, 4)}},
		{"Norm 1", func(x []T) T { return ops.Norm(x[0], 1) }, []T{rnd(9, -1, 1, 2, 3)}},
		{"Roll", func(x []T) T { return ops.Roll(x[0], -2, 1) }, []T{rnd(10, -1, 1, 2, 5)}},
	}, nil, nil)
}

func TestStatisticsBadInput(t *testing.T) {
	ints := tensor.FromSlice([]int32{1, 2, 3})
	m := tensor.Zeros(tensor.Float32, 2, 3)
	runBadInput(t, []badInput{
		{"logsumexp of ints", func() { ops.LogSumExp(ints) }, tensor.ErrDType, "LogSumExp: needs a float tensor, got int32"},
		{"logsumexp dim", func() { ops.LogSumExp(m, 2) }, tensor.ErrAxis, "LogSumExp"},
		{"var of ints", func() { ops.Var(ints, 0) }, tensor.ErrDType, "Var: needs a float tensor"},
		{"var dim", func() { ops.Var(m, -3) }, tensor.ErrAxis, "Var"},
		{"std of bools", func() { ops.Std(tensor.FromSlice([]bool{true})) }, tensor.ErrDType, "Std: needs a float tensor"},
		{"std dim", func() { ops.Std(m, 0, 0) }, tensor.ErrAxis, "Std"},
		{"norm of ints", func() { ops.Norm(ints, 2) }, tensor.ErrDType, "Norm: needs a float tensor"},
		{"norm ord", func() { ops.Norm(m, -1) }, tensor.ErrValue, "Norm: ord -1: want 0, a positive number or ±Inf"},
		{"norm NaN ord", func() { ops.Norm(m, math.NaN()) }, tensor.ErrValue, "ord NaN"},
		{"norm dim", func() { ops.Norm(m, 2, 5) }, tensor.ErrAxis, "Norm"},
		{"roll axis", func() { ops.Roll(m, 1, 2) }, tensor.ErrAxis, "Roll: axis 2 is out of range for rank 2"},
		{"roll of a scalar", func() { ops.Roll(tensor.Scalar(1.0), 1, 0) }, tensor.ErrAxis, "Roll: axis 0 is out of range for rank 0"},
		{"tril of a vector", func() { ops.Tril(ints, 0) }, tensor.ErrRank, "Tril: needs a matrix or a batch of them (rank 2 or more), got rank 1"},
		{"triu of a scalar", func() { ops.Triu(tensor.Scalar(1.0), 0) }, tensor.ErrRank, "Triu: needs a matrix"},
	})
}
