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
		if len(ov) == 0 {
			return
		}
		var start T
		if product {
			start = 1
		}
		if inner == 1 { // rows: running results in registers
			deviceOf(c).Parallel((outer+3)/4, float64(n)*4, func(lo, hi int) {
				rows := min(hi*4, outer) - lo*4
				runRows(xv[lo*4*n:], ov[lo*4*n:], rows, n, start, product, a.Exclusive, a.Reverse)
			})
			return
		}
		// Columns: inner running results a row at a time, the rows of each
		// outer index (or, with one, stretches of columns) over the workers.
		parts, width := outer, inner
		if outer == 1 {
			width = min(inner, 1024)
			parts = (inner + width - 1) / width
		}
		deviceOf(c).Parallel(parts, float64(n*width), func(lo, hi int) {
			acc := make([]T, width)
			for p := lo; p < hi; p++ {
				o, i0 := p, 0
				if outer == 1 {
					o, i0 = 0, p*width
				}
				w := min(width, inner-i0)
				for i := range acc[:w] {
					acc[i] = start
				}
				for k := 0; k < n; k++ {
					j := k
					if a.Reverse {
						j = n - 1 - k
					}
					row := (o*n+j)*inner + i0
					xs, os := xv[row:row+w], ov[row:row+w]
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
		})
	}
}

// runRows is cumulativeKernel over rows rows of n contiguous elements,
// four rows at a time: four independent running results, where one row's
// waits for each addition's latency.
func runRows[T tensor.Num](xv, ov []T, rows, n int, start T, product, exclusive, reverse bool) {
	r := 0
	for ; r+4 <= rows; r += 4 {
		x0, x1, x2, x3 := xv[r*n:][:n], xv[(r+1)*n:][:n], xv[(r+2)*n:][:n], xv[(r+3)*n:][:n]
		o0, o1, o2, o3 := ov[r*n:][:n], ov[(r+1)*n:][:n], ov[(r+2)*n:][:n], ov[(r+3)*n:][:n]
		a0, a1, a2, a3 := start, start, start, start
		for k := range n {
			j := k
			if reverse {
				j = n - 1 - k
			}
			var n0, n1, n2, n3 T
			if product {
				n0, n1, n2, n3 = a0*x0[j], a1*x1[j], a2*x2[j], a3*x3[j]
			} else {
				n0, n1, n2, n3 = a0+x0[j], a1+x1[j], a2+x2[j], a3+x3[j]
			}
			if exclusive {
				o0[j], o1[j], o2[j], o3[j] = a0, a1, a2, a3
			} else {
				o0[j], o1[j], o2[j], o3[j] = n0, n1, n2, n3
			}
			a0, a1, a2, a3 = n0, n1, n2, n3
		}
	}
	for ; r < rows; r++ {
		xs, os := xv[r*n:][:n], ov[r*n:][:n]
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
