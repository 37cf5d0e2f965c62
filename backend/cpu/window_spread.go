package cpu

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The gradient of a pooling's window sums (average pooling's), as package
// ops asks for it: a window sum over dy dilated by the pooling's strides,
// which ops.ReduceWindowAttrs.SpreadOf describes as that 2-D pooling. Each
// element of the result sums dy over the pooling's windows that hold it,
// found by two divisions a row and a column, as loops over channel vectors
// (NHWC) or plane rows (NCHW) instead of the general geometry's walk over
// the dilation's holes.

// rows is the rows of p's operand planes (N x H in NHWC, N x C x H in
// NCHW): the unit the spread loops share out.
func rows(p ops.Pooling2D) int {
	if p.NHWC {
		return p.N * p.H
	}
	return p.N * p.C * p.H
}

// cover is the windows [lo, hi) of a pooling along one dimension (k
// taps, stride s, low padding pad, n windows) that hold position i.
func cover(i, k, s, pad, n int) (lo, hi int) {
	if t := i + pad - k + 1; t > 0 {
		lo = (t + s - 1) / s
	}
	return lo, min((i+pad)/s+1, n)
}

// spreadSums writes out, the sums of dy over the windows of p that hold
// each element, plus init for each of a result window's taps on no
// window (none where init is zero, the identity ops gives).
func spreadSums[T tensor.Num](dev *device.CPUDevice, p ops.Pooling2D, dy, out []T, init T) {
	if !p.NHWC && init == 0 {
		spreadPlanes(dev, p, dy, out)
		return
	}
	dev.Parallel(rows(p), float64(p.W*max(p.C, 1)*4), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			img, ih := r/p.H, r%p.H // img is an image (NHWC) or a plane (NCHW)
			ohLo, ohHi := cover(ih, p.KH, p.SH, p.PH, p.OH)
			for iw := range p.W {
				owLo, owHi := cover(iw, p.KW, p.SW, p.PW, p.OW)
				missing := p.KH*p.KW - max(ohHi-ohLo, 0)*max(owHi-owLo, 0)
				if p.NHWC {
					o := out[(r*p.W+iw)*p.C:][:p.C]
					for k := range o {
						o[k] = init
					}
					for a := ohLo; a < ohHi; a++ {
						for b := owLo; b < owHi; b++ {
							addInto(o, dy[((img*p.OH+a)*p.OW+b)*p.C:][:p.C])
						}
					}
					if init != 0 {
						for range missing {
							for k := range o {
								o[k] += init
							}
						}
					}
					continue
				}
				acc := init
				for a := ohLo; a < ohHi; a++ {
					for _, v := range dy[(img*p.OH+a)*p.OW:][owLo:max(owHi, owLo)] {
						acc += v
					}
				}
				if init != 0 {
					for range missing {
						acc += init
					}
				}
				out[r*p.W+iw] = acc
			}
		}
	})
}

// spreadPlanes is spreadSums over NCHW planes with init 0, in two passes a
// plane: each dy row spread along the plane's columns (every column the
// sum of the row's windows over it), then each row of out the sum of the
// spread rows whose windows cover it (whole rows, the vector add for
// float32).
func spreadPlanes[T tensor.Num](dev *device.CPUDevice, p ops.Pooling2D, dy, out []T) {
	// The windows over each column and each row, [lo, hi) (hi >= lo).
	cols, rows := make([][2]int, p.W), make([][2]int, p.H)
	for iw := range cols {
		lo, hi := cover(iw, p.KW, p.SW, p.PW, p.OW)
		cols[iw] = [2]int{lo, max(hi, lo)}
	}
	for ih := range rows {
		lo, hi := cover(ih, p.KH, p.SH, p.PH, p.OH)
		rows[ih] = [2]int{lo, max(hi, lo)}
	}
	dev.Parallel(p.N*p.C, float64(p.H*p.W*4), func(lo, hi int) {
		spread := make([]T, p.OH*p.W)
		for plane := lo; plane < hi; plane++ {
			g := dy[plane*p.OH*p.OW:][:p.OH*p.OW]
			for a := range p.OH {
				row, s := g[a*p.OW:][:p.OW], spread[a*p.W:][:p.W]
				for iw, c := range cols {
					var acc T
					for _, v := range row[c[0]:c[1]] {
						acc += v
					}
					s[iw] = acc
				}
			}
			o := out[plane*p.H*p.W:][:p.H*p.W]
			for ih, c := range rows {
				ohLo, ohHi := c[0], c[1]
				r := o[ih*p.W:][:p.W]
				if ohLo >= ohHi {
					clear(r)
					continue
				}
				copy(r, spread[ohLo*p.W:][:p.W])
				for a := ohLo + 1; a < ohHi; a++ {
					addInto(r, spread[a*p.W:][:p.W])
				}
			}
		}
	})
}
