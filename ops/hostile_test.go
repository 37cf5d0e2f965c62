package ops_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Hostile sizes and options: each call fails with a typed error that names
// the function called (never a runtime panic, a wrapped-around size or a
// fatal out-of-memory), and no input changes.
func TestHostileSizesAndOptions(t *testing.T) {
	x16 := tensor.Zeros(tensor.Float32, 16)
	img := tensor.Zeros(tensor.Float32, 1, 4, 4, 1)
	f := tensor.Zeros(tensor.Float32, 2, 2, 1, 1)
	huge := 1 << 40
	cases := []struct {
		name, op string
		fn       func()
		kind     error
	}{
		{"Zeros 2^80", "Zeros", func() { tensor.Zeros(tensor.Float32, huge, huge) }, tensor.ErrShape},
		{"Zeros 4 TiB", "Zeros", func() { tensor.Zeros(tensor.Float32, huge) }, device.ErrOutOfMemory},
		{"FromSlice 2^80", "FromSlice", func() { tensor.FromSlice([]float32{}, huge, huge, 0) }, tensor.ErrShape},
		{"FullOf 2^80", "FullOf", func() { tensor.FullOf(tensor.Float32, 1, huge, huge) }, tensor.ErrShape},
		{"RandNormal", "RandNormal", func() { tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, huge, huge) }, tensor.ErrShape},
		{"RngUniform 4 TiB", "RandUniform", func() { ops.RngUniform(tensor.NewRNG(1), tensor.Float32, 0, 1, huge) }, device.ErrOutOfMemory},
		{"Reshape wraps to 16", "Reshape", func() { ops.Reshape(x16, 1<<62+4, 4) }, tensor.ErrShape},
		{"BroadcastTo 2^80", "BroadcastTo", func() { ops.BroadcastTo(x16, huge, huge, 16) }, tensor.ErrShape},
		{"Broadcast 4 TiB", "Broadcast", func() { ops.Broadcast(x16, huge) }, device.ErrOutOfMemory},
		{"Pad 2^80", "Pad", func() { ops.Pad(x16, tensor.Scalar(float32(0)), ops.PadDim{Interior: math.MaxInt / 2}) }, tensor.ErrShape},
		{"Pad MaxInt edges", "Pad", func() { ops.Pad(x16, tensor.Scalar(float32(0)), ops.PadDim{Low: math.MaxInt, High: math.MaxInt}) }, tensor.ErrShape},
		{"OneHot depth 2^62", "OneHot", func() { ops.OneHot(tensor.FromSlice([]int32{1, 2}), 1<<62, tensor.Float32) }, tensor.ErrShape},
		{"OneHot depth -1", "OneHot", func() { ops.OneHot(tensor.FromSlice([]int32{1}), -1, tensor.Float32) }, tensor.ErrValue},
		{"OneHot float indices", "OneHot", func() { ops.OneHot(tensor.FromSlice([]float32{1}), 3, tensor.Float32) }, tensor.ErrDType},
		{"MaxPool2D huge padding", "MaxPool2D", func() {
			ops.MaxPool2D(img, ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Explicit, Explicit: [2][2]int{{math.MaxInt, 1}, {0, 0}}})
		}, tensor.ErrShape},
		{"MaxPool2D negative stride", "MaxPool2D", func() { ops.MaxPool2D(img, ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{-1, 1}}) }, tensor.ErrAttr},
		{"Iota 2^62", "Iota", func() { ops.Iota(tensor.Int64, []int{1 << 31, 1 << 31}, 0) }, device.ErrOutOfMemory},
		{"Iota negative", "Iota", func() { ops.Iota(tensor.Int64, []int{-2}, 0) }, tensor.ErrShape},
		{"Tile overflow", "Tile", func() { ops.Tile(x16, math.MaxInt/4) }, tensor.ErrShape},
		{"Slice stride MaxInt", "", nil, nil},
		{"Conv2D negative strides", "Conv2D", func() { ops.Conv2D(img, f, ops.Conv2DOpts{Strides: [2]int{-1, 1}}) }, tensor.ErrAttr},
		{"Conv2D negative dilation", "Conv2D", func() { ops.Conv2D(img, f, ops.Conv2DOpts{Dilations: [2]int{-100000, 1}}) }, tensor.ErrAttr},
		{"Conv2D padding mode 9", "Conv2D", func() { ops.Conv2D(img, f, ops.Conv2DOpts{Padding: 9}) }, tensor.ErrAttr},
		{"Conv2D huge padding", "Conv2D", func() {
			ops.Conv2D(img, f, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{math.MaxInt, 2}, {0, 0}}})
		}, tensor.ErrShape},
		{"Conv2DBackpropInput mode 7", "Conv2DBackpropInput", func() {
			ops.Conv2DBackpropInput(img.Shape(), f, tensor.Zeros(tensor.Float32, 1, 3, 3, 1), ops.Conv2DOpts{Padding: 7})
		}, tensor.ErrAttr},
		{"Conv strides 0", "Conv", func() {
			ops.Conv(img, f, ops.ConvOpts{Strides: []int{0, 1}, Dims: ops.NHWCDims(2)})
		}, tensor.ErrAttr},
		{"Dropout int32", "Dropout", func() { ops.Dropout(tensor.Zeros(tensor.Int32, 3), 0.5, tensor.NewRNG(1)) }, tensor.ErrDType},
		{"Arange NaN", "Arange", func() { tensor.Arange(0, math.NaN(), 1) }, tensor.ErrValue},
		{"Arange 1e300", "Arange", func() { tensor.Arange(0, 1e300, 1) }, tensor.ErrShape},
		{"Arange 1e15", "Arange", func() { tensor.Arange[int64](0, 1e15, 1) }, device.ErrOutOfMemory},
		{"Dim 5 of rank 2", "Dim", func() { tensor.Zeros(tensor.Float32, 2, 3).Dim(5) }, tensor.ErrAxis},
		{"Dim -3 of rank 2", "Dim", func() { tensor.Zeros(tensor.Float32, 2, 3).Dim(-3) }, tensor.ErrAxis},
	}
	for _, c := range cases {
		if c.fn == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Catch(c.fn)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("got %v, want kind %v", err, c.kind)
			}
			var te *tensor.Error
			if !errors.As(err, &te) || te.Op != c.op {
				t.Errorf("the error names %q, want %q: %v", te.Op, c.op, err)
			}
			if !strings.Contains(err.Error(), "hostile_test.go") {
				t.Errorf("%v does not name the caller", err)
			}
		})
	}
	// A stride beyond the slice is one element, not an overflow.
	s := ops.Slice(x16, []int{3}, []int{16}, []int{math.MaxInt})
	if !s.Shape().Equal(tensor.Shape{1}) {
		t.Errorf("Slice with stride MaxInt: shape %v, want [1]", s.Shape())
	}
	if got := tensor.ToSlice[float32](x16); len(got) != 16 || got[0] != 0 {
		t.Errorf("x16 changed: %v", got)
	}
}

// Errors name the function the user called, not an op it is built from.
func TestCompositeErrorsNameTheCalledOp(t *testing.T) {
	m := tensor.Zeros(tensor.Float32, 2, 3)
	cases := []struct {
		op string
		fn func()
	}{
		{"ReshapeDims", func() { ops.ReshapeDims(m, []int{0, 0}, 6) }},
		{"ReshapeDims", func() { ops.ReshapeDims(m, []int{1, 0}, 5) }},
		{"Stack", func() { ops.Stack(5, m, m) }},
		{"Stack", func() { ops.Stack(0, m, tensor.Zeros(tensor.Float64, 2, 3)) }},
		{"Iota", func() { ops.Iota(tensor.Float32, []int{2, 3}, 2) }},
		{"Tile", func() { ops.Tile(m, 2, -9) }},
		{"Tile", func() { ops.Tile(m, 2) }},
		{"OneHot", func() { ops.OneHot(tensor.FromSlice([]float64{1}), 2, tensor.Float32) }},
		{"SoftmaxCrossEntropy", func() { ops.SoftmaxCrossEntropy(m, tensor.Zeros(tensor.Float32, 3, 2)) }},
		{"SoftmaxCrossEntropy", func() { ops.SoftmaxCrossEntropy(m, tensor.Zeros(tensor.Float64, 2, 3)) }},
		{"Sum", func() { ops.Sum(m, 4) }},
		{"Mean", func() { ops.Mean(m, 0, 0) }},
		{"Prod", func() { ops.Prod(m, -3) }},
		{"Amax", func() { ops.Amax(m, 2) }},
		{"Amin", func() { ops.Amin(m, 2) }},
		{"Any", func() { ops.Any(tensor.Zeros(tensor.Bool, 2), 1) }},
		{"All", func() { ops.All(tensor.Zeros(tensor.Bool, 2), 1) }},
		{"ExpandDims", func() { ops.ExpandDims(m, 4) }},
		{"Squeeze", func() { ops.Squeeze(m, 0) }},
		{"Unstack", func() { ops.Unstack(m, 2) }},
		{"Split", func() { ops.Split(m, 1, []int{1, 1}) }},
		{"Collapse", func() { ops.Collapse(m, 0, 2) }},
		{"Broadcast", func() { ops.Broadcast(m, -1) }},
		{"SumTo", func() { ops.SumTo(m, tensor.Shape{4}) }},
		{"MatMul", func() { ops.MatMul(m, m) }},
		{"Dot", func() { ops.Dot(m, m) }},
		{"DotGeneral", func() { ops.DotGeneral(m, m, ops.DotDims{LhsContract: []int{1}, RhsContract: []int{0}}) }},
		{"Sort", func() { ops.Sort(m, 2, false) }},
		{"TopK", func() { ops.TopK(m, 4) }},
		{"SortKeyVal", func() { ops.SortKeyVal(m, m, 3, false) }},
		{"LogSoftmax", func() { ops.LogSoftmax(m, 2) }},
		{"Softmax", func() { ops.Softmax(tensor.Zeros(tensor.Int32, 2), 0) }},
		{"Clip", func() { ops.Clip(m, tensor.Zeros(tensor.Float32, 4), m) }},
		{"Where", func() { ops.Where(m, m, m) }},
		{"BiasAdd", func() { ops.BiasAdd(m, tensor.Zeros(tensor.Float64, 3), ops.NHWC) }},
		{"L2Normalize", func() { ops.L2Normalize(m, 3, 1e-12) }},
		{"LeakyRelu", func() { ops.LeakyRelu(tensor.Zeros(tensor.Bool, 2), 0.1) }},
		{"Elu", func() { ops.Elu(tensor.Zeros(tensor.Int32, 2)) }},
		{"Selu", func() { ops.Selu(tensor.Zeros(tensor.Int64, 2)) }},
		{"Celu", func() { ops.Celu(tensor.Zeros(tensor.Float32, 2), 0) }},
		{"Celu", func() { ops.Celu(tensor.Zeros(tensor.Float32, 2), math.Inf(1)) }},
		{"Prelu", func() { ops.Prelu(tensor.Zeros(tensor.Float32, 2, 3), tensor.Zeros(tensor.Float32, 2)) }},
		{"Prelu", func() { ops.Prelu(tensor.Zeros(tensor.Float32, 2, 3), tensor.Zeros(tensor.Float64, 3)) }},
		{"Relu6", func() { ops.Relu6(tensor.Zeros(tensor.Int32, 2)) }},
		{"HardSigmoid", func() { ops.HardSigmoid(tensor.Zeros(tensor.Uint8, 2)) }},
		{"HardSwish", func() { ops.HardSwish(tensor.Zeros(tensor.Bool, 2)) }},
		{"Silu", func() { ops.Silu(tensor.Zeros(tensor.Int32, 2)) }},
		{"Mish", func() { ops.Mish(tensor.Zeros(tensor.Int32, 2)) }},
		{"Softsign", func() { ops.Softsign(tensor.Zeros(tensor.Int32, 2)) }},
		{"Erfinv", func() { ops.Erfinv(tensor.Zeros(tensor.Int64, 2)) }},
		{"Xlogy", func() { ops.Xlogy(tensor.Zeros(tensor.Int32, 2), tensor.Zeros(tensor.Int32, 2)) }},
		{"Xlog1py", func() { ops.Xlog1py(tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Float64, 2)) }},
		{"Logit", func() { ops.Logit(tensor.Zeros(tensor.Bool, 2)) }},
		{"LogitEps", func() { ops.LogitEps(tensor.Zeros(tensor.Float32, 2), math.NaN()) }},
		{"FloorDiv", func() { ops.FloorDiv(tensor.Zeros(tensor.Bool, 2), tensor.Zeros(tensor.Bool, 2)) }},
		{"Mod", func() { ops.Mod(tensor.Zeros(tensor.Int32, 2), tensor.Zeros(tensor.Int64, 2)) }},
		{"BesselI0", func() { ops.BesselI0(tensor.Zeros(tensor.Int32, 2)) }},
		{"BesselI1", func() { ops.BesselI1(tensor.Zeros(tensor.Uint8, 2)) }},
		{"BesselI0e", func() { ops.BesselI0e(tensor.Zeros(tensor.Bool, 2)) }},
		{"BesselI1e", func() { ops.BesselI1e(tensor.Zeros(tensor.Int64, 2)) }},
		{"Erfc", func() { ops.Erfc(tensor.Zeros(tensor.Int32, 2)) }},
		{"Erfcx", func() { ops.Erfcx(tensor.Zeros(tensor.Bool, 2)) }},
		{"Ndtr", func() { ops.Ndtr(tensor.Zeros(tensor.Uint8, 2)) }},
		{"LogNdtr", func() { ops.LogNdtr(tensor.Zeros(tensor.Int64, 2)) }},
		{"Ndtri", func() { ops.Ndtri(tensor.Zeros(tensor.Int32, 2)) }},
		{"Lgamma", func() { ops.Lgamma(tensor.Zeros(tensor.Int32, 2)) }},
		{"Digamma", func() { ops.Digamma(tensor.Zeros(tensor.Uint8, 2)) }},
		{"Polygamma", func() { ops.Polygamma(2, tensor.Zeros(tensor.Int64, 2)) }},
		{"Zeta", func() { ops.Zeta(tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Float64, 2)) }},
		{"Igamma", func() { ops.Igamma(tensor.Zeros(tensor.Int64, 2), tensor.Zeros(tensor.Int64, 2)) }},
		{"Igammac", func() { ops.Igammac(tensor.Zeros(tensor.Float64, 2), tensor.Zeros(tensor.Float64, 3)) }},
		{"Cholesky", func() { ops.Cholesky(tensor.Zeros(tensor.Int32, 2, 2)) }},
		{"TriangularSolve", func() {
			ops.TriangularSolve(tensor.Zeros(tensor.Float64, 2, 2), tensor.Zeros(tensor.Float64, 3, 1), ops.TriangularSolveOpts{})
		}},
		{"CholeskySolve", func() { ops.CholeskySolve(tensor.Zeros(tensor.Float64, 2, 3), tensor.Zeros(tensor.Float64, 2, 1)) }},
		{"Solve", func() { ops.Solve(tensor.Zeros(tensor.Int64, 2, 2), tensor.Zeros(tensor.Int64, 2, 1)) }},
		{"Inverse", func() { ops.Inverse(tensor.Zeros(tensor.Float32, 2, 3)) }},
		{"Det", func() { ops.Det(tensor.Zeros(tensor.Float16, 2, 2)) }},
		{"Slogdet", func() { ops.Slogdet(tensor.Zeros(tensor.Float64, 3)) }},
		{"LU", func() { ops.LU(tensor.Zeros(tensor.Uint8, 2, 2)) }},
		{"LUSolve", func() {
			ops.LUSolve(tensor.Zeros(tensor.Float64, 2, 2), tensor.Zeros(tensor.Int32, 3), tensor.Zeros(tensor.Float64, 2, 1), ops.LUSolveOpts{})
		}},
		{"MatrixExp", func() { ops.MatrixExp(tensor.Zeros(tensor.Float64, 3, 2)) }},
		{"LUUnpack", func() { ops.LUUnpack(tensor.Zeros(tensor.Float64, 2, 2), tensor.Zeros(tensor.Float64, 2)) }},
		{"Eigh", func() { ops.Eigh(tensor.Zeros(tensor.Float64, 2, 3)) }},
		{"QR", func() { ops.QR(tensor.Zeros(tensor.Int32, 2, 3)) }},
		{"SVD", func() { ops.SVD(tensor.Zeros(tensor.Float64, 4)) }},
		{"Diagonal", func() { ops.Diagonal(tensor.Zeros(tensor.Float64, 2, 3)) }},
		{"Trace", func() { ops.Trace(tensor.Zeros(tensor.Float64, 3)) }},
		{"Lstsq", func() { ops.Lstsq(tensor.Zeros(tensor.Float64, 3, 2), tensor.Zeros(tensor.Float64, 2, 1)) }},
		{"Pinv", func() { ops.Pinv(tensor.Zeros(tensor.Int64, 2, 2)) }},
		{"MatrixNorm", func() { ops.MatrixNorm(tensor.Zeros(tensor.Float64, 2, 2), "max") }},
		{"GeluTanh", func() { ops.GeluTanh(tensor.Zeros(tensor.Int32, 2)) }},
		{"AvgPool2D", func() { ops.AvgPool2D(tensor.Zeros(tensor.Bool, 1, 2, 2, 1), ops.PoolOpts{Size: [2]int{2, 2}}) }},
		{"MaxPool2D", func() { ops.MaxPool2D(tensor.Zeros(tensor.Bool, 1, 2, 2, 1), ops.PoolOpts{Size: [2]int{2, 2}}) }},
		{"DepthwiseConv2D", func() {
			ops.DepthwiseConv2D(tensor.Zeros(tensor.Float32, 1, 4, 4, 2), tensor.Zeros(tensor.Float32, 2, 2, 3, 1), ops.Conv2DOpts{})
		}},
		{"Conv2D", func() {
			ops.Conv2D(tensor.Zeros(tensor.Float32, 1, 4, 4, 2), tensor.Zeros(tensor.Float32, 5, 2, 2, 1), ops.Conv2DOpts{})
		}},
		{"RngNormal", func() { ops.RngNormal(tensor.NewRNG(1), tensor.Int32, 0, 1, 2) }},
	}
	for _, c := range cases {
		err := tensor.Catch(c.fn)
		var te *tensor.Error
		if !errors.As(err, &te) {
			t.Errorf("%s: no typed error: %v", c.op, err)
			continue
		}
		if te.Op != c.op || !strings.HasPrefix(err.Error(), "ops: "+c.op+": ") {
			t.Errorf("%s: the error names %q: %v", c.op, te.Op, err)
		}
		if !strings.Contains(err.Error(), "hostile_test.go") {
			t.Errorf("%s: %v does not name the caller", c.op, err)
		}
	}
}
