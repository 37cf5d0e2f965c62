package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Value tests for the op library beyond the foundation set, with XLA's
// worked examples where the document has them.

func TestXLACollapseExamples(t *testing.T) {
	v := v4x2x3()
	all := f32(10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27, 30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46, 47)
	check(t, "v012", ops.Collapse(v, 0, 1, 2), tensor.Shape{24}, all)
	check(t, "v01", ops.Collapse(v, 0, 1), tensor.Shape{4, 6}, all)
	check(t, "v12", ops.Collapse(v, 1, 2), tensor.Shape{8, 3}, all)
}

func TestXLADynamicSliceExamples(t *testing.T) {
	a := tensor.FromSlice([]float64{0, 1, 2, 3, 4})
	b := ops.Reshape(tensor.Arange[float64](0, 12, 1), 4, 3)
	check(t, "1d", ops.DynamicSlice(a, tensor.FromSlice([]int32{2}), 2), tensor.Shape{2}, []float64{2, 3})
	check(t, "2d", ops.DynamicSlice(b, tensor.FromSlice([]int64{2, 1}), 2, 2), tensor.Shape{2, 2}, []float64{7, 8, 10, 11})
	check(t, "clamped", ops.DynamicSlice(a, tensor.FromSlice([]int32{4}), 2), tensor.Shape{2}, []float64{3, 4})
	check(t, "clamped low", ops.DynamicSlice(a, tensor.FromSlice([]int32{-3}), 2), tensor.Shape{2}, []float64{0, 1})
	check(t, "update 1d", ops.DynamicUpdateSlice(a, tensor.FromSlice([]float64{5, 6}), tensor.FromSlice([]int32{2})),
		tensor.Shape{5}, []float64{0, 1, 5, 6, 4})
	u := ops.Reshape(tensor.Arange[float64](12, 18, 1), 3, 2)
	check(t, "update 2d", ops.DynamicUpdateSlice(b, u, tensor.FromSlice([]int32{1, 1})), tensor.Shape{4, 3},
		[]float64{0, 1, 2, 3, 12, 13, 6, 14, 15, 9, 16, 17})
	check(t, "update clamped", ops.DynamicUpdateSlice(a, tensor.FromSlice([]float64{5, 6}), tensor.FromSlice([]int32{9})),
		tensor.Shape{5}, []float64{0, 1, 2, 5, 6})
}

func TestStructureOps(t *testing.T) {
	m := tensor.FromSlice([]int32{1, 2, 3, 4, 5, 6}, 2, 3)
	check(t, "expand", ops.ExpandDims(m, -1), tensor.Shape{2, 3, 1}, []int32{1, 2, 3, 4, 5, 6})
	check(t, "squeeze", ops.Squeeze(ops.Reshape(m, 1, 2, 1, 3)), tensor.Shape{2, 3}, []int32{1, 2, 3, 4, 5, 6})
	check(t, "stack", ops.Stack(1, tensor.FromSlice([]int32{1, 2}), tensor.FromSlice([]int32{3, 4})), tensor.Shape{2, 2}, []int32{1, 3, 2, 4})
	parts := ops.Unstack(m, 1)
	check(t, "unstack", parts[2], tensor.Shape{2}, []int32{3, 6})
	sp := ops.Split(m, 1, []int{1, 2})
	check(t, "split", sp[1], tensor.Shape{2, 2}, []int32{2, 3, 5, 6})
	check(t, "tile", ops.Tile(tensor.FromSlice([]int32{1, 2}, 1, 2), 2, 2), tensor.Shape{2, 4}, []int32{1, 2, 1, 2, 1, 2, 1, 2})
	check(t, "rev", ops.Rev(m, 1), tensor.Shape{2, 3}, []int32{3, 2, 1, 6, 5, 4})
	check(t, "rev both", ops.Rev(m, 0, 1), tensor.Shape{2, 3}, []int32{6, 5, 4, 3, 2, 1})
	check(t, "iota", ops.Iota(tensor.Int32, []int{2, 3}, 1), tensor.Shape{2, 3}, []int32{0, 1, 2, 0, 1, 2})
	check(t, "iota 0", ops.Iota(tensor.Float32, []int{2, 2}, 0), tensor.Shape{2, 2}, f32(0, 0, 1, 1))
	tup := ops.Call(func(a ...*tensor.Tensor) ops.Tuple { return ops.Tuple{ops.Add(a[0], a[1]), a[0]} }, m, m)
	check(t, "call", ops.GetTupleElement(tup, 0), tensor.Shape{2, 3}, []int32{2, 4, 6, 8, 10, 12})
	check(t, "map", ops.Map(func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Mul(xs[0], xs[1]) }, m, m),
		tensor.Shape{2, 3}, []int32{1, 4, 9, 16, 25, 36})
	check(t, "clip", ops.Clip(tensor.FromSlice(f32(-2, 0.5, 3)), tensor.Scalar(float32(0)), tensor.Scalar(float32(1))),
		tensor.Shape{3}, f32(0, 0.5, 1))
	check(t, "cumsum", ops.Cumsum(m, 1, false, false), tensor.Shape{2, 3}, []int32{1, 3, 6, 4, 9, 15})
	check(t, "cumsum exclusive reverse", ops.Cumsum(m, 1, true, true), tensor.Shape{2, 3}, []int32{5, 3, 0, 11, 6, 0})
	check(t, "cumsum axis 0", ops.Cumsum(m, 0, false, false), tensor.Shape{2, 3}, []int32{1, 2, 3, 5, 7, 9})
	check(t, "cumprod", ops.Cumprod(m, 1, false, false), tensor.Shape{2, 3}, []int32{1, 2, 6, 4, 20, 120})
	check(t, "cumprod exclusive reverse", ops.Cumprod(m, 1, true, true), tensor.Shape{2, 3}, []int32{6, 3, 1, 30, 6, 1})
	check(t, "cumprod axis 0 exclusive", ops.Cumprod(m, 0, true, false), tensor.Shape{2, 3}, []int32{1, 1, 1, 1, 2, 3})
}

func TestMathAndLogical(t *testing.T) {
	x := tensor.FromSlice([]float64{-1.5, -0.5, 0.5, 2.5})
	check(t, "ceil", ops.Ceil(x), tensor.Shape{4}, []float64{-1, -0, 1, 3})
	check(t, "floor", ops.Floor(x), tensor.Shape{4}, []float64{-2, -1, 0, 2})
	check(t, "round half away", ops.Round(x), tensor.Shape{4}, []float64{-2, -1, 1, 3})
	check(t, "sin", ops.Sin(x), tensor.Shape{4}, []float64{math.Sin(-1.5), math.Sin(-0.5), math.Sin(0.5), math.Sin(2.5)})
	check(t, "cos", ops.Cos(x), tensor.Shape{4}, []float64{math.Cos(-1.5), math.Cos(-0.5), math.Cos(0.5), math.Cos(2.5)})
	check(t, "erf", ops.Erf(x), tensor.Shape{4}, []float64{math.Erf(-1.5), math.Erf(-0.5), math.Erf(0.5), math.Erf(2.5)})
	small := tensor.FromSlice([]float64{1e-10})
	check(t, "log1p", ops.Log1p(small), tensor.Shape{1}, []float64{math.Log1p(1e-10)})
	check(t, "expm1", ops.Expm1(small), tensor.Shape{1}, []float64{math.Expm1(1e-10)})
	check(t, "isfinite", ops.IsFinite(tensor.FromSlice(f32(1, float32(math.Inf(1)), float32(math.NaN())))),
		tensor.Shape{3}, []bool{true, false, false})
	p, q := tensor.FromSlice([]bool{true, true, false, false}), tensor.FromSlice([]bool{true, false, true, false})
	check(t, "and", ops.LogicalAnd(p, q), tensor.Shape{4}, []bool{true, false, false, false})
	check(t, "or", ops.LogicalOr(p, q), tensor.Shape{4}, []bool{true, true, true, false})
	check(t, "not", ops.LogicalNot(p), tensor.Shape{4}, []bool{false, false, true, true})
	check(t, "any", ops.Any(ops.Reshape(q, 2, 2), 1), tensor.Shape{2}, []bool{true, true})
	check(t, "all", ops.All(ops.Reshape(q, 2, 2), 1), tensor.Shape{2}, []bool{false, false})
	check(t, "all of p rows", ops.All(ops.Reshape(p, 2, 2), 1), tensor.Shape{2}, []bool{true, false})
}

func TestActivations(t *testing.T) {
	x := tensor.FromSlice([]float64{-2, -0.5, 0, 1.5})
	check(t, "leaky", ops.LeakyRelu(x, 0.1), tensor.Shape{4}, []float64{-0.2, -0.05, 0, 1.5})
	check(t, "elu", ops.Elu(x), tensor.Shape{4}, []float64{math.Expm1(-2), math.Expm1(-0.5), 0, 1.5})
	gelu := func(v float64) float64 { return v / 2 * (1 + math.Erf(v/math.Sqrt2)) }
	check(t, "gelu", ops.Gelu(x), tensor.Shape{4}, []float64{gelu(-2), gelu(-0.5), 0, gelu(1.5)})
	sp := func(v float64) float64 { return math.Log1p(math.Exp(v)) }
	check(t, "softplus", ops.Softplus(x), tensor.Shape{4}, []float64{sp(-2), sp(-0.5), sp(0), sp(1.5)})
	check(t, "softplus large", ops.Softplus(tensor.FromSlice([]float64{1000})), tensor.Shape{1}, []float64{1000})
	check(t, "biasadd nchw", ops.BiasAdd(tensor.Zeros(tensor.Float64, 1, 2, 1, 2), tensor.FromSlice([]float64{1, 2}), ops.NCHW),
		tensor.Shape{1, 2, 1, 2}, []float64{1, 1, 2, 2})
	check(t, "biasadd nhwc", ops.BiasAdd(tensor.Zeros(tensor.Float64, 1, 2, 2), tensor.FromSlice([]float64{1, 2}), ops.NHWC),
		tensor.Shape{1, 2, 2}, []float64{1, 2, 1, 2})
	check(t, "l2", ops.L2Normalize(tensor.FromSlice([]float64{3, 4}), 0, 1e-12), tensor.Shape{2}, []float64{0.6, 0.8})
	d1 := ops.Dropout(tensor.Ones(tensor.Float64, 1000), 0.25, tensor.NewRNG(5))
	d2 := ops.Dropout(tensor.Ones(tensor.Float64, 1000), 0.25, tensor.NewRNG(5))
	v1, v2 := tensor.ToSlice[float64](d1), tensor.ToSlice[float64](d2)
	kept := 0
	for i, v := range v1 {
		if v != v2[i] {
			t.Fatal("dropout with the same seed differs")
		}
		if v != 0 {
			kept++
			if math.Abs(v-4.0/3) > 1e-12 {
				t.Fatalf("kept value %v, want 4/3", v)
			}
		}
	}
	if kept < 700 || kept > 800 {
		t.Errorf("dropout kept %d of 1000 at rate 0.25", kept)
	}
	rn := tensor.ToSlice[float64](ops.RngNormal(tensor.NewRNG(1), tensor.Float64, 10, 2, 4000))
	mean := 0.0
	for _, v := range rn {
		mean += v
	}
	if mean /= 4000; math.Abs(mean-10) > 0.15 {
		t.Errorf("RngNormal mean %v", mean)
	}
}

func TestSortGatherDot(t *testing.T) {
	x := tensor.FromSlice(f32(3, 1, 2, float32(math.NaN()), 1, 5), 2, 3)
	check(t, "argsort", ops.ArgSort(x, 1, false), tensor.Shape{2, 3}, []int64{1, 2, 0, 1, 2, 0})
	check(t, "sort", ops.Sort(x, 1, false), tensor.Shape{2, 3}, f32(1, 2, 3, 1, 5, float32(math.NaN())))
	check(t, "sort desc", ops.Sort(x, 1, true), tensor.Shape{2, 3}, f32(3, 2, 1, float32(math.NaN()), 5, 1)) // NaN first: ascending reversed
	v, i := ops.TopK(x, 2)
	check(t, "topk", v, tensor.Shape{2, 2}, f32(3, 2, float32(math.NaN()), 5)) // NaN the largest, as ArgMax
	check(t, "topk indices", i, tensor.Shape{2, 2}, []int64{0, 2, 0, 2})
	check(t, "argmax", ops.ArgMax(x, 1), tensor.Shape{2}, []int64{0, 0})
	check(t, "sort axis 0", ops.Sort(tensor.FromSlice([]int32{3, 1, 1, 2}, 2, 2), 0, false), tensor.Shape{2, 2}, []int32{1, 1, 3, 2})
	stable := ops.ArgSort(tensor.FromSlice([]int32{2, 1, 2, 1, 2}), 0, false)
	check(t, "stable", stable, tensor.Shape{5}, []int64{1, 3, 0, 2, 4})
	k, v, perm := ops.SortKeyVal(tensor.FromSlice([]int32{3, 1, 2}), tensor.FromSlice(f32(30, 10, 20)), 0, false)
	check(t, "keys", k, tensor.Shape{3}, []int32{1, 2, 3})
	check(t, "values", v, tensor.Shape{3}, f32(10, 20, 30))
	check(t, "perm", perm, tensor.Shape{3}, []int64{1, 2, 0})
	tv, ti := ops.TopK(tensor.FromSlice(f32(1, 9, 3, 9, 5), 1, 5), 3)
	check(t, "topk values", tv, tensor.Shape{1, 3}, f32(9, 9, 5))
	check(t, "topk indices", ti, tensor.Shape{1, 3}, []int64{1, 3, 4})
	check(t, "argmax", ops.ArgMax(tensor.FromSlice(f32(1, 9, 3, 9, 5, 0), 2, 3), 1), tensor.Shape{2}, []int64{1, 0})
	check(t, "argmax first of ties", ops.ArgMax(tensor.FromSlice(f32(2, 9, 9)), 0), tensor.Shape{}, []int64{1})
	check(t, "argmin", ops.ArgMin(tensor.FromSlice(f32(1, 9, 3, 9, 5, 0), 2, 3), 0), tensor.Shape{3}, []int64{0, 1, 1})
	check(t, "argmax nan", ops.ArgMax(tensor.FromSlice(f32(1, float32(math.NaN()), 3)), 0), tensor.Shape{}, []int64{1})

	emb := tensor.FromSlice(f32(0, 1, 10, 11, 20, 21), 3, 2)
	ids := tensor.FromSlice([]int32{2, 0, 2, 1}, 2, 2)
	check(t, "gather", ops.Gather(emb, ids, 0), tensor.Shape{2, 2, 2}, f32(20, 21, 0, 1, 20, 21, 10, 11))
	check(t, "gather axis 1", ops.Gather(emb, tensor.FromSlice([]int64{1, 1, 0}), 1), tensor.Shape{3, 3}, f32(1, 1, 0, 11, 11, 10, 21, 21, 20))
	upd := tensor.Ones(tensor.Float32, 4, 2)
	check(t, "scatter add", ops.ScatterAdd(tensor.Zeros(tensor.Float32, 3, 2), tensor.FromSlice([]int32{2, 0, 2, 1}), upd, 0),
		tensor.Shape{3, 2}, f32(1, 1, 1, 1, 2, 2))
	check(t, "scatter", ops.Scatter(emb, tensor.FromSlice([]int32{1}), tensor.FromSlice(f32(7, 8), 1, 2), 0),
		tensor.Shape{3, 2}, f32(0, 1, 7, 8, 20, 21))
	check(t, "take along", ops.TakeAlongAxis(emb, tensor.FromSlice([]int64{1, 0, 0}, 3, 1), 1), tensor.Shape{3, 1}, f32(1, 10, 20))

	check(t, "dot vv", ops.Dot(tensor.FromSlice(f32(1, 2, 3)), tensor.FromSlice(f32(4, 5, 6))), tensor.Shape{}, f32(32))
	check(t, "dot mv", ops.Dot(tensor.FromSlice(f32(1, 2, 3, 4), 2, 2), tensor.FromSlice(f32(1, 1))), tensor.Shape{2}, f32(3, 7))
	a := ops.Reshape(tensor.Arange[float64](0, 24, 1), 2, 3, 4)
	b := ops.Reshape(tensor.Arange[float64](0, 40, 1), 2, 4, 5)
	got := ops.DotGeneral(a, b, ops.DotDims{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContract: []int{2}, RhsContract: []int{1}})
	check(t, "dot general = batched matmul", got, tensor.Shape{2, 3, 5}, tensor.ToSlice[float64](ops.MatMul(a, b)))
	// Contracting two dimensions: sum over i, j of a[i, j] * c[j, i].
	c := ops.Reshape(tensor.Arange[float64](0, 6, 1), 3, 2)
	d := ops.Reshape(tensor.Arange[float64](0, 6, 1), 2, 3)
	want := 0.0
	for i := 0; i < 3; i++ {
		for j := 0; j < 2; j++ {
			want += float64(i*2+j) * float64(j*3+i)
		}
	}
	check(t, "two contracting", ops.DotGeneral(c, d, ops.DotDims{LhsContract: []int{0, 1}, RhsContract: []int{1, 0}}), tensor.Shape{}, []float64{want})
}

func TestReduceWithUserFunction(t *testing.T) {
	var vals []float32
	for range 4 {
		vals = append(vals, 1, 2, 3, 4, 5, 6)
	}
	x := tensor.FromSlice(vals, 4, 2, 3)
	zero := tensor.Scalar(float32(0))
	check(t, "all to 84", ops.ReduceWith(x, zero, ops.Add), tensor.Shape{}, f32(84))
	check(t, "dim 0", ops.ReduceWith(x, zero, ops.Add, 0), tensor.Shape{2, 3}, f32(4, 8, 12, 16, 20, 24))
	check(t, "dim 2", ops.ReduceWith(x, zero, ops.Add, 2), tensor.Shape{4, 2}, f32(6, 15, 6, 15, 6, 15, 6, 15))
	check(t, "dims 0 1", ops.ReduceWith(x, zero, ops.Add, 0, 1), tensor.Shape{3}, f32(20, 28, 36))
	check(t, "max", ops.ReduceWith(x, tensor.Scalar(float32(math.Inf(-1))), ops.Max, 1, 2), tensor.Shape{4}, f32(6, 6, 6, 6))
	check(t, "empty", ops.ReduceWith(tensor.Zeros(tensor.Float32, 0, 2), tensor.Scalar(float32(7)), ops.Add, 0), tensor.Shape{2}, f32(7, 7))
}

func TestLibraryGradients(t *testing.T) {
	cases := []gradCase{
		{"LeakyRelu", func(x []T) T { return ops.LeakyRelu(x[0], 0.2) }, []T{rnd(1, -2, 2, 9)}},
		{"Elu", func(x []T) T { return ops.Elu(x[0]) }, []T{rnd(1, -2, 2, 9)}},
		{"GeluTanh", func(x []T) T { return ops.GeluTanh(x[0]) }, []T{rnd(1, -3, 3, 9)}},
		{"BiasAdd NCHW", func(x []T) T { return ops.BiasAdd(x[0], x[1], ops.NCHW) }, []T{rnd(1, -1, 1, 2, 3, 2, 2), rnd(2, -1, 1, 3)}},
		{"L2Normalize", func(x []T) T { return ops.L2Normalize(x[0], 1, 1e-12) }, []T{rnd(1, -1, 1, 2, 3)}},
		{"Clip", func(x []T) T { return ops.Clip(x[0], tensor.Scalar(-0.5), tensor.Scalar(0.5)) }, []T{rnd(1, -1, 1, 9)}},
		{"Tile", func(x []T) T { return ops.Tile(x[0], 2, 3) }, []T{rnd(1, -1, 1, 2, 2)}},
		{"Stack", func(x []T) T { return ops.Stack(1, x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 2, 3)}},
		{"Split", func(x []T) T { p := ops.Split(x[0], 0, []int{1, 2}); return ops.Mul(p[0], ops.Sum(p[1], 0)) }, []T{rnd(1, -1, 1, 3, 2)}},
		{"Sort", func(x []T) T { return ops.Mul(ops.Sort(x[0], 1, false), tensor.FromSlice([]float64{1, 2, 3, 4})) }, []T{rnd(1, -1, 1, 2, 4)}},
		{"TopK", func(x []T) T { v, _ := ops.TopK(x[0], 2); return v }, []T{rnd(1, -1, 1, 3, 5)}},
		{"Dot mv", func(x []T) T { return ops.Dot(x[0], x[1]) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 3)}},
		{"DotGeneral", func(x []T) T {
			return ops.DotGeneral(x[0], x[1], ops.DotDims{LhsBatch: []int{2}, RhsBatch: []int{0}, LhsContract: []int{0}, RhsContract: []int{2}})
		}, []T{rnd(1, -1, 1, 3, 2, 4), rnd(2, -1, 1, 4, 5, 3)}},
		{"ReduceWith", func(x []T) T { return ops.ReduceWith(x[0], tensor.Scalar(0.0), ops.Add, 1) }, []T{rnd(1, -1, 1, 2, 5)}},
		{"ReduceWith max", func(x []T) T { return ops.ReduceWith(x[0], tensor.Scalar(-1e9), ops.Max, 0) }, []T{rnd(1, -1, 1, 3, 2)}},
		{"Map", func(x []T) T {
			return ops.Map(func(xs ...T) T { return ops.Mul(ops.Sin(xs[0]), xs[1]) }, x[0], x[1])
		}, []T{rnd(1, -1, 1, 4), rnd(2, -1, 1, 4)}},
	}
	runGradients(t, cases, nil, nil)
}

func TestLibraryBadInput(t *testing.T) {
	m := tensor.Zeros(tensor.Float32, 2, 3)
	runBadInput(t, []badInput{
		{"collapse non-consecutive", func() { ops.Collapse(v4x2x3(), 0, 2) }, tensor.ErrAxis, "not a consecutive"},
		{"collapse out of order", func() { ops.Collapse(v4x2x3(), 1, 0) }, tensor.ErrAxis, "not a consecutive"},
		{"squeeze non-1", func() { ops.Squeeze(m, 0) }, tensor.ErrShape, "has size 2, not 1"},
		{"split sizes", func() { ops.Split(m, 1, []int{1, 1}) }, tensor.ErrShape, "add up to 2"},
		{"dynamic slice size", func() { ops.DynamicSlice(m, tensor.FromSlice([]int32{0, 0}), 3, 1) }, tensor.ErrShape, "outside [0, 2]"},
		{"dynamic slice starts", func() { ops.DynamicSlice(m, tensor.FromSlice([]int32{0}), 1, 1) }, tensor.ErrShape, "must have shape [2]"},
		{"dynamic starts dtype", func() { ops.DynamicSlice(m, tensor.FromSlice(f32(0, 0)), 1, 1) }, tensor.ErrDType, "int32 or int64"},
		{"update too big", func() { ops.DynamicUpdateSlice(m, tensor.Zeros(tensor.Float32, 3, 1), tensor.FromSlice([]int32{0, 0})) }, tensor.ErrShape, "does not fit"},
		{"gather range", func() { ops.Gather(m, tensor.FromSlice([]int32{0, 2}), 0) }, tensor.ErrIndex, "index 2 at position 1 is outside [0, 2)"},
		{"scatter shape", func() { ops.ScatterAdd(m, tensor.FromSlice([]int32{0}), m, 0) }, tensor.ErrShape, "want [1 3]"},
		{"topk", func() { ops.TopK(m, 4) }, tensor.ErrValue, "k 4"},
		{"argmax empty", func() { ops.ArgMax(tensor.Zeros(tensor.Float32, 2, 0), 1) }, tensor.ErrShape, "empty"},
		{"dot", func() { ops.Dot(m, m) }, tensor.ErrShape, "contracting dimensions differ"},
		{"dot general", func() { ops.DotGeneral(m, m, ops.DotDims{LhsContract: []int{0, 0}, RhsContract: []int{0, 1}}) }, tensor.ErrAxis, "repeated"},
		{"reduce init", func() { ops.ReduceWith(m, tensor.Scalar(0.0), ops.Add) }, tensor.ErrShape, "init must be a scalar"},
		{"map shape", func() { ops.Map(func(xs ...*tensor.Tensor) *tensor.Tensor { return ops.Sum(xs[0]) }, m) }, tensor.ErrShape, "must be elementwise"},
		{"any of floats", func() { ops.Any(m) }, tensor.ErrDType, "needs a bool tensor"},
		{"logical of floats", func() { ops.LogicalAnd(m, m) }, tensor.ErrDType, "is not one of"},
		{"dropout rate", func() { ops.Dropout(m, 1, tensor.NewRNG(1)) }, tensor.ErrValue, "rate 1"},
		{"tuple index", func() { ops.GetTupleElement(ops.Tuple{m}, 1) }, tensor.ErrIndex, "index 1"},
		{"rev axis", func() { ops.Rev(m, 2) }, tensor.ErrAxis, "dimension 2"},
		{"biasadd", func() { ops.BiasAdd(m, tensor.Zeros(tensor.Float32, 2), ops.NHWC) }, tensor.ErrShape, "bias has 2 entries for 3"},
	})
}

// Rows long enough to be reduced in parallel chunks (fewer rows than
// workers) give the same results as a float64 loop, for every reduction.
func TestLongRowReductions(t *testing.T) {
	const n = 100_003
	for _, rows := range []int{1, 3} {
		testLongRows(t, rows, n)
	}
}

func testLongRows(t *testing.T, rows, n int) {
	x := tensor.RandUniform(tensor.NewRNG(5), tensor.Float64, -1, 1, rows, n)
	v := tensor.ToSlice[float64](x)
	for row := 0; row < rows; row++ {
		r := v[row*n : (row+1)*n]
		sum, lo, hi := 0.0, r[0], r[0]
		for _, e := range r {
			sum += e
			lo, hi = min(lo, e), max(hi, e)
		}
		for _, c := range []struct {
			name string
			got  *tensor.Tensor
			want float64
		}{
			{"sum", ops.Sum(x, 1), sum},
			{"mean", ops.Mean(x, 1), sum / float64(n)},
			{"max", ops.Amax(x, 1), hi},
			{"min", ops.Amin(x, 1), lo},
		} {
			if got := tensor.ToSlice[float64](c.got)[row]; math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
				t.Errorf("%s of row %d: %v, want %v", c.name, row, got, c.want)
			}
		}
	}
	x32 := ops.Cast(x, tensor.Float32)
	if got, want := tensor.ToSlice[float32](ops.Sum(x32))[0], float32(tensor.ToSlice[float64](ops.Sum(x))[0]); math.Abs(float64(got-want)) > 1e-2 {
		t.Errorf("float32 sum %v, want %v", got, want)
	}
}
