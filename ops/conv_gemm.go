package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/checked"
	"github.com/eagerflow/eagerflow/tensor"
)

// Conv2D as its own three ops (forward and the two backprops), which a
// backend runs as one GEMM per image in either layout, without transposing
// the batch as the general lowering in conv.go does (the CPU's:
// backend/cpu/conv_gemm.go). Conv2D takes them where no padding is
// negative.

// Conv2DGemmAttrs are the attributes the three ops share besides their
// inputs: strides, dilations, the padding of each edge, the input's height
// and width and the filter's (the output's size follows from them), and
// the layout. Conv2D and its backprops make them from Conv2DOpts.
type Conv2DGemmAttrs struct {
	StrideH, StrideW     int
	DilationH, DilationW int
	PadTop, PadBottom    int
	PadLeft, PadRight    int
	H, W                 int // the input's height and width
	KH, KW               int // the filter's
	Format               DataFormat
}

func (a Conv2DGemmAttrs) String() string {
	return fmt.Sprintf("%v strides=[%d %d] dilations=[%d %d] pads=[%d %d %d %d] input=%dx%d filter=%dx%d",
		a.Format, a.StrideH, a.StrideW, a.DilationH, a.DilationW, a.PadTop, a.PadBottom, a.PadLeft, a.PadRight, a.H, a.W, a.KH, a.KW)
}

// batchShape is the shape of a batch of n images of ch channels, h x w,
// in the layout of a.
func (a Conv2DGemmAttrs) batchShape(n, ch, h, w int) tensor.Shape {
	if a.Format == NCHW {
		return tensor.Shape{n, ch, h, w}
	}
	return tensor.Shape{n, h, w, ch}
}

// Channels is the channel dimension of x, a rank-4 batch in a's layout.
func (a Conv2DGemmAttrs) Channels(x *tensor.Tensor) int {
	if a.Format == NCHW {
		return x.Dim(1)
	}
	return x.Dim(3)
}

// OutSize is the output's height and width; either is -1 when the
// (dilated) filter does not fit the padded input or a size overflows.
func (a Conv2DGemmAttrs) OutSize() (oh, ow int) {
	return outLen(a.H, pairSum(a.PadTop, a.PadBottom), a.KH, a.DilationH, a.StrideH),
		outLen(a.W, pairSum(a.PadLeft, a.PadRight), a.KW, a.DilationW, a.StrideW)
}

// gemmConv returns the fast path's attributes for Conv2D options and an
// input of h x w with a kh x kw filter, and whether the fast path applies
// (no negative padding).
func gemmConv(o Conv2DOpts, h, w, kh, kw int) (Conv2DGemmAttrs, bool) {
	co := o.convOpts(h, w, kh, kw)
	a := Conv2DGemmAttrs{StrideH: co.Strides[0], StrideW: co.Strides[1], DilationH: co.RhsDilation[0], DilationW: co.RhsDilation[1],
		PadTop: co.Padding[0][0], PadBottom: co.Padding[0][1], PadLeft: co.Padding[1][0], PadRight: co.Padding[1][1],
		H: h, W: w, KH: kh, KW: kw, Format: o.Format}
	ok := a.PadTop >= 0 && a.PadBottom >= 0 && a.PadLeft >= 0 && a.PadRight >= 0
	return a, ok
}

// pairSum is a + b, or -1 when that overflows (a, b >= 0).
func pairSum(a, b int) int {
	if s, ok := checked.Add(a, b); ok {
		return s
	}
	return -1
}

// outLen is the output length of one spatial dimension, or -1 when the
// (dilated) filter does not fit in the padded input or a size overflows.
func outLen(in, pads, k, d, s int) int {
	span, ok1 := checked.Mul(k-1, d)
	padded, ok2 := checked.Add(in, pads)
	if pads < 0 || !ok1 || !ok2 || padded <= span {
		return -1
	}
	return (padded-span-1)/s + 1
}

// outSize is a.OutSize, failing the call when the filter does not fit.
func (a Conv2DGemmAttrs) outSize(c *eager.Call) (oh, ow int) {
	oh, ow = a.OutSize()
	if oh < 0 || ow < 0 {
		c.Fail(tensor.ErrShape, "a %dx%d filter (dilations %d, %d) does not fit the padded %dx%d input", a.KH, a.KW, a.DilationH, a.DilationW, a.H, a.W)
	}
	return oh, ow
}

// rank4 fails the call unless t has rank 4.
func rank4(c *eager.Call, t *tensor.Tensor, what string, f DataFormat) {
	if t.Rank() != 4 {
		shapes := map[string]string{"input": "[N, H, W, C]", "filter": "[KH, KW, C, O]", "dy": "[N, OH, OW, O]"}
		if f == NCHW {
			shapes["input"], shapes["dy"] = "[N, C, H, W]", "[N, O, OH, OW]"
		}
		c.Fail(tensor.ErrRank, "%s needs rank 4 %s, got %v", what, shapes[what], t.Shape())
	}
}

// checkDy checks an output gradient against the batch n, the filter's o
// output channels and the output size.
func checkDy(c *eager.Call, dy *tensor.Tensor, a Conv2DGemmAttrs, n, o int) {
	rank4(c, dy, "dy", a.Format)
	oh, ow := a.outSize(c)
	if want := a.batchShape(n, o, oh, ow); !dy.Shape().Equal(want) {
		c.Fail(tensor.ErrShape, "dy is %v, the convolution's output is %v", dy.Shape(), want)
	}
}

// inferConv checks a convolution of x with filter f under attributes a
// and declares its output.
func inferConv(c *eager.Call, x, f *tensor.Tensor, a Conv2DGemmAttrs) []eager.Out {
	oh, ow := checkConv(c, x, f, a)
	return c.Out1(x.DType(), a.batchShape(x.Dim(0), f.Dim(3), oh, ow))
}

// checkConv checks input x and filter f [KH, KW, C, ...] against a and
// returns the output's height and width.
func checkConv(c *eager.Call, x, f *tensor.Tensor, a Conv2DGemmAttrs) (oh, ow int) {
	rank4(c, x, "input", a.Format)
	rank4(c, f, "filter", a.Format)
	if h, w := hw(x, a.Format); f.Dim(0) != a.KH || f.Dim(1) != a.KW || h != a.H || w != a.W {
		c.Fail(tensor.ErrAttr, "attributes %v do not match input %v and filter %v", a, x.Shape(), f.Shape())
	}
	if f.Dim(2) != a.Channels(x) {
		c.Fail(tensor.ErrShape, "filter %v expects %d input channels, the input %v has %d", f.Shape(), f.Dim(2), x.Shape(), a.Channels(x))
	}
	return a.outSize(c)
}

var conv2DGemmOp, conv2DGemmInputOp, conv2DGemmFilterOp *eager.Op

func init() {
	conv2DGemmOp, conv2DGemmInputOp, conv2DGemmFilterOp = registerConv([3]string{"Conv2DGemm", "Conv2DGemmBackpropInput", "Conv2DGemmBackpropFilter"},
		func(c *eager.Call) []eager.Out {
			return inferConv(c, c.Inputs[0], c.Inputs[1], c.Attrs.(Conv2DGemmAttrs))
		},
		func(c *eager.Call) []eager.Out {
			if f := c.Inputs[0]; f.Rank() == 4 {
				return inferInputGrad(c, f.Dim(3))
			}
			return inferInputGrad(c, 0) // fails on the rank
		},
		func(c *eager.Call) []eager.Out {
			x, dy, a := c.Inputs[0], c.Inputs[1], c.Attrs.(Conv2DGemmAttrs)
			rank4(c, x, "input", a.Format)
			rank4(c, dy, "dy", a.Format)
			if h, w := hw(x, a.Format); h != a.H || w != a.W {
				c.Fail(tensor.ErrAttr, "attributes %v do not match input %v", a, x.Shape())
			}
			checkDy(c, dy, a, x.Dim(0), a.Channels(dy))
			return c.Out1(x.DType(), tensor.Shape{a.KH, a.KW, a.Channels(x), a.Channels(dy)})
		})
}

// inferInputGrad checks a backprop-input call (filter f [KH, KW, C, ...],
// dy of o channels) against its attributes and declares dx.
func inferInputGrad(c *eager.Call, o int) []eager.Out {
	f, dy, a := c.Inputs[0], c.Inputs[1], c.Attrs.(Conv2DGemmAttrs)
	rank4(c, f, "filter", a.Format)
	rank4(c, dy, "dy", a.Format)
	if f.Dim(0) != a.KH || f.Dim(1) != a.KW {
		c.Fail(tensor.ErrAttr, "attributes %v do not match filter %v", a, f.Shape())
	}
	checkDy(c, dy, a, dy.Dim(0), o)
	return c.Out1(dy.DType(), a.batchShape(dy.Dim(0), f.Dim(2), a.H, a.W))
}

// registerConv registers a convolution y = C(x, f) of Conv2DGemmAttrs and
// its two backprops, dx = Bi(f, dy) and df = Bf(x, dy), by their names
// and shape rules, each differentiated by the others (all three are
// linear in each input): C's gradients are Bi(f, dy) and Bf(x, dy); Bi's
// in f is Bf(ddx, dy) and in dy C(ddx, f); Bf's in x is Bi(ddf, dy) and
// in dy C(x, ddf).
func registerConv(names [3]string, infer, inferInput, inferFilter func(c *eager.Call) []eager.Out) (fwd, input, filter *eager.Op) {
	run := func(op **eager.Op, a any, x, y *tensor.Tensor) *tensor.Tensor { return eager.Run1(*op, a, x, y) }
	fwd = eager.Register(&eager.Op{Name: names[0], Inputs: 2, DTypes: floatTypes, SameDTypes: true, Infer: infer,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, f, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor { return run(&input, g.Attrs, f, dy) }),
				when(g.Needs[1], func() *tensor.Tensor { return run(&filter, g.Attrs, x, dy) }),
			}
		}})
	input = eager.Register(&eager.Op{Name: names[1], Inputs: 2, DTypes: floatTypes, SameDTypes: true, Infer: inferInput,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			f, dy, ddx := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor { return run(&filter, g.Attrs, ddx, dy) }),
				when(g.Needs[1], func() *tensor.Tensor { return run(&fwd, g.Attrs, ddx, f) }),
			}
		}})
	filter = eager.Register(&eager.Op{Name: names[2], Inputs: 2, DTypes: floatTypes, SameDTypes: true, Infer: inferFilter,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, dy, ddf := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor { return run(&input, g.Attrs, ddf, dy) }),
				when(g.Needs[1], func() *tensor.Tensor { return run(&fwd, g.Attrs, x, ddf) }),
			}
		}})
	return fwd, input, filter
}
