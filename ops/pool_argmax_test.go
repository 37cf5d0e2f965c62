package ops_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// argmaxPools are poolings whose choices the tests keep: disjoint and
// overlapping windows, padding on both sides, both layouts.
var argmaxPools = []struct {
	shape []int
	o     ops.PoolOpts
}{
	{[]int{2, 4, 6, 3}, ops.PoolOpts{Size: [2]int{2, 2}}},
	{[]int{1, 5, 7, 2}, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Same}},
	{[]int{2, 3, 5, 6}, ops.PoolOpts{Size: [2]int{2, 3}, Strides: [2]int{1, 2}, Format: ops.NCHW}},
	{[]int{1, 2, 4, 4}, ops.PoolOpts{Size: [2]int{3, 2}, Padding: ops.Explicit, Explicit: [2][2]int{{2, 2}, {1, 0}}, Format: ops.NCHW}},
}

// MaxPool2DWithArgmax pools as MaxPool2D does, its taps name the
// elements SelectAndScatter chooses, and MaxUnpool2D of the upstream
// gradient is MaxPool2D's gradient.
func TestMaxPool2DWithArgmaxAgreesWithMaxPool2D(t *testing.T) {
	for i, c := range argmaxPools {
		x := rnd(uint64(i+1), -3, 3, c.shape...)
		// Ties and a NaN: the first of equal taps wins, a NaN beats numbers.
		vals := tensor.ToSlice[float64](x)
		vals[1], vals[7] = vals[0], math.NaN()
		x = tensor.FromSlice(vals, c.shape...)
		pooled, taps := ops.MaxPool2DWithArgmax(x, c.o)
		want := ops.MaxPool2D(x, c.o)
		if !slices.EqualFunc(tensor.ToSlice[float64](pooled), tensor.ToSlice[float64](want), func(a, b float64) bool { return a == b || a != a && b != b }) {
			t.Errorf("case %d: pooled %v, MaxPool2D %v", i, pooled, want)
		}
		if taps.DType() != tensor.Uint8 || !taps.Shape().Equal(want.Shape()) {
			t.Errorf("case %d: taps are %v %v", i, taps.DType(), taps.Shape())
		}
		dy := rnd(uint64(i+9), -1, 1, want.Shape()...)
		tp := tape.New()
		tp.Watch(x)
		y := ops.MaxPool2D(x, c.o)
		g := tp.Gradient(ops.Sum(ops.Mul(y, dy)), x)[0]
		unpooled := ops.MaxUnpool2D(dy, taps, c.shape, c.o)
		if !slices.Equal(tensor.ToSlice[float64](unpooled), tensor.ToSlice[float64](g)) {
			t.Errorf("case %d: MaxUnpool2D %v, the gradient of MaxPool2D %v", i, unpooled, g)
		}
	}
}

func TestMaxPool2DWithArgmaxTaps(t *testing.T) {
	// A 3x3 image, 2x2 windows at a stride of 2 with SAME padding: the
	// last row and column of windows lie half on padding.
	x := tensor.FromSlice([]float32{1, 5, 2, 7, 3, 7, 0, 9, 4}, 1, 3, 3, 1)
	o := ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}, Padding: ops.Explicit, Explicit: [2][2]int{{0, 1}, {0, 1}}}
	pooled, taps := ops.MaxPool2DWithArgmax(x, o)
	check(t, "pooled", pooled, tensor.Shape{1, 2, 2, 1}, f32(7, 7, 9, 4))
	if got := tensor.ToSlice[uint8](taps); !slices.Equal(got, []uint8{2, 2, 1, 0}) {
		t.Errorf("taps %v, want [2 2 1 0]", got)
	}
	// A window wholly on padding: PoolNoTap, -Inf, and nothing unpooled.
	o = ops.PoolOpts{Size: [2]int{1, 1}, Strides: [2]int{3, 3}, Padding: ops.Explicit, Explicit: [2][2]int{{1, 0}, {0, 0}}}
	pooled, taps = ops.MaxPool2DWithArgmax(x, o)
	if got := tensor.ToSlice[uint8](taps); !slices.Equal(got, []uint8{ops.PoolNoTap, 0}) {
		t.Errorf("taps over padding %v", got)
	}
	if got := tensor.ToSlice[float32](pooled); !math.IsInf(float64(got[0]), -1) || got[1] != 0 {
		t.Errorf("pooled over padding %v", got)
	}
	un := ops.MaxUnpool2D(tensor.FromSlice([]float32{10, 20}, 1, 2, 1, 1), taps, []int{1, 3, 3, 1}, o)
	check(t, "unpooled over padding", un, tensor.Shape{1, 3, 3, 1}, f32(0, 0, 0, 0, 0, 0, 20, 0, 0))
	// Integers pool too.
	xi := ops.Cast(x, tensor.Int32)
	pi, ti := ops.MaxPool2DWithArgmax(xi, ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{1, 1}})
	if got := tensor.ToSlice[int32](pi); !slices.Equal(got, []int32{7, 7, 9, 9}) {
		t.Errorf("int32 pooled %v", got)
	}
	if got := tensor.ToSlice[uint8](ti); !slices.Equal(got, []uint8{2, 3, 3, 2}) {
		t.Errorf("int32 taps %v", got)
	}
}

// The gradients of MaxUnpool2D and of its gradient, against finite
// differences (the first order through MaxPool2DWithArgmax is in the
// conformance table).
func TestMaxUnpool2DGradients(t *testing.T) {
	c := argmaxPools[1]
	_, taps := ops.MaxPool2DWithArgmax(rnd(3, -1, 1, c.shape...), c.o)
	cases := []gradCase{
		{"MaxUnpool2D", func(x []T) T { return ops.Square(ops.MaxUnpool2D(x[0], taps, c.shape, c.o)) }, []T{rnd(4, -1, 1, taps.Shape()...)}},
		{"MaxPool2DWithArgmax", func(x []T) T {
			y, _ := ops.MaxPool2DWithArgmax(x[0], c.o)
			return ops.Square(y)
		}, []T{rnd(5, -1, 1, c.shape...)}},
	}
	runGradients(t, cases, nil, nil)
}

func TestMaxPool2DWithArgmaxBadInput(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 1, 4, 4, 1)
	o := ops.PoolOpts{Size: [2]int{2, 2}}
	_, taps := ops.MaxPool2DWithArgmax(x, o)
	runBadInput(t, []badInput{
		{"nil", func() { ops.MaxPool2DWithArgmax(nil, o) }, tensor.ErrArity, "input 0 is nil"},
		{"rank", func() { ops.MaxPool2DWithArgmax(tensor.Zeros(tensor.Float32, 4, 4), o) }, tensor.ErrRank, "rank-4"},
		{"taps", func() {
			ops.MaxPool2DWithArgmax(tensor.Zeros(tensor.Float32, 1, 16, 16, 1), ops.PoolOpts{Size: [2]int{16, 16}})
		}, tensor.ErrAttr, "more than 254 taps"},
		{"bool", func() { ops.MaxPool2DWithArgmax(tensor.Zeros(tensor.Bool, 1, 4, 4, 1), o) }, tensor.ErrDType, "dtype bool"},
		{"unpool taps dtype", func() {
			ops.MaxUnpool2D(tensor.Zeros(tensor.Float32, 1, 2, 2, 1), tensor.Zeros(tensor.Int32, 1, 2, 2, 1), []int{1, 4, 4, 1}, o)
		}, tensor.ErrDType, "taps must be uint8"},
		{"unpool taps shape", func() { ops.MaxUnpool2D(tensor.Zeros(tensor.Float32, 1, 2, 2, 1), taps, []int{1, 6, 4, 1}, o) }, tensor.ErrShape, "the windows over [1 6 4 1] are [1 3 2 1]"},
		{"unpool values shape", func() { ops.MaxUnpool2D(tensor.Zeros(tensor.Float32, 1, 2, 1, 2), taps, []int{1, 4, 4, 1}, o) }, tensor.ErrShape, "values have shape [1 2 1 2], want [1 2 2 1]"},
		{"unpool rank", func() { ops.MaxUnpool2D(tensor.Zeros(tensor.Float32, 1, 2, 2, 1), taps, []int{4, 4}, o) }, tensor.ErrRank, "rank-4"},
		{"unpool negative", func() { ops.MaxUnpool2D(tensor.Zeros(tensor.Float32, 1, 2, 2, 1), taps, []int{1, -4, 4, 1}, o) }, tensor.ErrShape, "negative"},
		{"unpool nil", func() { ops.MaxUnpool2D(nil, taps, []int{1, 4, 4, 1}, o) }, tensor.ErrArity, "input 0 is nil"},
	})
}

// Taps of another making that name no tap inside the operand (past the
// window's taps, or on padding) choose nothing: MaxUnpool2D puts nothing
// for them and its gradient gathers zero, without a crash.
func TestMaxUnpool2DIgnoresTapsOutsideTheOperand(t *testing.T) {
	// [1 3 2 1] with a row of padding above: windows over rows -1..0 and
	// 1..2. Tap 0 of the first is on padding; 9 is past any window's 4.
	o := ops.PoolOpts{Size: [2]int{2, 2}, Padding: ops.Explicit, Explicit: [2][2]int{{1, 0}, {0, 0}}}
	shape := []int{1, 3, 2, 1}
	values := tensor.FromSlice([]float32{10, 20}, 1, 2, 1, 1)
	for _, c := range []struct {
		taps []uint8
		want []float32
	}{
		{[]uint8{0, 9}, []float32{0, 0, 0, 0, 0, 0}},
		{[]uint8{3, 1}, []float32{0, 10, 0, 20, 0, 0}},
	} {
		taps := tensor.FromSlice(c.taps, 1, 2, 1, 1)
		check(t, fmt.Sprint("taps ", c.taps), ops.MaxUnpool2D(values, taps, shape, o), tensor.Shape{1, 3, 2, 1}, c.want)
		tp := tape.New()
		tp.Watch(values)
		g := tp.Gradient(ops.Sum(ops.Mul(ops.MaxUnpool2D(values, taps, shape, o), tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, shape...))), values)[0]
		var want []float32
		for i, tp := range c.taps {
			if tp == 3 || tp == 1 {
				want = append(want, []float32{2, 4}[i])
			} else {
				want = append(want, 0)
			}
		}
		check(t, fmt.Sprint("gathered, taps ", c.taps), g, tensor.Shape{1, 2, 1, 1}, want)
	}
}
