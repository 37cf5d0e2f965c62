package ops_test

import (
	"errors"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
	"github.com/google/go-cmp/cmp"
)

func f32(v ...float32) []float32 { return v }

// v4x2x3 is the 4x2x3 array of XLA's Collapse and Reshape examples.
func v4x2x3() *tensor.Tensor {
	return tensor.FromSlice([]float32{
		10, 11, 12, 15, 16, 17,
		20, 21, 22, 25, 26, 27,
		30, 31, 32, 35, 36, 37,
		40, 41, 42, 45, 46, 47}, 4, 2, 3)
}

func check[T tensor.Elem](t *testing.T, name string, got *tensor.Tensor, shape tensor.Shape, want []T) {
	t.Helper()
	if !got.Shape().Equal(shape) {
		t.Errorf("%s: shape %v, want %v", name, got.Shape(), shape)
		return
	}
	tol := approx.Tolerance(got.DType())
	if g := tensor.ToSlice[T](got); !cmp.Equal(g, want,
		cmp.Comparer(func(a, b float32) bool { return approx.Close(float64(a), float64(b), tol) }),
		cmp.Comparer(func(a, b float64) bool { return approx.Close(a, b, tol) })) {
		t.Errorf("%s = %v, want %v", name, g, want)
	}
}

func TestXLAReshapeExamples(t *testing.T) {
	v := v4x2x3()
	check(t, "v012_24", ops.ReshapeDims(v, []int{0, 1, 2}, 24), tensor.Shape{24},
		f32(10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27, 30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46, 47))
	check(t, "v012_83", ops.ReshapeDims(v, []int{0, 1, 2}, 8, 3), tensor.Shape{8, 3},
		f32(10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27, 30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46, 47))
	check(t, "v021_24", ops.ReshapeDims(v, []int{1, 2, 0}, 24), tensor.Shape{24},
		f32(10, 20, 30, 40, 11, 21, 31, 41, 12, 22, 32, 42, 15, 25, 35, 45, 16, 26, 36, 46, 17, 27, 37, 47))
	check(t, "v021_83", ops.ReshapeDims(v, []int{1, 2, 0}, 8, 3), tensor.Shape{8, 3},
		f32(10, 20, 30, 40, 11, 21, 31, 41, 12, 22, 32, 42, 15, 25, 35, 45, 16, 26, 36, 46, 17, 27, 37, 47))
	check(t, "v021_262", ops.ReshapeDims(v, []int{1, 2, 0}, 2, 6, 2), tensor.Shape{2, 6, 2},
		f32(10, 20, 30, 40, 11, 21, 31, 41, 12, 22, 32, 42, 15, 25, 35, 45, 16, 26, 36, 46, 17, 27, 37, 47))
	check(t, "1x1 to scalar", ops.Reshape(tensor.FromSlice(f32(5), 1, 1)), tensor.Shape{}, f32(5))
	check(t, "scalar to 1x1", ops.Reshape(tensor.Scalar(float32(5)), 1, 1), tensor.Shape{1, 1}, f32(5))
	check(t, "inferred", ops.Reshape(v, -1, 6), tensor.Shape{4, 6},
		f32(10, 11, 12, 15, 16, 17, 20, 21, 22, 25, 26, 27, 30, 31, 32, 35, 36, 37, 40, 41, 42, 45, 46, 47))
}

func TestXLAConcatenateSliceSelectBroadcast(t *testing.T) {
	check(t, "concat 1d", ops.Concatenate(0, tensor.FromSlice([]int32{2, 3}), tensor.FromSlice([]int32{4, 5}),
		tensor.FromSlice([]int32{6, 7})), tensor.Shape{6}, []int32{2, 3, 4, 5, 6, 7})
	a := tensor.FromSlice([]int32{1, 2, 3, 4, 5, 6}, 3, 2)
	b := tensor.FromSlice([]int32{7, 8}, 1, 2)
	check(t, "concat 2d", ops.Concatenate(0, a, b), tensor.Shape{4, 2}, []int32{1, 2, 3, 4, 5, 6, 7, 8})
	check(t, "concat axis 1", ops.Concatenate(1, a, a), tensor.Shape{3, 4}, []int32{1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6})

	check(t, "slice 1d", ops.Slice(tensor.FromSlice([]float64{0, 1, 2, 3, 4}), []int{2}, []int{4}, nil),
		tensor.Shape{2}, []float64{2, 3})
	m := tensor.Arange[float64](0, 12, 1)
	check(t, "slice 2d", ops.Slice(ops.Reshape(m, 4, 3), []int{2, 1}, []int{4, 3}, nil),
		tensor.Shape{2, 2}, []float64{7, 8, 10, 11})
	check(t, "slice strided", ops.Slice(ops.Reshape(m, 4, 3), []int{0, 0}, []int{4, 3}, []int{3, 2}),
		tensor.Shape{2, 2}, []float64{0, 2, 9, 11})

	pred := tensor.FromSlice([]bool{true, false, false, true})
	v1 := tensor.FromSlice([]int32{1, 2, 3, 4})
	v2 := tensor.FromSlice([]int32{100, 200, 300, 400})
	check(t, "select", ops.Where(pred, v1, v2), tensor.Shape{4}, []int32{1, 200, 300, 4})
	check(t, "select scalar", ops.Where(tensor.Scalar(true), v1, v2), tensor.Shape{4}, []int32{1, 2, 3, 4})

	check(t, "broadcast scalar", ops.Broadcast(tensor.Scalar(float32(2)), 2, 3), tensor.Shape{2, 3}, f32(2, 2, 2, 2, 2, 2))
	check(t, "broadcast vec", ops.Broadcast(tensor.FromSlice(f32(1, 2)), 2), tensor.Shape{2, 2}, f32(1, 2, 1, 2))
	check(t, "transpose", ops.Transpose(tensor.FromSlice([]int32{1, 2, 3, 4, 5, 6}, 2, 3)), tensor.Shape{3, 2},
		[]int32{1, 4, 2, 5, 3, 6})
}

func TestXLAReduceExamples(t *testing.T) {
	// The 4x2x3 array whose every [2 3] slice is {{1,2,3},{4,5,6}}.
	var vals []float32
	for range 4 {
		vals = append(vals, 1, 2, 3, 4, 5, 6)
	}
	x := tensor.FromSlice(vals, 4, 2, 3)
	check(t, "dim 0", ops.Sum(x, 0), tensor.Shape{2, 3}, f32(4, 8, 12, 16, 20, 24))
	check(t, "dim 2", ops.Sum(x, 2), tensor.Shape{4, 2}, f32(6, 15, 6, 15, 6, 15, 6, 15))
	check(t, "dims 0,1", ops.Sum(x, 0, 1), tensor.Shape{3}, f32(20, 28, 36))
	check(t, "all", ops.Sum(x), tensor.Shape{}, f32(84))
	check(t, "dims 0,2 (non-contiguous)", ops.Sum(x, 0, 2), tensor.Shape{2}, f32(24, 60))
	m := tensor.FromSlice(f32(1, 2, 3, 4, 5, 6), 2, 3)
	check(t, "matrix dim 0", ops.Sum(m, 0), tensor.Shape{3}, f32(5, 7, 9))
	check(t, "matrix dim 1", ops.Sum(m, 1), tensor.Shape{2}, f32(6, 15))
	check(t, "mean keep", ops.Reduce(m, ops.Reduction{Kind: ops.ReduceMean, Dims: []int{-1}, KeepDims: true}),
		tensor.Shape{2, 1}, f32(2, 5))
	check(t, "max", ops.Amax(m, 0), tensor.Shape{3}, f32(4, 5, 6))
	check(t, "min", ops.Amin(m, 1), tensor.Shape{2}, f32(1, 4))
	check(t, "prod", ops.Prod(m), tensor.Shape{}, f32(720))
	check(t, "empty sum", ops.Sum(tensor.Zeros(tensor.Float32, 0, 3), 0), tensor.Shape{3}, f32(0, 0, 0))
	check(t, "scalar sum", ops.Sum(tensor.Scalar(float32(2.5))), tensor.Shape{}, f32(2.5))
	check(t, "scalar mean", ops.Mean(tensor.Scalar(float32(-4))), tensor.Shape{}, f32(-4))
	check(t, "empty max", ops.Amax(tensor.Zeros(tensor.Int32, 2, 0), 1), tensor.Shape{2}, []int32{math.MinInt32, math.MinInt32})
	check(t, "nan max", ops.Amax(tensor.FromSlice(f32(1, float32(math.NaN()), 3))), tensor.Shape{}, f32(float32(math.NaN())))
}

func TestXLAPadExample(t *testing.T) {
	x := tensor.FromSlice(f32(1, 2, 3, 4, 5, 6), 2, 3)
	zero := tensor.Scalar(float32(0))
	// Interior padding 1 in dim 1, edge 1 low in dim 0 and -1 high in dim 1.
	got := ops.Pad(x, zero, ops.PadDim{Low: 1}, ops.PadDim{Interior: 1, High: -1})
	check(t, "pad", got, tensor.Shape{3, 4}, f32(0, 0, 0, 0, 1, 0, 2, 0, 4, 0, 5, 0))
	got = ops.Pad(x, tensor.Scalar(float32(9)), ops.PadDim{Low: -1, High: 1}, ops.PadDim{Low: 2, Interior: 0})
	check(t, "negative low", got, tensor.Shape{2, 5}, f32(9, 9, 4, 5, 6, 9, 9, 9, 9, 9))
}

func TestArithmeticAndBroadcasting(t *testing.T) {
	m := tensor.FromSlice(f32(1, 2, 3, 4, 5, 6), 2, 3)
	row := tensor.FromSlice(f32(10, 20, 30))
	col := tensor.FromSlice(f32(100, 200), 2, 1)
	check(t, "row", ops.Add(m, row), tensor.Shape{2, 3}, f32(11, 22, 33, 14, 25, 36))
	check(t, "col", ops.Add(m, col), tensor.Shape{2, 3}, f32(101, 102, 103, 204, 205, 206))
	check(t, "outer", ops.Mul(col, row), tensor.Shape{2, 3}, f32(1000, 2000, 3000, 2000, 4000, 6000))
	check(t, "scalar", ops.Sub(tensor.Scalar(float32(1)), m), tensor.Shape{2, 3}, f32(0, -1, -2, -3, -4, -5))
	// XLA's broadcast_dimensions: the vector maps to dimension 0 (rows).
	check(t, "bdims 0", ops.BroadcastDims(ops.Add, m, tensor.FromSlice(f32(10, 20)), 0), tensor.Shape{2, 3},
		f32(11, 12, 13, 24, 25, 26))
	check(t, "bdims 1", ops.BroadcastDims(ops.Add, tensor.FromSlice(f32(10, 20, 30)), m, 1), tensor.Shape{2, 3},
		f32(11, 22, 33, 14, 25, 36))
	check(t, "div", ops.Div(tensor.FromSlice(f32(1, -1, 0)), tensor.Scalar(float32(0))), tensor.Shape{3},
		f32(float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())))
	check(t, "int div by zero", ops.Div(tensor.FromSlice([]int32{7, -7}), tensor.FromSlice([]int32{0, 2})),
		tensor.Shape{2}, []int32{-1, -3})
	check(t, "rem sign of dividend", ops.Rem(tensor.FromSlice([]int32{7, -7, 7, 5}), tensor.FromSlice([]int32{3, 3, -3, 0})),
		tensor.Shape{4}, []int32{1, -1, 1, 5})
	check(t, "float rem", ops.Rem(tensor.FromSlice(f32(5.5, -5.5)), tensor.Scalar(float32(2))), tensor.Shape{2}, f32(1.5, -1.5))
	check(t, "pow", ops.Pow(tensor.FromSlice([]int64{2, 3, 2, -1}), tensor.FromSlice([]int64{10, 0, -1, -3})),
		tensor.Shape{4}, []int64{1024, 1, 0, -1})
	check(t, "max nan", ops.Max(tensor.FromSlice(f32(1, float32(math.NaN()))), tensor.Scalar(float32(2))),
		tensor.Shape{2}, f32(2, float32(math.NaN())))
	check(t, "uint8 wraps", ops.Add(tensor.FromSlice([]uint8{250}), tensor.FromSlice([]uint8{10})), tensor.Shape{1}, []uint8{4})
}

func TestUnaryAndCompare(t *testing.T) {
	x := tensor.FromSlice([]float64{-2, -0.5, 0, 0.5, 2})
	check(t, "neg", ops.Neg(x), tensor.Shape{5}, []float64{2, 0.5, 0, -0.5, -2})
	check(t, "abs", ops.Abs(x), tensor.Shape{5}, []float64{2, 0.5, 0, 0.5, 2})
	check(t, "sign", ops.Sign(x), tensor.Shape{5}, []float64{-1, -1, 0, 1, 1})
	check(t, "square", ops.Square(x), tensor.Shape{5}, []float64{4, 0.25, 0, 0.25, 4})
	check(t, "relu", ops.Relu(x), tensor.Shape{5}, []float64{0, 0, 0, 0.5, 2})
	for name, c := range map[string]struct {
		got  *tensor.Tensor
		want func(float64) float64
	}{
		"exp": {ops.Exp(x), math.Exp}, "tanh": {ops.Tanh(x), math.Tanh},
		"sigmoid": {ops.Sigmoid(x), func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }},
		"sqrt":    {ops.Sqrt(ops.Abs(x)), func(v float64) float64 { return math.Sqrt(math.Abs(v)) }},
		"log":     {ops.Log(ops.Abs(x)), func(v float64) float64 { return math.Log(math.Abs(v)) }},
		"rsqrt":   {ops.Rsqrt(ops.Abs(x)), func(v float64) float64 { return 1 / math.Sqrt(math.Abs(v)) }},
	} {
		for i, v := range tensor.ToSlice[float64](x) {
			got, want := tensor.ToSlice[float64](c.got)[i], c.want(v)
			if got != want && math.Abs(got-want) > 1e-15*math.Abs(want) {
				t.Errorf("%s(%v) = %v, want %v", name, v, got, want)
			}
		}
	}
	nan := tensor.FromSlice(f32(1, float32(math.NaN()), 3))
	two := tensor.FromSlice(f32(1, float32(math.NaN()), 2))
	check(t, "eq nan", ops.Eq(nan, two), tensor.Shape{3}, []bool{true, false, false})
	check(t, "ne nan", ops.Ne(nan, two), tensor.Shape{3}, []bool{false, true, true})
	check(t, "lt nan", ops.Lt(nan, two), tensor.Shape{3}, []bool{false, false, false})
	check(t, "ge", ops.Ge(nan, two), tensor.Shape{3}, []bool{true, false, true})
	check(t, "gt", ops.Gt(tensor.FromSlice([]int32{1, 5}), tensor.Scalar(int32(2))), tensor.Shape{2}, []bool{false, true})
	check(t, "le", ops.Le(tensor.FromSlice([]uint8{1, 5}), tensor.Scalar(uint8(5))), tensor.Shape{2}, []bool{true, true})
	check(t, "cast", ops.Cast(tensor.FromSlice(f32(-1.7, 2.9, 0)), tensor.Int32), tensor.Shape{3}, []int32{-1, 2, 0})
	check(t, "cast bool", ops.Cast(tensor.FromSlice(f32(-1.7, 0)), tensor.Bool), tensor.Shape{2}, []bool{true, false})
	check(t, "cast from bool", ops.Cast(tensor.FromSlice([]bool{true, false}), tensor.Float64), tensor.Shape{2}, []float64{1, 0})
}

func TestMatMulAndSoftmax(t *testing.T) {
	a := tensor.FromSlice(f32(1, 2, 3, 4, 5, 6), 2, 3)
	b := tensor.FromSlice(f32(7, 8, 9, 10, 11, 12), 3, 2)
	check(t, "matmul", ops.MatMul(a, b), tensor.Shape{2, 2}, f32(58, 64, 139, 154))
	check(t, "a^T a", ops.MatMulT(a, a, true, false), tensor.Shape{3, 3}, f32(17, 22, 27, 22, 29, 36, 27, 36, 45))
	check(t, "a a^T", ops.MatMulT(a, a, false, true), tensor.Shape{2, 2}, f32(14, 32, 32, 77))
	batch := ops.Reshape(ops.Concatenate(0, a, a), 2, 2, 3)
	check(t, "batched shared b", ops.MatMul(batch, b), tensor.Shape{2, 2, 2}, f32(58, 64, 139, 154, 58, 64, 139, 154))
	// A rank-2 left operand is shared by every batch of the right one.
	bb := ops.Reshape(ops.Concatenate(0, b, ops.Neg(b)), 2, 3, 2)
	check(t, "shared a", ops.MatMul(a, bb), tensor.Shape{2, 2, 2}, f32(58, 64, 139, 154, -58, -64, -139, -154))
	check(t, "shared a, both transposed", ops.MatMulT(ops.Transpose(a).Contiguous(), ops.Transpose(bb, 0, 2, 1).Contiguous(), true, true),
		tensor.Shape{2, 2, 2}, f32(58, 64, 139, 154, -58, -64, -139, -154))
	// Odd sizes exercise the 4-row blocks and their remainder.
	for _, n := range []int{1, 3, 5, 9, 17, 70} {
		x := tensor.RandNormal(tensor.NewRNG(uint64(n)), tensor.Float64, n, n+1)
		y := tensor.RandNormal(tensor.NewRNG(uint64(n+100)), tensor.Float64, n+1, n+2)
		got := tensor.ToSlice[float64](ops.MatMul(x, y))
		xv, yv := tensor.ToSlice[float64](x), tensor.ToSlice[float64](y)
		for i := 0; i < n; i++ {
			for j := 0; j < n+2; j++ {
				s := 0.0
				for k := 0; k < n+1; k++ {
					s += xv[i*(n+1)+k] * yv[k*(n+2)+j]
				}
				if math.Abs(got[i*(n+2)+j]-s) > 1e-12*math.Max(1, math.Abs(s)) {
					t.Fatalf("n=%d: c[%d,%d] = %v, want %v", n, i, j, got[i*(n+2)+j], s)
				}
			}
		}
	}
	ls := tensor.ToSlice[float64](ops.LogSoftmax(tensor.FromSlice([]float64{1, 2, 3, 1000, 1000, 1000}, 2, 3), -1))
	want := []float64{-2.4076059644443806, -1.4076059644443806, -0.40760596444438063, -math.Log(3), -math.Log(3), -math.Log(3)}
	for i := range want {
		if math.Abs(ls[i]-want[i]) > 1e-12 {
			t.Errorf("logsoftmax[%d] = %v, want %v", i, ls[i], want[i])
		}
	}
	loss := ops.SparseSoftmaxCrossEntropy(tensor.FromSlice([]float64{1, 2, 3, 1, 1, 1}, 2, 3), tensor.FromSlice([]int32{2, 0}))
	check(t, "xent", loss, tensor.Shape{2}, []float64{0.40760596444438063, math.Log(3)})
	// The fused op equals the dense form with one-hot labels, in both float
	// dtypes and for both label dtypes, large logits included.
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		logits := tensor.RandNormal(tensor.NewRNG(9), dt, 7, 5)
		logits = ops.Mul(logits, ops.ScalarLike(logits, 30))
		for _, labels := range []*tensor.Tensor{tensor.FromSlice([]int64{4, 0, 1, 3, 2, 2, 0}), tensor.FromSlice([]int32{1, 1, 0, 4, 3, 2, 4})} {
			got := ops.SparseSoftmaxCrossEntropy(logits, labels)
			want := ops.SoftmaxCrossEntropy(logits, ops.OneHot(labels, 5, dt))
			g, w := tensor.ToSlice[float64](ops.Cast(got, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
			for i := range w {
				if math.Abs(g[i]-w[i]) > 1e-5*math.Max(1, math.Abs(w[i])) {
					t.Errorf("%v %v labels: xent[%d] = %v, want %v", dt, labels.DType(), i, g[i], w[i])
				}
			}
		}
	}
	// float32 rows take the vector exp: within float32 rounding of the
	// float64 result (x - lse rounds at the scale of x and lse), over rows
	// longer than one block of it.
	x64 := ops.Cast(ops.Mul(tensor.RandNormal(tensor.NewRNG(10), tensor.Float64, 3, 700), tensor.Scalar(8.0)), tensor.Float32)
	xs := tensor.ToSlice[float64](ops.Cast(x64, tensor.Float64))
	got32 := tensor.ToSlice[float64](ops.Cast(ops.LogSoftmax(x64, -1), tensor.Float64))
	want64 := tensor.ToSlice[float64](ops.LogSoftmax(ops.Cast(x64, tensor.Float64), -1))
	for i := range want64 {
		scale := math.Abs(xs[i]) + math.Abs(xs[i]-want64[i]) + 1 // |x| + |lse|
		if d := math.Abs(got32[i] - want64[i]); d > 1.5e-7*scale {
			t.Fatalf("float32 logsoftmax[%d] = %v, float64 %v", i, got32[i], want64[i])
		}
	}
	// Softmax, one op, equals exp(LogSoftmax) (float32 and float64, both
	// axes), rows of large logits included.
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		x := ops.Cast(tensor.FromSlice([]float64{1, 2, 3, 1000, 1000, 1001, -5, 0, 5}, 3, 3), dt)
		for _, axis := range []int{-1, 0} {
			got := tensor.ToSlice[float64](ops.Cast(ops.Softmax(x, axis), tensor.Float64))
			want := tensor.ToSlice[float64](ops.Cast(ops.Exp(ops.LogSoftmax(x, axis)), tensor.Float64))
			for i := range want {
				if math.Abs(got[i]-want[i]) > 3e-7 {
					t.Errorf("%v softmax axis %d [%d] = %v, want %v", dt, axis, i, got[i], want[i])
				}
			}
		}
	}
	if err := tensor.Catch(func() { ops.Softmax(tensor.Scalar(float32(1)), -1) }); !errors.Is(err, tensor.ErrRank) {
		t.Errorf("softmax of a scalar: %v", err)
	}
	if empty := ops.SparseSoftmaxCrossEntropy(tensor.Zeros(tensor.Float32, 0, 4), tensor.Zeros(tensor.Int64, 0)); !empty.Shape().Equal(tensor.Shape{0}) {
		t.Errorf("empty batch: %v", empty.Shape())
	}
}

func TestBadInputErrors(t *testing.T) {
	m := tensor.Zeros(tensor.Float32, 2, 3)
	runBadInput(t, []badInput{
		{"broadcast", func() { ops.Add(m, tensor.Zeros(tensor.Float32, 4)) }, tensor.ErrShape,
			"ops: Add: shapes [2 3] and [4] are not broadcastable (inputs float32[2 3], float32[4])"},
		{"dtype", func() { ops.Add(m, tensor.Zeros(tensor.Float64, 2, 3)) }, tensor.ErrDType, "inputs must share a dtype"},
		{"float only", func() { ops.Exp(tensor.Zeros(tensor.Int32, 2)) }, tensor.ErrDType, "dtype int32 is not one of"},
		{"softplus of ints", func() { ops.Softplus(tensor.Zeros(tensor.Int64, 2)) }, tensor.ErrDType, "ops: Softplus: dtype int64 is not one of"},
		{"reshape", func() { ops.Reshape(m, 4, 2) }, tensor.ErrShape, "cannot reshape 6 elements into [4 2]"},
		{"transpose perm", func() { ops.Transpose(m, 0, 0) }, tensor.ErrAttr, "is not a permutation"},
		{"slice bounds", func() { ops.Slice(m, []int{0, 1}, []int{2, 4}, nil) }, tensor.ErrIndex, "limit 4 <= size 3"},
		{"slice rank", func() { ops.Slice(m, []int{0}, []int{2}, nil) }, tensor.ErrRank, "need 2 entries"},
		{"concat rank 0", func() { ops.Concatenate(0, tensor.Scalar(float32(1)), tensor.Scalar(float32(2))) }, tensor.ErrRank, "rank-0 values"},
		{"concat shapes", func() { ops.Concatenate(0, m, tensor.Zeros(tensor.Float32, 1, 2)) }, tensor.ErrShape, "all but dimension 0"},
		{"reduce axis", func() { ops.Sum(m, 2) }, tensor.ErrAxis, "axis 2 is out of range for rank 2"},
		{"reduce repeat", func() { ops.Sum(m, 1, -1) }, tensor.ErrAxis, "repeated"},
		{"mean of ints", func() { ops.Mean(tensor.Zeros(tensor.Int32, 2)) }, tensor.ErrDType, "Mean needs a float dtype"},
		{"matmul", func() { ops.MatMul(m, m) }, tensor.ErrShape, "contracting dimensions differ: 3 and 2"},
		{"matmul rank", func() { ops.MatMul(tensor.Scalar(float32(3)), m) }, tensor.ErrRank, "operands need rank 1 or more"},
		{"matmul vector", func() { ops.MatMul(tensor.Zeros(tensor.Float32, 3), m) }, tensor.ErrShape, "contracting dimensions differ: 3 and 2"},
		{"matmul batch", func() { ops.MatMul(tensor.Zeros(tensor.Float32, 2, 2, 3), tensor.Zeros(tensor.Float32, 3, 3, 2)) }, tensor.ErrShape, "batch dimensions [2] and [3] do not broadcast"},
		{"matmult rank", func() { ops.MatMulT(tensor.Zeros(tensor.Float32, 3), m, false, false) }, tensor.ErrRank, "rank 2 or more"},
		{"select pred", func() { ops.Where(m, m, m) }, tensor.ErrDType, "predicate must be bool"},
		{"pad negative", func() { ops.Pad(m, tensor.Scalar(float32(0)), ops.PadDim{Low: -3}, ops.PadDim{}) }, tensor.ErrShape, "leaves -1 elements"},
		{"bdims", func() { ops.BroadcastDims(ops.Add, m, tensor.Zeros(tensor.Float32, 3), 0) }, tensor.ErrShape, "cannot map"},
		{"label", func() {
			ops.SparseSoftmaxCrossEntropy(tensor.Zeros(tensor.Float32, 2, 3), tensor.FromSlice([]int32{0, 3}))
		}, tensor.ErrIndex, "label 3 at row 1"},
		{"nil input", func() { ops.Add(m, nil) }, tensor.ErrArity, "input 1 is nil"},
	})
}

func TestEveryOpDeclaresItsGradient(t *testing.T) {
	for _, op := range eager.Ops() {
		if op.Grad == nil && !op.NonDifferentiable {
			t.Errorf("op %s has no gradient rule and is not declared NonDifferentiable", op.Name)
		}
		if op.Grad != nil && op.NonDifferentiable {
			t.Errorf("op %s has a gradient rule but is declared NonDifferentiable", op.Name)
		}
	}
}

// MatMulT with a transposed right operand and few rows takes the row-dot
// path; it must agree with the transpose-and-multiply path.
func TestMatMulTransposedFewRows(t *testing.T) {
	for _, m := range []int{1, 3, 4, 5} {
		a := rnd(uint64(m), -1, 1, 2, m, 7)
		b := rnd(uint64(m+10), -1, 1, 2, 9, 7)
		got := ops.MatMulT(a, b, false, true)
		want := ops.MatMul(a, ops.Transpose(b, 0, 2, 1).Contiguous())
		check(t, "row dots", got, want.Shape(), tensor.ToSlice[float64](want))
		shared := rnd(uint64(m+20), -1, 1, 9, 7)
		check(t, "shared b", ops.MatMulT(a, shared, false, true), tensor.Shape{2, m, 9},
			tensor.ToSlice[float64](ops.MatMul(a, ops.Transpose(shared).Contiguous())))
		a2 := rnd(uint64(m+30), -1, 1, m, 7)
		check(t, "shared a", ops.MatMulT(a2, b, false, true), tensor.Shape{2, m, 9},
			tensor.ToSlice[float64](ops.MatMul(a2, ops.Transpose(b, 0, 2, 1).Contiguous())))
	}
}
