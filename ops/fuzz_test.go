package ops_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// FuzzOpShapes calls an op family with shapes, attributes, dtypes and
// values read from the fuzzer's bytes: whatever they are, the call returns
// a tensor or panics with a *tensor.Error that Catch recovers (never a
// runtime error in a kernel, which dispatch reports as ErrInternal, and
// never another panic), and it leaves its inputs unchanged.
func FuzzOpShapes(f *testing.F) {
	for fam := range len(fuzzFamilies) {
		f.Add([]byte{byte(fam), 2, 3, 4, 1, 0, 2, 5, 1, 1, 3, 0, 7, 2, 2, 2, 1, 0, 1})
		f.Add([]byte{byte(fam), 0, 0, 4, 0, 3, 255, 1, 128, 6, 2, 9, 0, 0, 1})
		f.Add([]byte{byte(fam), 4, 1, 1, 1, 1, 3, 3, 200, 7, 250, 1, 2, 3, 4, 5, 6, 7, 8})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		z := &fuzzBytes{b: b}
		fam := fuzzFamilies[z.intn(len(fuzzFamilies))]
		var inputs []*tensor.Tensor
		var before [][]byte
		keep := func(xs ...*tensor.Tensor) {
			for _, x := range xs {
				inputs = append(inputs, x)
				before = append(before, append([]byte(nil), x.Contiguous().HostBytes()...))
			}
		}
		err := tensor.Catch(func() { fam.run(z, keep) })
		if errors.Is(err, tensor.ErrInternal) {
			t.Fatalf("%s: %v", fam.name, err)
		}
		for i, x := range inputs {
			if got := x.Contiguous().HostBytes(); string(got) != string(before[i]) {
				t.Fatalf("%s changed its input %d (%v)", fam.name, i, err)
			}
		}
	})
}

// fuzzBytes reads choices from the fuzzer's bytes (zeros once they run
// out).
type fuzzBytes struct {
	b []byte
	i int
}

func (z *fuzzBytes) byte() byte {
	if z.i >= len(z.b) {
		return 0
	}
	z.i++
	return z.b[z.i-1]
}

// intn returns a choice in [0, n).
func (z *fuzzBytes) intn(n int) int { return int(z.byte()) % n }

// small returns an int in [-2, 6]: sizes, axes, pads and strides around
// their valid ranges.
func (z *fuzzBytes) small() int { return z.intn(9) - 2 }

func (z *fuzzBytes) ints(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = z.bound()
	}
	return out
}

// fuzzExtremes are values at the ends of int's range, where a size
// computed naively overflows; each is far beyond any memory, so a result
// that took one as a size is refused, not allocated.
var fuzzExtremes = []int{math.MaxInt, -math.MaxInt, math.MinInt, math.MaxInt - 1, 1 << 40, -(1 << 40)}

// bound returns small() mostly and, one time in eight, an extreme: for
// bounds, steps and sizes.
func (z *fuzzBytes) bound() int {
	if z.intn(8) == 7 {
		return fuzzExtremes[z.intn(len(fuzzExtremes))]
	}
	return z.small()
}

// shape returns a shape of rank 0-4 with dims 0-5.
func (z *fuzzBytes) shape() []int {
	s := make([]int, z.intn(5))
	for i := range s {
		s[i] = z.intn(6)
	}
	return s
}

var fuzzDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool,
	tensor.BFloat16, tensor.Float16, tensor.Float8E4M3, tensor.Float8E5M2}

// tensor returns a tensor of shape and a dtype the bytes pick (float most
// often), with values from the bytes: NaN, infinities and huge values
// included.
func (z *fuzzBytes) tensor(shape []int) *tensor.Tensor {
	dt := tensor.Float32
	if z.intn(4) == 0 {
		dt = fuzzDTypes[z.intn(len(fuzzDTypes))]
	}
	n := tensor.Shape(shape).NumElements()
	v := make([]float64, n)
	special := []float64{0, 1, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -0.5, 2.5, 3}
	for i := range v {
		v[i] = special[z.intn(len(special))]
	}
	return ops.Cast(tensor.FromSlice(v, shape...).View(shape, nil), dt)
}

func (z *fuzzBytes) floats(shape []int) *tensor.Tensor {
	return ops.Cast(z.tensor(shape), []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16}[z.intn(4)])
}

func (z *fuzzBytes) indices(shape []int) *tensor.Tensor {
	v := make([]int64, tensor.Shape(shape).NumElements())
	for i := range v {
		v[i] = int64(z.small())
	}
	return tensor.FromSlice(v, shape...).View(shape, nil)
}

type fuzzFamily struct {
	name string
	run  func(z *fuzzBytes, keep func(...*tensor.Tensor))
}

var fuzzFamilies = []fuzzFamily{
	{"unary", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		fns := []func(*tensor.Tensor) *tensor.Tensor{ops.Neg, ops.Abs, ops.Sign, ops.Square, ops.Relu, ops.Exp, ops.Log,
			ops.Sqrt, ops.Rsqrt, ops.Tanh, ops.Sigmoid, ops.Softplus, ops.Gelu, ops.GeluTanh, ops.Elu, ops.Sin, ops.Cos,
			ops.Log1p, ops.Expm1, ops.Erf, ops.Floor, ops.Ceil, ops.Round, ops.IsFinite, ops.LogicalNot, ops.Identity}
		fns[z.intn(len(fns))](x)
	}},
	{"binary", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		a, b := z.tensor(z.shape()), z.tensor(z.shape())
		keep(a, b)
		fns := []func(a, b *tensor.Tensor) *tensor.Tensor{ops.Add, ops.Sub, ops.Mul, ops.Div, ops.Rem, ops.Max,
			ops.Min, ops.Pow, ops.Eq, ops.Lt, ops.Ge, ops.LogicalAnd}
		fns[z.intn(len(fns))](a, b)
	}},
	{"reduce", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		dims := z.ints(z.intn(3))
		ops.Reduce(x, ops.Reduction{Kind: ops.ReduceKind(z.intn(6)), Dims: dims, KeepDims: z.intn(2) == 0})
	}},
	{"shape", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		switch z.intn(8) {
		case 0:
			ops.Reshape(x, z.ints(z.intn(4))...)
		case 1:
			ops.Transpose(x, z.ints(x.Rank())...)
		case 2:
			ops.BroadcastTo(x, z.ints(z.intn(5))...)
		case 3:
			ops.Tile(x, z.ints(x.Rank())...)
		case 4:
			ops.Rev(x, z.ints(z.intn(3))...)
		case 5:
			cumulative := ops.Cumsum
			if z.intn(2) == 0 {
				cumulative = ops.Cumprod
			}
			cumulative(x, z.small(), z.intn(2) == 0, z.intn(2) == 0)
		case 6:
			ops.ExpandDims(x, z.small())
		default:
			ops.Squeeze(x, z.ints(z.intn(2))...)
		}
	}},
	{"slice", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		r := max(x.Rank()+z.intn(2)-z.intn(2), 0)
		switch z.intn(3) {
		case 0:
			ops.Slice(x, z.ints(r), z.ints(r), z.ints(r))
		case 1:
			cfg := make([]ops.PadDim, r)
			for i := range cfg {
				cfg[i] = ops.PadDim{Low: z.small(), High: z.small(), Interior: z.small()}
			}
			ops.Pad(x, ops.ScalarLike(x, 0), cfg...)
		default:
			ops.DynamicSlice(x, z.indices([]int{r}), z.ints(r)...)
		}
	}},
	{"join", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		a, b := z.tensor(z.shape()), z.tensor(z.shape())
		keep(a, b)
		switch z.intn(4) {
		case 0:
			ops.Concatenate(z.small(), a, b)
		case 1:
			ops.Stack(z.small(), a, b)
		case 2:
			ops.DynamicUpdateSlice(a, b, z.indices([]int{a.Rank()}))
		default:
			ops.Where(ops.Gt(a, b), a, b)
		}
	}},
	{"matmul", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		a, b := z.tensor(z.shape()), z.tensor(z.shape())
		keep(a, b)
		switch z.intn(4) {
		case 0:
			ops.MatMulT(a, b, z.intn(2) == 0, z.intn(2) == 0)
		case 1:
			ops.Dot(a, b)
		case 2:
			scale := func() *tensor.Tensor { return z.tensor(nil) }
			out := []tensor.DType{tensor.Float32, tensor.BFloat16, tensor.Float16, tensor.Int32}[z.intn(4)]
			ops.ScaledMatMul(a, b, scale(), scale(), out)
		default:
			ops.DotGeneral(a, b, ops.DotDims{LhsBatch: z.ints(z.intn(2)), RhsBatch: z.ints(z.intn(2)),
				LhsContract: z.ints(z.intn(2)), RhsContract: z.ints(z.intn(2))})
		}
	}},
	{"softmax", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		switch z.intn(4) {
		case 0:
			ops.Softmax(x, z.small())
		case 1:
			ops.LogSoftmax(x, z.small())
		case 2:
			ops.SparseSoftmaxCrossEntropy(x, z.indices(z.shape()))
		default:
			ops.OneHot(z.indices(z.shape()), z.small(), fuzzDTypes[z.intn(len(fuzzDTypes))])
		}
	}},
	{"conv", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x, w := z.tensor(z.shape()), z.tensor(z.shape())
		keep(x, w)
		o := ops.Conv2DOpts{Strides: [2]int{z.small(), z.small()}, Dilations: [2]int{z.small(), z.small()},
			Padding: ops.PaddingMode(z.intn(4)), Explicit: [2][2]int{{z.small(), z.small()}, {z.small(), z.small()}},
			Format: ops.DataFormat(z.intn(3))}
		switch z.intn(4) {
		case 0:
			ops.Conv2D(x, w, o)
		case 1:
			ops.DepthwiseConv2D(x, w, o)
		case 2:
			ops.Conv2DBackpropInput(z.shape(), w, x, o)
		default:
			ops.Conv2DBackpropFilter(x, z.shape(), w, o)
		}
	}},
	{"pool", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		o := ops.PoolOpts{Size: [2]int{z.small(), z.small()}, Strides: [2]int{z.small(), z.small()},
			Padding: ops.PaddingMode(z.intn(4)), Explicit: [2][2]int{{z.small(), z.small()}, {z.small(), z.small()}},
			Format: ops.DataFormat(z.intn(3))}
		if z.intn(2) == 0 {
			ops.MaxPool2D(x, o)
		} else {
			ops.AvgPool2D(x, o)
		}
	}},
	{"window", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		r := x.Rank()
		w := ops.Window{Dims: z.ints(r), Strides: z.ints(r), BaseDilation: z.ints(r), WindowDilation: z.ints(r)}
		for range r {
			w.Padding = append(w.Padding, [2]int{z.small(), z.small()})
		}
		switch z.intn(3) {
		case 0:
			ops.ReduceWindow(x, ops.ScalarLike(x, 0), ops.ReduceKind(z.intn(5)), w)
		case 1:
			ops.ExtractPatches(x, ops.ScalarLike(x, 0), w)
		default:
			ops.SelectAndScatter(x, z.tensor(z.shape()), ops.ScalarLike(x, 0), ops.SelectKind(z.intn(3)), w)
		}
	}},
	{"gather", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		idx := z.indices(z.shape())
		switch z.intn(5) {
		case 0:
			ops.Gather(x, idx, z.small())
		case 1:
			ops.TakeAlongAxis(x, idx, z.small())
		case 2:
			ops.ScatterAdd(x, idx, z.tensor(z.shape()), z.small())
		case 3:
			ops.Scatter(x, idx, z.tensor(z.shape()), z.small())
		default:
			ops.OneHot(idx, z.small(), tensor.Float32)
		}
	}},
	{"sort", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		switch z.intn(5) {
		case 0:
			ops.Sort(x, z.small(), z.intn(2) == 0)
		case 1:
			ops.ArgSort(x, z.small(), z.intn(2) == 0)
		case 2:
			ops.TopK(x, z.small())
		case 3:
			ops.ArgMax(x, z.small())
		default:
			ops.ArgMin(x, z.small())
		}
	}},
	{"index", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		items := make([]any, x.Rank())
		want := make(tensor.Shape, x.Rank())
		for d := range items {
			b := [3]*int{}
			for k := range b {
				if z.intn(3) > 0 {
					v := z.bound()
					b[k] = &v
				}
			}
			if b[2] != nil && *b[2] == 0 {
				b[2] = nil
			}
			r := ops.Range{}
			switch {
			case b[0] != nil && b[1] != nil:
				r = ops.R(*b[0], *b[1])
			case b[0] != nil:
				r = ops.From(*b[0])
			case b[1] != nil:
				r = ops.Until(*b[1])
			}
			if b[2] != nil {
				r = r.Step(*b[2])
			}
			items[d], want[d] = r, pythonSliceLen(x.Dim(d), b)
		}
		// Ranges alone never fail, and take as many positions as
		// Python's slice.indices gives (computed here without overflow).
		if y := ops.Index(x, items...); !y.Shape().Equal(want) {
			panic(fmt.Sprintf("Index(%v, %v): shape %v, Python's %v", x.Shape(), items, y.Shape(), want))
		}
	}},
	{"transformer", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		// Mostly consistent shapes (a batch, then positions and features),
		// one operand in four drawn at random instead.
		like := func(s []int) []int {
			if z.intn(4) == 0 {
				return z.shape()
			}
			out := append([]int(nil), s...)
			if len(out) > 0 && z.intn(2) == 0 {
				out[len(out)-1] = z.intn(6)
			}
			return out
		}
		base := z.shape()
		tp := tape.New()
		switch z.intn(5) {
		case 0, 1:
			x := z.tensor(base)
			c := 0
			if len(base) > 0 {
				c = base[len(base)-1]
			}
			g, b := z.tensor(like([]int{c})), z.tensor(like([]int{c}))
			keep(x, g, b)
			tp.Watch(x, g)
			var y *tensor.Tensor
			switch z.intn(3) {
			case 0:
				y = ops.LayerNorm(x, g, b, float64(z.small()))
			case 1:
				y = ops.RMSNorm(x, g, float64(z.small()))
			default: // features along any axis, in range or not
				y, _, _ = ops.BatchNorm(x, g, b, z.small()-3, float64(z.small()))
			}
			tp.Gradient(ops.Sum(y), x, g)
		case 2, 3:
			q, k, v := z.tensor(base), z.tensor(like(base)), z.tensor(like(base))
			var mask *tensor.Tensor
			if z.intn(3) == 0 {
				mask = ops.Cast(z.tensor(z.shape()), tensor.Bool)
			}
			keep(q, k, v)
			causal, scale := z.intn(2) == 0, float64(z.small())
			if z.intn(2) == 0 {
				ops.AttentionWeights(q, k, mask, causal, scale)
				return
			}
			tp.Watch(q, k, v)
			tp.Gradient(ops.Sum(ops.Attention(q, k, v, mask, causal, scale)), q, k, v)
		default:
			x := z.tensor(base)
			keep(x)
			tp.Watch(x)
			if parts := ops.Split(x, z.small(), z.ints(z.intn(4))); len(parts) > 0 { // no sizes: no parts, for an empty axis
				tp.Gradient(ops.Sum(parts[0]), x)
			}
		}
	}},
	{"cast", func(z *fuzzBytes, keep func(...*tensor.Tensor)) {
		x := z.tensor(z.shape())
		keep(x)
		ops.Cast(x, fuzzDTypes[z.intn(len(fuzzDTypes))])
	}},
}

// pythonSliceLen is len(range(*slice(start, stop, step).indices(n))) for
// the bounds b (nil: left out), in arbitrary precision.
func pythonSliceLen(n int, b [3]*int) int {
	step := big.NewInt(1)
	if b[2] != nil {
		step = big.NewInt(int64(*b[2]))
	}
	bn := big.NewInt(int64(n))
	clamp := func(v *big.Int, lo, hi int64) *big.Int {
		if v.Sign() < 0 {
			v.Add(v, bn)
		}
		if v.Cmp(big.NewInt(lo)) < 0 {
			return big.NewInt(lo)
		}
		if v.Cmp(big.NewInt(hi)) > 0 {
			return big.NewInt(hi)
		}
		return v
	}
	// Python's defaults and clamps: [0, n] walking forwards, [-1, n-1]
	// walking backwards.
	lo, hi, start, stop := int64(0), int64(n), int64(0), int64(n)
	if step.Sign() < 0 {
		lo, hi, start, stop = -1, int64(n)-1, int64(n)-1, -1
	}
	resolve := func(v *int, def int64) *big.Int {
		if v == nil {
			return big.NewInt(def)
		}
		return clamp(big.NewInt(int64(*v)), lo, hi)
	}
	first, last := resolve(b[0], start), resolve(b[1], stop)
	// ceil((stop-start)/step), at least 0
	span := new(big.Int).Sub(last, first)
	if span.Sign() != step.Sign() || span.Sign() == 0 {
		return 0
	}
	q, m := new(big.Int).QuoRem(span, step, new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return int(q.Int64())
}
