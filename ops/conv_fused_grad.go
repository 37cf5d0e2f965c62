package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// FusedConv2DBackprop is FusedConv2D's backward pass as one op: from the
// fused op's input x, filter f, result y and the result's gradient dy, the
// gradient dz = dy masked by the activation (where y > 0 for Relu), then
// the convolution's input gradient (when asked), its filter gradient and
// the bias gradient, all from dz. A backend computes dz image by image
// into a buffer that stays in cache while the three gradients read it,
// where the three ops and ReluGrad wrote dz in full and read it three
// times more (oneDNN likewise computes the bias gradient with the filter
// gradient). FusedConv2D's gradient rule runs it; it is not exported.

// FusedConv2DBackpropAttrs are the backward op's attributes: the forward
// op's, and whether the input gradient is wanted (a first layer's is not).
type FusedConv2DBackpropAttrs struct {
	FusedConv2DAttrs
	InputGrad bool
}

func (a FusedConv2DBackpropAttrs) String() string {
	return fmt.Sprintf("%v input_grad=%v", a.FusedConv2DAttrs, a.InputGrad)
}

var fusedConv2DBackpropOp *eager.Op

func init() {
	// Inputs x, f, y, dy; outputs [dx,] df, db.
	fusedConv2DBackpropOp = eager.Register(&eager.Op{
		Name: "FusedConv2DBackprop", Inputs: 4, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, f, y, dy, a := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Attrs.(FusedConv2DBackpropAttrs)
			if a.Activation > ReluActivation {
				c.Fail(tensor.ErrAttr, "unknown activation %v", a.Activation)
			}
			ys := inferConv(c, x, f, a.Conv)[0].Shape
			if !y.Shape().Equal(ys) || !dy.Shape().Equal(ys) {
				c.Fail(tensor.ErrShape, "result %v and its gradient %v must both be the convolution's %v", y.Shape(), dy.Shape(), ys)
			}
			outs := []eager.Out{{DType: x.DType(), Shape: f.Shape()}, {DType: x.DType(), Shape: tensor.Shape{f.Dim(3)}}}
			if a.InputGrad {
				outs = append([]eager.Out{{DType: x.DType(), Shape: x.Shape()}}, outs...)
			}
			return outs
		},
		// The outputs are linear in dz = mask(y)·dy, and dx and df bilinear
		// in (f, dz) and (x, dz): given their gradients gdx, gdf, gdb,
		//   g(dz) = Conv2D(gdx, f) + Conv2D(x, gdf) + gdb along the channels,
		//   g(dy) = mask(y)·g(dz), g(x) = Bi(gdf, dz), g(f) = Bf(gdx, dz),
		// and none for y, where the mask is piecewise constant.
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, f, y, dy, a := g.Inputs[0], g.Inputs[1], g.Inputs[2], g.Inputs[3], g.Attrs.(FusedConv2DBackpropAttrs)
			var gdx *tensor.Tensor
			outGrads := g.OutGrads
			if a.InputGrad {
				gdx, outGrads = outGrads[0], outGrads[1:]
			}
			gdf, gdb := outGrads[0], outGrads[1]
			dz := dy // made once, where a gradient reads it
			if a.Activation == ReluActivation && (g.Needs[0] || g.Needs[1] && gdx != nil) {
				dz = reluGrad(y, dy)
			}
			gradDz := func() *tensor.Tensor {
				s := BiasAdd(eager.Run1(conv2DGemmOp, a.Conv, x, gdf), gdb, a.Conv.Format)
				if gdx != nil {
					s = Add(s, eager.Run1(conv2DGemmOp, a.Conv, gdx, f))
				}
				if a.Activation == ReluActivation {
					s = reluGrad(y, s)
				}
				return s
			}
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor { return eager.Run1(conv2DGemmInputOp, a.Conv, gdf, dz) }),
				when(g.Needs[1] && gdx != nil, func() *tensor.Tensor { return eager.Run1(conv2DGemmFilterOp, a.Conv, gdx, dz) }),
				nil,
				when(g.Needs[3], gradDz),
			}
		},
	})
}

// fusedConv2DGrads are FusedConv2D's gradients in x, f and bias (nil
// where not needed) from its inputs, result y and the result's gradient
// dy, through FusedConv2DBackprop.
func fusedConv2DGrads(a FusedConv2DAttrs, x, f, y, dy *tensor.Tensor, needs []bool) []*tensor.Tensor {
	if !needs[0] && !needs[1] && !needs[2] {
		return []*tensor.Tensor{nil, nil, nil}
	}
	outs := eager.Run(fusedConv2DBackpropOp, FusedConv2DBackpropAttrs{FusedConv2DAttrs: a, InputGrad: needs[0]}, x, f, y, dy)
	var dx *tensor.Tensor
	if needs[0] {
		dx, outs = outs[0], outs[1:]
	}
	grads := []*tensor.Tensor{dx, outs[0], outs[1]}
	for i := 1; i < 3; i++ {
		if !needs[i] {
			if !eager.Observing() { // else a tape may have recorded it
				grads[i].Release()
			}
			grads[i] = nil
		}
	}
	return grads
}
