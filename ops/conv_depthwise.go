package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Depthwise convolutions as three ops of their own (TensorFlow's
// DepthwiseConv2dNative and its two backprops), computed directly: each
// output channel c·M+m reads input channel c alone through the KH x KW
// taps of filter [KH, KW, C, M], where the general Conv's feature groups
// ran a GEMM and a patch matrix per channel. The attributes are
// Conv2DGemmAttrs (the geometry is Conv2D's).

var depthwiseOp, depthwiseInputOp, depthwiseFilterOp *eager.Op

// depthwiseMultiplier is M of a depthwise convolution of c input channels
// whose output (or output gradient) dy has o channels, failing the call
// when o is not a multiple of c.
func depthwiseMultiplier(c *eager.Call, ch, o int) int {
	if ch == 0 || o%ch != 0 {
		c.Fail(tensor.ErrShape, "%d output channels are not a multiple of the %d input channels", o, ch)
	}
	return o / ch
}

func init() {
	depthwiseOp, depthwiseInputOp, depthwiseFilterOp = registerConv(
		[3]string{"DepthwiseConv2DNative", "DepthwiseConv2DNativeBackpropInput", "DepthwiseConv2DNativeBackpropFilter"},
		func(c *eager.Call) []eager.Out {
			x, f, a := c.Inputs[0], c.Inputs[1], c.Attrs.(Conv2DGemmAttrs)
			oh, ow := checkConv(c, x, f, a)
			return c.Out1(x.DType(), a.batchShape(x.Dim(0), f.Dim(2)*f.Dim(3), oh, ow))
		},
		func(c *eager.Call) []eager.Out {
			f := c.Inputs[0]
			if f.Rank() == 4 {
				return inferInputGrad(c, f.Dim(2)*f.Dim(3))
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
			ch := a.Channels(x)
			m := depthwiseMultiplier(c, ch, a.Channels(dy))
			checkDy(c, dy, a, x.Dim(0), ch*m)
			return c.Out1(x.DType(), tensor.Shape{a.KH, a.KW, ch, m})
		})
}
