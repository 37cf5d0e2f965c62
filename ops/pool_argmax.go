package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Max pooling that keeps each window's choice: the forward pass writes a
// byte a window beside the pooled value, and the gradient reads those
// bytes (not the input), so no window is searched twice. MaxPool2D takes
// this path on devices that say they prefer it (ArgmaxPooler: the GPU);
// the CPU's plane and channel kernels search again in the backward pass,
// which costs less there than keeping the bytes.

// PoolNoTap is a window's tap number in MaxPool2DWithArgmax's taps where
// every tap of the window is on padding.
const PoolNoTap = 255

// maxPoolTaps is the most taps a window of MaxPool2DWithArgmax has: its
// numbers fit a byte beside PoolNoTap.
const maxPoolTaps = PoolNoTap - 1

// ArgmaxPooler is implemented by devices whose MaxPool2D should keep
// each window's choice for its gradient (MaxPool2DWithArgmax, then
// MaxUnpool2D), for an operand of shape and dtype dt under window w (its
// defaults filled): where their kernels pool and unpool that geometry
// faster than they search each window again.
type ArgmaxPooler interface {
	PoolsWithArgmax(shape tensor.Shape, dt tensor.DType, w Window) bool
}

var maxPoolArgmaxOp, maxUnpoolOp, maxUnpoolGatherOp *eager.Op

// checkTaps fails the call unless w (checked against shape) is one a
// window's tap numbers describe: no dilation, at most maxPoolTaps taps.
func checkTaps(c *eager.Call, shape tensor.Shape, w Window) {
	w.check(c, shape)
	taps := 1
	for d := range w.Dims {
		if w.BaseDilation[d] != 1 || w.WindowDilation[d] != 1 {
			c.Fail(tensor.ErrAttr, "dimension %d: the windows of max pooling's taps take no dilation", d)
		}
		taps *= w.Dims[d]
		if taps > maxPoolTaps {
			c.Fail(tensor.ErrAttr, "a window of %v has more than %d taps, which a byte does not number", w.Dims, maxPoolTaps)
		}
	}
}

// checkUnpool fails the call unless its input 0 has the window
// positions' shape of a pooled operand of a.Operand and input 1 is their
// taps.
func checkUnpool(c *eager.Call, a PatchesAttrs, what string) {
	checkTaps(c, a.Operand, a.Window)
	v, taps := c.Inputs[0], c.Inputs[1]
	if taps.DType() != tensor.Uint8 {
		c.Fail(tensor.ErrDType, "taps must be uint8 (MaxPool2DWithArgmax's), got %v", taps.DType())
	}
	out := a.Window.OutShape(a.Operand)
	if !taps.Shape().Equal(out) {
		c.Fail(tensor.ErrShape, "taps have shape %v, the windows over %v are %v", taps.Shape(), a.Operand, out)
	}
	if want := map[bool]tensor.Shape{true: out, false: a.Operand}[what == "values"]; !v.Shape().Equal(want) {
		c.Fail(tensor.ErrShape, "%s have shape %v, want %v", what, v.Shape(), want)
	}
}

func init() {
	maxPoolArgmaxOp = eager.Register(&eager.Op{
		Name: "MaxPool2DWithArgmax", Inputs: 1, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			x, w := c.Inputs[0], c.Attrs.(Window)
			checkTaps(c, x.Shape(), w)
			out := w.OutShape(x.Shape())
			return []eager.Out{{DType: x.DType(), Shape: out}, {DType: tensor.Uint8, Shape: out}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			a := PatchesAttrs{Window: g.Attrs.(Window), Operand: g.Inputs[0].Shape()}
			return []*tensor.Tensor{eager.Run1(maxUnpoolOp, a, g.OutGrads[0], g.Outputs[1])}
		},
		GradReads: eager.ReadsOutputs,
	})
	maxUnpoolOp = eager.Register(&eager.Op{
		Name: "MaxUnpool2D", Inputs: 2, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Attrs.(PatchesAttrs)
			checkUnpool(c, a, "values")
			return c.Out1(c.Inputs[0].DType(), a.Operand)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{when(g.Needs[0], func() *tensor.Tensor {
				return eager.Run1(maxUnpoolGatherOp, g.Attrs, g.OutGrads[0], g.Inputs[1])
			}), nil}
		},
		GradReads: eager.ReadsInputs,
	})
	maxUnpoolGatherOp = eager.Register(&eager.Op{
		Name: "MaxUnpool2DGather", Inputs: 2, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Attrs.(PatchesAttrs)
			checkUnpool(c, a, "gradients")
			return c.Out1(c.Inputs[0].DType(), a.Window.OutShape(a.Operand))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{when(g.Needs[0], func() *tensor.Tensor {
				return eager.Run1(maxUnpoolOp, g.Attrs, g.OutGrads[0], g.Inputs[1])
			}), nil}
		},
		GradReads: eager.ReadsInputs,
	})
}

// MaxPool2DWithArgmax is MaxPool2D that also returns each window's
// choice: x [N, H, W, C] (NHWC) or [N, C, H, W] (NCHW), numbers of any
// dtype -> pooled (x's dtype) and taps (uint8), both of the pooled
// shape. A window's tap number is its first largest element's place in
// the window, row by row (kh·KW + kw; a NaN beats every number), or
// PoolNoTap where every tap is padding (the pooled value is then -Inf,
// or the integer dtype's least). Windows have at most 254 taps. The
// gradient in x goes to the chosen elements through MaxUnpool2D, reading
// taps, not x. PyTorch's max_pool2d(return_indices=True) numbers each
// choice by its place in the input plane instead.
func MaxPool2DWithArgmax(x *tensor.Tensor, o PoolOpts) (pooled, taps *tensor.Tensor) {
	needInputs("MaxPool2DWithArgmax", x)
	checkPool("MaxPool2DWithArgmax", x, o)
	outs := eager.Run(maxPoolArgmaxOp, o.window(x.Shape()), x)
	return outs[0], outs[1]
}

// MaxUnpool2D puts each window's value where its taps say the window
// chose: values and taps of the pooled shape (taps from
// MaxPool2DWithArgmax with the same o) -> the operand's shape (its rank
// 4), zeros where no window chose, values summed where overlapping
// windows chose one element (windows in order); a window with PoolNoTap
// puts nothing, as does one whose tap number is past its taps or on
// padding (taps not from MaxPool2DWithArgmax). It is the gradient of max
// pooling, and PyTorch's MaxUnpool2d.
func MaxUnpool2D(values, taps *tensor.Tensor, shape []int, o PoolOpts) *tensor.Tensor {
	needInputs("MaxUnpool2D", values, taps)
	operand := tensor.Shape(slices.Clone(shape))
	checkPoolOf("MaxUnpool2D", []*tensor.Tensor{values, taps}, operand, o) // a rank-4 shape
	for _, n := range operand {
		if n < 0 {
			fail("MaxUnpool2D", tensor.ErrShape, []*tensor.Tensor{values, taps}, "shape %v has a negative dimension", shape)
		}
	}
	return eager.Run1(maxUnpoolOp, PatchesAttrs{Window: o.window(operand), Operand: operand}, values, taps)
}

// keepsArgmax reports whether MaxPool2D of x under w should keep its
// windows' choices: a tape may record it (one is recording, and x is
// watched, computed by a recorded op, or a variable) and x's device
// prefers it (ArgmaxPooler).
func keepsArgmax(x *tensor.Tensor, w Window) bool {
	if !eager.Observing() || (x.Autodiff() == nil && !x.IsVariable()) {
		return false
	}
	p, ok := x.Device().(ArgmaxPooler)
	return ok && p.PoolsWithArgmax(x.Shape(), x.DType(), w)
}
