package ops

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/checked"
	"github.com/eagerflow/eagerflow/tensor"
)

// Window is XLA's window of ReduceWindow, SelectAndScatter and Conv: one
// entry per dimension of the operand. Nil Strides, dilations and Padding
// mean 1, 1 and no padding.
type Window struct {
	Dims           []int    // window size per dimension (>= 1)
	Strides        []int    // step between windows (>= 1)
	Padding        [][2]int // (low, high) per dimension; negative removes
	BaseDilation   []int    // holes between operand elements (lhs dilation)
	WindowDilation []int    // holes between window taps (rhs dilation)
}

func (w Window) String() string {
	return fmt.Sprintf("window=%v strides=%v padding=%v base_dilation=%v window_dilation=%v",
		w.Dims, w.Strides, w.Padding, w.BaseDilation, w.WindowDilation)
}

func ones(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// withDefaults fills nil fields for rank r: strides and dilations of 1, no
// padding.
func (w Window) withDefaults(r int) Window {
	if w.Strides == nil {
		w.Strides = ones(r)
	}
	if w.BaseDilation == nil {
		w.BaseDilation = ones(r)
	}
	if w.WindowDilation == nil {
		w.WindowDilation = ones(r)
	}
	if w.Padding == nil {
		w.Padding = make([][2]int, r)
	}
	return w
}

// check fails the call unless w, its defaults filled by the public
// function (withDefaults), fits an operand of shape. Shape rules only
// check: they never change the call's attributes.
func (w Window) check(c *eager.Call, shape tensor.Shape) {
	r := shape.Rank()
	if len(w.Dims) != r {
		c.Fail(tensor.ErrRank, "%d window dimensions for rank %d", len(w.Dims), r)
	}
	if len(w.Strides) != r || len(w.BaseDilation) != r || len(w.WindowDilation) != r || len(w.Padding) != r {
		c.Fail(tensor.ErrRank, "strides, dilations and padding need %d entries each", r)
	}
	for d := 0; d < r; d++ {
		if w.Dims[d] < 1 || w.Strides[d] < 1 || w.BaseDilation[d] < 1 || w.WindowDilation[d] < 1 {
			c.Fail(tensor.ErrAttr, "dimension %d: window size, stride and dilations must be at least 1", d)
		}
		// outSize's arithmetic, checked once here.
		dilated, ok1 := checked.Mul(max(shape[d]-1, 0), w.BaseDilation[d])
		_, ok2 := checked.Add(dilated, 1, w.Padding[d][0], w.Padding[d][1])
		span, ok3 := checked.Mul(w.Dims[d]-1, w.WindowDilation[d])
		if !ok1 || !ok2 || !ok3 || span == math.MaxInt {
			c.Fail(tensor.ErrShape, "dimension %d: the window %v over size %d gives sizes beyond what an int can count", d, w, shape[d])
		}
	}
}

// OutShape is the number of window positions along each dimension of an
// operand of shape in (w's defaults filled, and w checked against in).
func (w Window) OutShape(in tensor.Shape) tensor.Shape {
	out := make(tensor.Shape, len(in))
	for d, n := range in {
		out[d] = outSize(n, w, d)
	}
	return out
}

// outSize is the number of window positions along dimension d, of size n.
func outSize(n int, w Window, d int) int {
	padded := max(0, (n-1)*w.BaseDilation[d]+1) + w.Padding[d][0] + w.Padding[d][1]
	if n == 0 {
		padded = w.Padding[d][0] + w.Padding[d][1]
	}
	span := (w.Dims[d]-1)*w.WindowDilation[d] + 1
	if padded < span {
		return 0
	}
	return (padded-span)/w.Strides[d] + 1
}

// PatchesAttrs are ExtractPatches' window and, for its adjoint, the
// operand's shape.
type PatchesAttrs struct {
	Window
	Operand tensor.Shape
}

// pads says whether a window lays padding or base dilation's holes over
// its operand.
func (w Window) pads() bool {
	for d := range w.Dims {
		if w.Padding[d][0] > 0 || w.Padding[d][1] > 0 || w.BaseDilation[d] > 1 {
			return true
		}
	}
	return false
}

// padGradient is the gradient of a scalar that an op lays into its output
// as padding: dy summed where it landed, weighted by how often. taps maps
// (zeros of the operand's shape, one) to what the op makes of them: the
// count of the scalar's copies at each output element. Summed from those
// elements alone (never as all of dy less what reached the operand,
// which cancels to rounding noise where the padding is a small part).
// Nothing padded (pads false) gives an exact zero.
func padGradient(dy *tensor.Tensor, pads bool, taps func(zeros, one *tensor.Tensor) *tensor.Tensor, operand tensor.Shape) *tensor.Tensor {
	if !pads {
		return ScalarLike(dy, 0)
	}
	zeros, one := tensor.FullOn(dy.Device(), dy.DType(), 0, operand...), ScalarLike(dy, 1)
	count := taps(zeros, one)
	releaseTemp(zeros)
	releaseTemp(one)
	weighted := Mul(dy, count)
	releaseTemp(count)
	defer releaseTemp(weighted)
	return Sum(weighted)
}

// patchesShape is the shape of ExtractPatches' output: the window
// positions, then the window.
func patchesShape(in tensor.Shape, w Window) tensor.Shape { return append(w.OutShape(in), w.Dims...) }

var extractPatchesOp, scatterPatchesOp *eager.Op

func init() {
	extractPatchesOp = eager.Register(&eager.Op{
		Name: "ExtractPatches", Inputs: 2, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, pad := c.Inputs[0], c.Inputs[1]
			if pad.Rank() != 0 {
				c.Fail(tensor.ErrRank, "the padding value must be a scalar")
			}
			a := c.Attrs.(PatchesAttrs)
			a.Window.check(c, x.Shape())
			if !a.Operand.Equal(x.Shape()) {
				c.Fail(tensor.ErrAttr, "the attributes' operand shape %v is not the input's %v", a.Operand, x.Shape())
			}
			return c.Out1(x.DType(), patchesShape(x.Shape(), a.Window))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			dy := g.OutGrads[0]
			a := g.Attrs.(PatchesAttrs)
			dx := eager.Run1(scatterPatchesOp, a, dy)
			return []*tensor.Tensor{dx, when(g.Needs[1], func() *tensor.Tensor {
				return padGradient(dy, a.pads(), func(zeros, one *tensor.Tensor) *tensor.Tensor {
					return eager.Run1(extractPatchesOp, a, zeros, one)
				}, a.Operand)
			})}
		},
	})

	scatterPatchesOp = eager.Register(&eager.Op{
		Name: "ScatterPatches", Inputs: 1, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Attrs.(PatchesAttrs)
			a.Window.check(c, a.Operand)
			if want := patchesShape(a.Operand, a.Window); !want.Equal(c.Inputs[0].Shape()) {
				c.Fail(tensor.ErrShape, "patches have shape %v, the window gives %v", c.Inputs[0].Shape(), want)
			}
			return c.Out1(c.Inputs[0].DType(), a.Operand)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			dy := g.OutGrads[0]
			return []*tensor.Tensor{eager.Run1(extractPatchesOp, g.Attrs, dy, ScalarLike(dy, 0))}
		},
	})
}

// ExtractPatches lays the window over x (padded with pad, a scalar of x's
// dtype) and returns every window's taps: x: [n...] -> [out..., window...],
// where out[d] is the number of window positions along dimension d. It is
// the im2col of convolution in any number of dimensions, and the adjoint of
// ScatterPatches.
func ExtractPatches(x, pad *tensor.Tensor, w Window) *tensor.Tensor {
	return eager.Run1(extractPatchesOp, PatchesAttrs{Window: w.withDefaults(rankOf(x)), Operand: shapeOf(x)}, x, pad)
}

// ScatterPatches is the adjoint of ExtractPatches: it adds each patch
// element back to the operand position it came from (col2im). patches:
// [out..., window...] -> operand.
func ScatterPatches(patches *tensor.Tensor, operand tensor.Shape, w Window) *tensor.Tensor {
	return eager.Run1(scatterPatchesOp, PatchesAttrs{Window: w.withDefaults(operand.Rank()), Operand: operand.Clone()}, patches)
}

// SamePadding returns TensorFlow's SAME padding for one dimension of size n:
// the output has ceil(n/stride) positions and the padding is split with the
// extra element at the high end. It panics with a *tensor.Error when n is
// negative or window, stride or dilation is below 1.
func SamePadding(n, window, stride, dilation int) [2]int {
	if n < 0 || window < 1 || stride < 1 || dilation < 1 {
		fail("SamePadding", tensor.ErrAttr, nil, "size %d, window %d, stride %d, dilation %d: want size >= 0 and the others >= 1",
			n, window, stride, dilation)
	}
	out := (n + stride - 1) / stride
	span := (window-1)*dilation + 1
	total := max((out-1)*stride+span-n, 0)
	return [2]int{total / 2, total - total/2}
}
