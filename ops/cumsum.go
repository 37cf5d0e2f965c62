package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// CumsumAttrs configure Cumsum: the axis, whether each sum leaves out its
// own element (exclusive), and whether sums run from the end (reverse).
type CumsumAttrs struct {
	Axis               int
	Exclusive, Reverse bool
}

func (a CumsumAttrs) String() string {
	return fmt.Sprintf("axis=%d exclusive=%v reverse=%v", a.Axis, a.Exclusive, a.Reverse)
}

func cumsumKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(CumsumAttrs)
	axis := a.Axis
	if axis < 0 {
		axis += x.Rank()
	}
	n := x.Dim(axis)
	inner := tensor.Shape(x.Shape()[axis+1:]).NumElements()
	outer := tensor.Shape(x.Shape()[:axis]).NumElements()
	xv, ov := data[T](x), data[T](outs[0])
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			var acc T
			for k := 0; k < n; k++ {
				j := k
				if a.Reverse {
					j = n - 1 - k
				}
				at := (o*n+j)*inner + i
				if a.Exclusive {
					ov[at] = acc
					acc += xv[at]
				} else {
					acc += xv[at]
					ov[at] = acc
				}
			}
		}
	}
}

var cumsumOp *eager.Op

func init() {
	cumsumOp = eager.Register(cpuKernels{
		f32: cumsumKernel[float32], f64: cumsumKernel[float64], i32: cumsumKernel[int32],
		i64: cumsumKernel[int64], u8: cumsumKernel[uint8],
	}.register(&eager.Op{
		Name: "Cumsum", Inputs: 1, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			x := c.Inputs[0]
			if x.Rank() == 0 {
				c.Fail(tensor.ErrRank, "needs rank 1 or more")
			}
			normAxis(c, c.Attrs.(CumsumAttrs).Axis, x.Rank())
			return c.Out1(x.DType(), x.Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			// The adjoint of a running sum is the running sum the other way.
			a := g.Attrs.(CumsumAttrs)
			a.Reverse = !a.Reverse
			return []*tensor.Tensor{eager.Run1(cumsumOp, a, g.OutGrads[0])}
		},
	}))
}

// Cumsum returns running sums of x along axis; exclusive leaves each
// element out of its own sum, reverse sums from the end. Numeric dtypes.
func Cumsum(x *tensor.Tensor, axis int, exclusive, reverse bool) *tensor.Tensor {
	return eager.Run1(cumsumOp, CumsumAttrs{Axis: axis, Exclusive: exclusive, Reverse: reverse}, x)
}
