package ops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// FusedConv2D equals Conv2D, BiasAdd and Relu as three ops, in value and
// in the gradients of all three inputs: both layouts and dtypes, both
// activations, batches below and above the worker count, and a negative
// padding (the general convolution's fallback).
func TestFusedConv2DMatchesThreeOps(t *testing.T) {
	type cfg struct {
		n, c, hw, o int
		opts        ops.Conv2DOpts
	}
	cases := []cfg{
		{1, 3, 6, 4, ops.Conv2DOpts{Padding: ops.Same}},
		{5, 2, 7, 5, ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 1}}},
		{4, 8, 9, 16, ops.Conv2DOpts{Padding: ops.Valid, Dilations: [2]int{2, 1}}},
		{3, 1, 28, 32, ops.Conv2DOpts{Padding: ops.Same}}, // a first layer: one channel
		{2, 2, 6, 3, ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{-1, 1}, {1, 0}}}},
	}
	for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
			tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 2e-5}[dt]
			for i, c := range cases {
				for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
					c.opts.Format = format
					name := fmt.Sprintf("%v %v %v case %d", format, dt, act, i)
					rng := tensor.NewRNG(uint64(i + 11))
					shape := []int{c.n, c.hw, c.hw, c.c}
					if format == ops.NCHW {
						shape = []int{c.n, c.c, c.hw, c.hw}
					}
					x := tensor.RandUniform(rng, dt, -1, 1, shape...)
					f := tensor.RandUniform(rng, dt, -1, 1, 3, 3, c.c, c.o)
					b := tensor.RandUniform(rng, dt, -1, 1, c.o)
					three := func(x, f, b *tensor.Tensor) *tensor.Tensor {
						y := ops.BiasAdd(ops.Conv2D(x, f, c.opts), b, format)
						if act == ops.ReluActivation {
							y = ops.Relu(y)
						}
						return y
					}
					fused := func(x, f, b *tensor.Tensor) *tensor.Tensor { return ops.FusedConv2D(x, f, b, c.opts, act) }
					var ys, grads [2][]*tensor.Tensor
					for k, fn := range []func(x, f, b *tensor.Tensor) *tensor.Tensor{three, fused} {
						tp := tape.New()
						tp.Watch(x, f, b)
						y := fn(x, f, b)
						// A weighted sum, so that every output's gradient differs.
						w := tensor.RandUniform(tensor.NewRNG(5), dt, -1, 1, y.Shape()...)
						ys[k] = []*tensor.Tensor{y}
						grads[k] = tp.Gradient(ops.Sum(ops.Mul(y, w)), x, f, b)
					}
					diff(t, name+" value", ys[1][0], ys[0][0], tol)
					for j, what := range []string{"input", "filter", "bias"} {
						diff(t, name+" gradient of the "+what, grads[1][j], grads[0][j], tol*float64(c.n*c.hw))
					}
					// A first layer's: the filter and bias gradients alone
					// (FusedConv2DBackprop without the input gradient), of
					// an input no tape watched (x is: the tapes above).
					fresh := tensor.RandUniform(tensor.NewRNG(uint64(i+11)), dt, -1, 1, shape...)
					tp := tape.New()
					tp.Watch(f, b)
					y := fused(fresh, f, b)
					w := tensor.RandUniform(tensor.NewRNG(5), dt, -1, 1, y.Shape()...)
					fb := tp.Gradient(ops.Sum(ops.Mul(y, w)), f, b)
					diff(t, name+" gradient of the filter alone", fb[0], grads[0][1], tol*float64(c.n*c.hw))
					diff(t, name+" gradient of the bias alone", fb[1], grads[0][2], tol*float64(c.n*c.hw))
				}
			}
		}
	}
}

func TestFusedConv2DBadInputs(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 5, 5, 3)
	f := tensor.Zeros(tensor.Float32, 3, 3, 3, 4)
	same := ops.Conv2DOpts{Padding: ops.Same}
	for _, c := range []struct {
		name string
		call func()
		kind error
		says string
	}{
		{"bias of the wrong length", func() { ops.FusedConv2D(x, f, tensor.Zeros(tensor.Float32, 3), same, ops.ReluActivation) }, tensor.ErrShape, "bias [3]"},
		{"bias a matrix", func() { ops.FusedConv2D(x, f, tensor.Zeros(tensor.Float32, 1, 4), same, ops.ReluActivation) }, tensor.ErrRank, "vector bias"},
		{"bias of another dtype", func() { ops.FusedConv2D(x, f, tensor.Zeros(tensor.Float64, 4), same, ops.NoActivation) }, tensor.ErrDType, ""},
		{"channels that differ", func() {
			ops.FusedConv2D(tensor.Zeros(tensor.Float32, 2, 5, 5, 2), f, tensor.Zeros(tensor.Float32, 4), same, ops.NoActivation)
		}, tensor.ErrShape, "input channels"},
		{"unknown activation", func() { ops.FusedConv2D(x, f, tensor.Zeros(tensor.Float32, 4), same, ops.FusedActivation(9)) }, tensor.ErrAttr, "activation"},
		{"integer input", func() {
			ops.FusedConv2D(tensor.Zeros(tensor.Int32, 2, 5, 5, 3), tensor.Zeros(tensor.Int32, 3, 3, 3, 4), tensor.Zeros(tensor.Int32, 4), same, ops.NoActivation)
		}, tensor.ErrDType, ""},
	} {
		err := tensor.Catch(c.call)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), "FusedConv2D") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming FusedConv2D and %q", c.name, err, c.kind, c.says)
		}
	}
}

// FusedConv2DBackprop, which FusedConv2D's gradient runs, rejects what
// does not fit the convolution its attributes describe, naming itself.
func TestFusedConv2DBackpropBadInputs(t *testing.T) {
	op := eager.Lookup("FusedConv2DBackprop")
	x := tensor.Zeros(tensor.Float32, 2, 5, 5, 3)
	f := tensor.Zeros(tensor.Float32, 3, 3, 3, 4)
	y := tensor.Zeros(tensor.Float32, 2, 5, 5, 4)
	conv := ops.GemmConvAttrs(ops.Conv2DOpts{Padding: ops.Same}, 5, 5, 3, 3)
	attrs := func(act ops.FusedActivation) ops.FusedConv2DBackpropAttrs {
		return ops.FusedConv2DBackpropAttrs{FusedConv2DAttrs: ops.FusedConv2DAttrs{Conv: conv, Activation: act}, InputGrad: true}
	}
	for _, c := range []struct {
		name string
		call func()
		kind error
		says string
	}{
		{"result of the wrong shape", func() { eager.Run(op, attrs(ops.ReluActivation), x, f, tensor.Zeros(tensor.Float32, 2, 5, 5, 3), y) }, tensor.ErrShape, "result [2 5 5 3]"},
		{"gradient of the wrong shape", func() { eager.Run(op, attrs(ops.ReluActivation), x, f, y, tensor.Zeros(tensor.Float32, 2, 4, 5, 4)) }, tensor.ErrShape, "gradient [2 4 5 4]"},
		{"unknown activation", func() { eager.Run(op, attrs(ops.FusedActivation(7)), x, f, y, y) }, tensor.ErrAttr, "activation"},
		{"mixed dtypes", func() { eager.Run(op, attrs(ops.NoActivation), x, f, y, tensor.Zeros(tensor.Float64, 2, 5, 5, 4)) }, tensor.ErrDType, ""},
		{"input of another size", func() { eager.Run(op, attrs(ops.NoActivation), tensor.Zeros(tensor.Float32, 2, 6, 5, 3), f, y, y) }, tensor.ErrAttr, "do not match"},
	} {
		err := tensor.Catch(c.call)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), "FusedConv2DBackprop") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming FusedConv2DBackprop and %q", c.name, err, c.kind, c.says)
		}
	}
	// The outputs: dx, df, db, or df, db without the input gradient.
	a := attrs(ops.ReluActivation)
	if outs := eager.Run(op, a, x, f, y, y); len(outs) != 3 || !outs[0].Shape().Equal(x.Shape()) || !outs[1].Shape().Equal(f.Shape()) || outs[2].Dim(0) != 4 {
		t.Errorf("with the input gradient: %d outputs %v", len(outs), outs)
	}
	a.InputGrad = false
	if outs := eager.Run(op, a, x, f, y, y); len(outs) != 2 || !outs[0].Shape().Equal(f.Shape()) || outs[1].Dim(0) != 4 {
		t.Errorf("without the input gradient: %d outputs %v", len(outs), outs)
	}
}
