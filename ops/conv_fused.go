package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// FusedConv2D is Conv2D, BiasAdd and an activation as one op, as
// TensorFlow's grappler remapper makes _FusedConv2D: a backend adds the
// bias and applies the activation to each image's output while it is
// still in cache, and a tape keeps the input, the filter and the result
// instead of three tensors of the output's size.

// FusedActivation is the activation FusedConv2D applies after the bias.
type FusedActivation uint8

// The activations FusedConv2D fuses.
const (
	NoActivation   FusedActivation = iota // y = conv + bias
	ReluActivation                        // y = max(conv + bias, 0)
)

func (a FusedActivation) String() string {
	switch a {
	case NoActivation:
		return "none"
	case ReluActivation:
		return "relu"
	}
	return fmt.Sprintf("FusedActivation(%d)", uint8(a))
}

// FusedConv2DAttrs are the fused op's attributes: the convolution's and
// the activation.
type FusedConv2DAttrs struct {
	Conv       Conv2DGemmAttrs
	Activation FusedActivation
}

func (a FusedConv2DAttrs) String() string {
	return fmt.Sprintf("%v activation=%v", a.Conv, a.Activation)
}

// FusedConv2D returns act(Conv2D(x, filter, o) + bias): x [N, H, W, C]
// (NHWC) or [N, C, H, W] (NCHW), filter [KH, KW, C, O], bias [O], all of
// one float dtype; the result is Conv2D's, [N, OH, OW, O] or [N, O, OH,
// OW]. It equals Relu(BiasAdd(Conv2D(...), bias, o.Format)) (or the
// BiasAdd alone for NoActivation) to rounding, and is differentiable in
// all three inputs. Panics with a *tensor.Error for what Conv2D rejects, a
// bias that is not a vector of O entries, or an unknown activation.
func FusedConv2D(x, filter, bias *tensor.Tensor, o Conv2DOpts, act FusedActivation) *tensor.Tensor {
	needInputs("FusedConv2D", x, filter, bias)
	defer asOp("FusedConv2D")
	in := []*tensor.Tensor{x, filter, bias}
	o.check("FusedConv2D", in)
	if act > ReluActivation {
		fail("FusedConv2D", tensor.ErrAttr, in, "unknown activation %v (NoActivation or ReluActivation)", act)
	}
	if x.Rank() != 4 || filter.Rank() != 4 || bias.Rank() != 1 {
		fail("FusedConv2D", tensor.ErrRank, in, "needs a rank-4 input and filter and a vector bias, got %v, %v and %v", x.Shape(), filter.Shape(), bias.Shape())
	}
	h, w := hw(x, o.Format)
	a, ok := gemmConv(o, h, w, filter.Dim(0), filter.Dim(1))
	if !ok {
		// Negative padding: the general convolution, then the two ops.
		y := BiasAdd(Conv(x, filter, o.convOpts(h, w, filter.Dim(0), filter.Dim(1))), bias, o.Format)
		if act == ReluActivation {
			y = Relu(y)
		}
		return y
	}
	return eager.Run1(fusedConv2DOp, FusedConv2DAttrs{Conv: a, Activation: act}, x, filter, bias)
}

var fusedConv2DOp *eager.Op

func init() {
	fusedConv2DOp = eager.Register(&eager.Op{
		Name: "FusedConv2D", Inputs: 3, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, f, b, a := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Attrs.(FusedConv2DAttrs)
			if a.Activation > ReluActivation {
				c.Fail(tensor.ErrAttr, "unknown activation %v", a.Activation)
			}
			outs := inferConv(c, x, f, a.Conv)
			if b.Rank() != 1 || b.Dim(0) != f.Dim(3) {
				c.Fail(tensor.ErrShape, "bias %v does not match the filter's %d output channels", b.Shape(), f.Dim(3))
			}
			return outs
		},
		// FusedConv2DBackprop (conv_fused_grad.go): dz = dy masked where
		// the result is 0 (for Relu, y > 0 exactly where conv + bias > 0),
		// then the convolution's two backprops and the bias's sum, from dz.
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return fusedConv2DGrads(g.Attrs.(FusedConv2DAttrs), g.Inputs[0], g.Inputs[1], g.Outputs[0], g.OutGrads[0], g.Needs)
		},
	})
}
