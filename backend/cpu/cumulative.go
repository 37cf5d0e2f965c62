package cpu

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of Cumsum and Cumprod (ops/cumulative.go).

// cumulativeKernel runs x's sums (or products) along the axis: for each
// step of the axis, a row of inner running results at once, in order.
func cumulativeKernel[T tensor.Num](product bool) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, a := c.Inputs[0], c.Attrs.(opattr.CumsumAttrs)
		axis := a.Axis
		n := x.Dim(axis)
		inner := tensor.Shape(x.Shape()[axis+1:]).NumElements()
		outer := tensor.Shape(x.Shape()[:axis]).NumElements()
		xv, ov := data[T](x), data[T](outs[0])
		var start T
		if product {
			start = 1
		}
		if inner == 1 { // rows: a running result in a register
			runRows(xv, ov, outer, n, start, product, a.Exclusive, a.Reverse)
			return
		}
		acc := make([]T, inner)
		for o := 0; o < outer; o++ {
			for i := range acc {
				acc[i] = start
			}
			for k := 0; k < n; k++ {
				j := k
				if a.Reverse {
					j = n - 1 - k
				}
				row := (o*n + j) * inner
				xs, os := xv[row:row+inner], ov[row:row+inner]
				for i, v := range xs {
					next := acc[i] + v
					if product {
						next = acc[i] * v
					}
					if a.Exclusive {
						os[i] = acc[i]
					} else {
						os[i] = next
					}
					acc[i] = next
				}
			}
		}
	}
}

// runRows is cumulativeKernel over rows rows of n contiguous elements.
func runRows[T tensor.Num](xv, ov []T, rows, n int, start T, product, exclusive, reverse bool) {
	for r := range rows {
		xs, os := xv[r*n:(r+1)*n], ov[r*n:(r+1)*n]
		acc := start
		for k := range n {
			j := k
			if reverse {
				j = n - 1 - k
			}
			next := acc + xs[j]
			if product {
				next = acc * xs[j]
			}
			if exclusive {
				os[j] = acc
			} else {
				os[j] = next
			}
			acc = next
		}
	}
}

func init() {
	for _, op := range []struct {
		name    string
		product bool
	}{{"Cumsum", false}, {"Cumprod", true}} {
		kernels{
			f32: cumulativeKernel[float32](op.product), f64: cumulativeKernel[float64](op.product),
			i32: cumulativeKernel[int32](op.product), i64: cumulativeKernel[int64](op.product),
			u8: cumulativeKernel[uint8](op.product),
		}.register(op.name)
	}
}
