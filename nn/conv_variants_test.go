package nn

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Conv1D's output lengths follow its padding (Valid, Same, explicit,
// causal) and stride in both layouts, and a causal layer's output at t
// does not move when the input after t does.
func TestConv1DLengthsAndCausality(t *testing.T) {
	r := tensor.NewRNG(2)
	for _, c := range []struct {
		o    Conv1DOpts
		want int // of 10 steps, kernel 3
	}{
		{Conv1DOpts{}, 8},
		{Conv1DOpts{Padding: ops.Same}, 10},
		{Conv1DOpts{Padding: ops.Same, Stride: 3}, 4},
		{Conv1DOpts{Padding: ops.Explicit, Explicit: [2]int{2, 0}}, 10},
		{Conv1DOpts{Causal: true, Dilation: 2}, 10},
		{Conv1DOpts{Dilation: 2, Stride: 2}, 3},
		{Conv1DOpts{Format: ops.NCHW, Padding: ops.Same}, 10},
	} {
		m := NewConv1D("c", r, 3, 2, 4, c.o)
		x, lengthAxis := tensor.RandNormal(r, tensor.Float32, 2, 10, 2), 1
		if c.o.Format == ops.NCHW {
			x, lengthAxis = tensor.RandNormal(r, tensor.Float32, 2, 2, 10), 2
		}
		if got := m.Forward(x).Dim(lengthAxis); got != c.want {
			t.Errorf("%s: %d steps out of 10, want %d", m, got, c.want)
		}
	}
	m := NewConv1D("c", r, 3, 2, 4, Conv1DOpts{Causal: true, Dilation: 2, DType: tensor.Float64})
	x := tensor.RandNormal(r, tensor.Float64, 1, 10, 2)
	y := tensor.ToSlice[float64](m.Forward(x))
	moved := tensor.ToSlice[float64](x)
	for i := 6 * 2; i < len(moved); i++ { // the inputs from step 6 on
		moved[i] += 1
	}
	y2 := tensor.ToSlice[float64](m.Forward(tensor.FromSlice(moved, 1, 10, 2)))
	for i := range y {
		if changed, step := y[i] != y2[i], i/4; changed != (step >= 6) {
			t.Errorf("causal output at step %d changed %v when the inputs from step 6 on moved", step, changed)
		}
	}
}

// Conv2DTranspose is Conv2D's adjoint: for the same filter, ⟨Conv2D(u),
// v⟩ = ⟨u, Conv2DTranspose(v)⟩ over random u and v, with Valid and Same
// padding, strides, dilations, an output padding and both layouts.
func TestConv2DTransposeIsConv2DsAdjoint(t *testing.T) {
	r := tensor.NewRNG(3)
	for _, o := range []Conv2DTransposeOpts{
		{},
		{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{2, 2}}}},
		{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{2, 3}, Padding: ops.Same}}},
		{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{2, 1}, Dilations: [2]int{1, 2}, Format: ops.NCHW}}, OutputPadding: [2]int{1, 0}},
	} {
		o.DType, o.NoBias = tensor.Float64, true
		m := NewConv2DTranspose("t", r, 3, 2, 4, 3, o)
		v := tensor.RandNormal(r, tensor.Float64, 2, 4, 5, 4)
		if o.Format == ops.NCHW {
			v = tensor.RandNormal(r, tensor.Float64, 2, 4, 4, 5)
		}
		tv := m.Forward(v)
		u := tensor.RandNormal(r, tensor.Float64, tv.Shape()...)
		cu := ops.Conv2D(u, m.Filter.Value(), o.Conv2DOpts.Conv2DOpts)
		if !cu.Shape().Equal(v.Shape()) {
			t.Fatalf("%s: Conv2D maps the output %v to %v, not the input %v", m, u.Shape(), cu.Shape(), v.Shape())
		}
		lhs, rhs := ops.Sum(ops.Mul(cu, v)).Float(), ops.Sum(ops.Mul(u, tv)).Float()
		if math.Abs(lhs-rhs) > 1e-9*(1+math.Abs(lhs)) {
			t.Errorf("%s: <Conv2D(u), v> = %g, <u, Conv2DTranspose(v)> = %g", m, lhs, rhs)
		}
	}
}

// The constructors refuse what makes no layer, naming it; the layers
// describe themselves; under a mixed policy they compute in bfloat16
// from their float32 variables, which get float32 gradients.
func TestConvLayerVariants(t *testing.T) {
	r := tensor.NewRNG(4)
	for name, f := range map[string]func(){
		"causal and Same": func() { NewConv1D("c", r, 3, 2, 2, Conv1DOpts{Causal: true, Padding: ops.Same}) },
		"kernel 0":        func() { NewConv1D("c", r, 0, 2, 2, Conv1DOpts{}) },
		"stride -1":       func() { NewConv1D("c", r, 3, 2, 2, Conv1DOpts{Stride: -1}) },
		"layout 7":        func() { NewConv1D("c", r, 3, 2, 2, Conv1DOpts{Format: 7}) },
		"an output padding of the stride": func() {
			NewConv2DTranspose("t", r, 3, 3, 2, 2, Conv2DTransposeOpts{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{2, 2}}}, OutputPadding: [2]int{2, 0}})
		},
		"an output padding with Same": func() {
			NewConv2DTranspose("t", r, 3, 3, 2, 2, Conv2DTransposeOpts{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{2, 2}, Padding: ops.Same}}, OutputPadding: [2]int{1, 0}})
		},
		"explicit transposed padding": func() {
			NewConv2DTranspose("t", r, 3, 3, 2, 2, Conv2DTransposeOpts{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Explicit}}})
		},
		"multiplier 0": func() { NewDepthwiseConv2D("d", r, 3, 3, 2, 0, Conv2DOpts{}) },
	} {
		if err := tensor.Catch(f); !errors.Is(err, tensor.ErrAttr) {
			t.Errorf("%s: %v, want an attribute error", name, err)
		}
	}
	if err := tensor.Catch(func() { NewConv1D("c", r, 3, 2, 2, Conv1DOpts{}).Forward(nil) }); !errors.Is(err, tensor.ErrArity) {
		t.Errorf("Conv1D of nil: %v", err)
	}
	conv1d := NewConv1D("seq", r, 5, 8, 16, Conv1DOpts{Causal: true, Stride: 2, Activation: ops.Relu})
	tconv := NewConv2DTranspose("up", r, 4, 4, 16, 8, Conv2DTransposeOpts{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{2, 2}, Padding: ops.Same}}})
	dw := NewDepthwiseConv2D("dw", r, 3, 3, 8, 2, Conv2DOpts{NoBias: true})
	for m, want := range map[Module]string{
		conv1d: "Conv1D seq: 5, 8 -> 16, stride 2, causal, relu",
		tconv:  "Conv2DTranspose up: 4x4, 16 -> 8, stride 2x2, same",
		dw:     "DepthwiseConv2D dw: 3x3, 8 -> 16, no bias",
	} {
		if got := Describe(m); got != want {
			t.Errorf("Describe: %q, want %q", got, want)
		}
	}
	model := NewSequential(NewConv1D("a", r, 3, 2, 4, Conv1DOpts{Padding: ops.Same, Activation: ops.Relu}),
		Activation(func(x *tensor.Tensor) *tensor.Tensor { return ops.Reshape(x, x.Dim(0), 1, x.Dim(1), x.Dim(2)) }),
		NewConv2DTranspose("b", r, 1, 3, 4, 3, Conv2DTransposeOpts{Conv2DOpts: Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{1, 2}}}}),
		NewDepthwiseConv2D("c", r, 1, 3, 3, 2, Conv2DOpts{}))
	model.Policy = MixedBFloat16
	x := tensor.RandNormal(r, tensor.Float32, 2, 6, 2)
	tp := tape.New()
	y := model.Forward(x)
	if y.DType() != tensor.Float32 || !y.Shape().Equal(tensor.Shape{2, 1, 11, 6}) {
		t.Fatalf("mixed bfloat16: output %v, want float32 [2 1 11 6]", tensor.Describe(y))
	}
	grads := tp.Gradient(ops.Sum(y), Values(model.Variables())...)
	for i, g := range grads {
		v := model.Variables()[i]
		if g == nil || g.DType() != tensor.Float32 || !strings.Contains(v.Name(), "/") {
			t.Errorf("mixed bfloat16: variable %s has gradient %v", v.Name(), g)
		}
	}
}
