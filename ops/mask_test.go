package ops_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func TestNonzero(t *testing.T) {
	for _, c := range []struct {
		name  string
		x     *tensor.Tensor
		shape tensor.Shape
		want  []int64
	}{
		{"matrix", tensor.FromSlice([]float32{0, 2, 0, -1, 0, 3}, 2, 3), tensor.Shape{3, 2}, []int64{0, 1, 1, 0, 1, 2}},
		{"bool vector", tensor.FromSlice([]bool{true, false, true}), tensor.Shape{2, 1}, []int64{0, 2}},
		{"ints, none", tensor.Zeros(tensor.Int32, 2, 2), tensor.Shape{0, 2}, nil},
		{"-0 is zero, NaN is not", tensor.FromSlice([]float64{negZero(), nan()}), tensor.Shape{1, 1}, []int64{1}},
		{"scalar", tensor.Scalar(int64(5)), tensor.Shape{1, 0}, nil},
		{"empty", tensor.Zeros(tensor.Uint8, 0, 3), tensor.Shape{0, 2}, nil},
	} {
		got := ops.Nonzero(c.x)
		if got.DType() != tensor.Int64 || !got.Shape().Equal(c.shape) || !slices.Equal(tensor.ToSlice[int64](got), c.want) {
			t.Errorf("%s: %v, want %v %v", c.name, got, c.want, c.shape)
		}
	}
}

func TestMaskedSelectFillScatter(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	mask := tensor.FromSlice([]bool{true, false, true, false, false, true}, 2, 3)
	row := tensor.FromSlice([]bool{false, true, true}) // broadcast over rows
	for _, c := range []struct {
		name  string
		got   *tensor.Tensor
		shape tensor.Shape
		want  []float64
	}{
		{"MaskedSelect", ops.MaskedSelect(x, mask), tensor.Shape{3}, []float64{1, 3, 6}},
		{"MaskedSelect broadcast", ops.MaskedSelect(x, row), tensor.Shape{4}, []float64{2, 3, 5, 6}},
		{"MaskedFill", ops.MaskedFill(x, mask, tensor.Scalar(-1.0)), tensor.Shape{2, 3}, []float64{-1, 2, -1, 4, 5, -1}},
		{"MaskedScatter", ops.MaskedScatter(x, mask, tensor.FromSlice([]float64{10, 20, 30, 40})), tensor.Shape{2, 3}, []float64{10, 2, 20, 4, 5, 30}},
		{"Index mask", ops.Index(x, mask), tensor.Shape{3}, []float64{1, 3, 6}},
		{"Index row mask", ops.Index(x, tensor.FromSlice([]bool{false, true})), tensor.Shape{1, 3}, []float64{4, 5, 6}},
		{"Index column mask after :", ops.Index(x, ":", row), tensor.Shape{2, 2}, []float64{2, 3, 5, 6}},
		{"Index column mask after ...", ops.Index(x, ops.Ellipsis, row), tensor.Shape{2, 2}, []float64{2, 3, 5, 6}},
		{"Index none true", ops.Index(x, tensor.Zeros(tensor.Bool, 2, 3)), tensor.Shape{0}, nil},
	} {
		if !c.got.Shape().Equal(c.shape) || !slices.Equal(tensor.ToSlice[float64](c.got), c.want) {
			t.Errorf("%s: %v, want %v %v", c.name, c.got, c.want, c.shape)
		}
	}
	// Gradients, against finite differences (the masks are constants).
	for name, f := range map[string]func(in []*tensor.Tensor) *tensor.Tensor{
		"MaskedSelect":  func(in []*tensor.Tensor) *tensor.Tensor { return ops.Square(ops.MaskedSelect(in[0], mask)) },
		"MaskedFill":    func(in []*tensor.Tensor) *tensor.Tensor { return ops.Square(ops.MaskedFill(in[0], mask, in[1])) },
		"MaskedScatter": func(in []*tensor.Tensor) *tensor.Tensor { return ops.Square(ops.MaskedScatter(in[0], mask, in[1])) },
		"Index mask":    func(in []*tensor.Tensor) *tensor.Tensor { return ops.Square(ops.Index(in[0], ":", row)) },
	} {
		in := []*tensor.Tensor{tensor.FromSlice([]float64{0.3, -1.2, 0.8, 2.1, 0.5, -0.7}, 2, 3), tensor.FromSlice([]float64{1.5, -0.5, 0.25})}
		if name == "MaskedFill" {
			in[1] = tensor.Scalar(1.5)
		}
		if name == "MaskedSelect" || name == "Index mask" {
			in = in[:1]
		}
		if res := tape.CheckGradient(f, in, 0); res.MaxError > 1e-6 {
			t.Errorf("%s gradient: %v", name, res)
		}
	}
}

func TestMaskErrors(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 3)
	big := tensor.Zeros(tensor.Bool, 1000, 1000)
	for _, c := range []struct {
		name, op string
		fn       func()
		kind     error
		text     string
	}{
		{"mask of another shape", "Index", func() { ops.Index(x, tensor.Zeros(tensor.Bool, 3)) }, tensor.ErrIndex, "does not match dimensions 0 to 0"},
		{"a large mask, described not printed", "Index", func() { ops.Index(x, big) }, tensor.ErrIndex, "bool[1000 1000]"},
		{"rank-0 mask", "Index", func() { ops.Index(x, tensor.Scalar(true)) }, tensor.ErrAttr, "rank 1 or more"},
		{"float mask", "MaskedSelect", func() { ops.MaskedSelect(x, x) }, tensor.ErrDType, "must be bool"},
		{"mask not broadcastable", "MaskedSelect", func() { ops.MaskedSelect(x, tensor.Zeros(tensor.Bool, 4)) }, tensor.ErrShape, ""},
		{"short source", "MaskedScatter", func() { ops.MaskedScatter(x, tensor.Ones(tensor.Bool, 2, 3), tensor.Zeros(tensor.Float32, 5)) }, tensor.ErrShape, "selects 6 elements, source has 5"},
		{"nil mask", "MaskedFill", func() { ops.MaskedFill(x, nil, x) }, tensor.ErrArity, "input 1 is nil"},
	} {
		err := tensor.Catch(c.fn)
		var te *tensor.Error
		if !errors.Is(err, c.kind) || !errors.As(err, &te) || te.Op != c.op || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %s's %v containing %q", c.name, err, c.op, c.kind, c.text)
		}
		if err != nil && len(err.Error()) > 600 {
			t.Errorf("%s: a %d-byte message", c.name, len(err.Error()))
		}
	}
}

func negZero() float64 { return math.Copysign(0, -1) }
func nan() float64     { return math.NaN() }
