package cpu

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernel of Cumsum (ops/cumsum.go).

func cumsumKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(opattr.CumsumAttrs)
	axis := a.Axis
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

func init() {
	kernels{
		f32: cumsumKernel[float32], f64: cumsumKernel[float64], i32: cumsumKernel[int32],
		i64: cumsumKernel[int64], u8: cumsumKernel[uint8],
	}.register("Cumsum")
}
