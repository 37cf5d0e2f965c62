package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
)

// The float32 depthwise convolution with one filter a channel (multiplier
// 1, MobileNet's) where the vector kernels are there, over an image's
// NHWC rows, whose channels are contiguous: each tap of a row of outputs
// is one call of a row kernel over the columns it reaches (sdwmac: a row
// of channels times the tap's filter row added into the row it feeds, a
// fused multiply-add each; sdwdot64: the filter gradient's products summed
// over a row's columns), and the columns every tap reaches sum their taps
// in registers (sdwwin). NCHW images are transposed to NHWC and back
// around the same rows, an image at a time. The forward and the input's
// gradient sum their taps in the scalar kernels' order (kh, then kw),
// each output's taps fused; the filter's gradient sums its products in
// float64, as the float64 kernels do.

// dwVec reports whether the vector path takes a float32 convolution of g.
func dwVec(g dwGeom) bool { return haveVecKernels && g.m == 1 && g.c > 0 }

// dwCols is the output columns [lo, hi) whose tap kw reads inside the
// input's width, and the input column iw0 output column lo reads.
func dwCols(a ops.Conv2DGemmAttrs, ow, kw int) (lo, hi, iw0 int) {
	off := kw*a.DilationW - a.PadLeft // output column j reads j·StrideW + off
	if off < 0 {
		lo = (-off + a.StrideW - 1) / a.StrideW
	}
	if last := a.W - 1 - off; last >= 0 {
		hi = min(ow, last/a.StrideW+1)
	}
	return lo, hi, lo*a.StrideW + off
}

// dwRowTaps calls fn for each tap (kh, kw) of row kh of the filter whose
// columns (dwCols) are not empty.
func dwRowTaps(g dwGeom, kh int, fn func(tap, lo, hi, iw0 int)) {
	for kw := range g.a.KW {
		if lo, hi, iw0 := dwCols(g.a, g.ow, kw); lo < hi {
			fn(kh*g.a.KW+kw, lo, hi, iw0)
		}
	}
}

// dwScratch is a shard's scratch for a row's window: the byte offsets of
// its taps inside the input and, where some of the filter's taps are left
// out, the filter rows of the others; the input gradient's taps.
type dwScratch struct {
	offs []int
	f    []float32
	taps []dwTap
}

// dwTap is a tap feeding a residue class of an input gradient's row:
// its index in the filter, the output row it reads and the output column
// of the class's k-th input column, k + q.
type dwTap struct{ tap, oh, q int }

// window runs sdwwin over count outputs of ch channels from y[0], yStep
// apart, whose taps, s.offs (from the first output's window at x[0]) with
// the filter rows f, all fall inside the input, xStep apart; no taps:
// zeros.
func (s *dwScratch) window(y, x, f []float32, ch, count, yStep, xStep int) {
	switch {
	case count <= 0:
	case len(s.offs) == 0:
		for i := range count {
			clear(y[i*yStep:][:ch])
		}
	default:
		_ = y[(count-1)*yStep+ch-1]
		sdwwin(&y[0], &x[0], yStep, xStep, &s.offs[0], len(s.offs), &f[0], ch, count)
	}
}

// edges calls fn with [e0, e1) for each of [0, lo) and [hi, n) that is
// not empty.
func edges(lo, hi, n int, fn func(e0, e1 int)) {
	if lo > 0 {
		fn(0, min(lo, n))
	}
	if hi = max(hi, lo); hi < n {
		fn(hi, n)
	}
}

// dwReadRows calls fn for each row kh of the filter whose input row ih,
// read by output row oh, lies inside the image x [H W C] (row: that row),
// and returns how many did.
func dwReadRows(g dwGeom, x []float32, oh int, fn func(kh, ih int, row []float32)) int {
	a, n := g.a, 0
	for kh := range a.KH {
		if ih := oh*a.StrideH - a.PadTop + kh*a.DilationH; ih >= 0 && ih < a.H {
			fn(kh, ih, x[ih*a.W*g.c:][:a.W*g.c])
			n++
		}
	}
	return n
}

// dwForwardRow writes output row oh of an image: x [H W C] and y [OH OW
// C], NHWC. The columns whose every tap reads inside the input's width
// take the window kernel; the others, each tap over the ones it reaches.
func dwForwardRow(g dwGeom, x, f, y []float32, oh int, s *dwScratch) {
	a, ch := g.a, g.c
	y = y[oh*g.ow*ch:][:g.ow*ch]
	// Interior columns: j·StrideW − PadLeft ≥ 0 and its last tap < W.
	lo := min((a.PadLeft+a.StrideW-1)/a.StrideW, g.ow)
	hi := 0
	if last := a.W - 1 + a.PadLeft - (a.KW-1)*a.DilationW; last >= 0 {
		hi = min(g.ow, last/a.StrideW+1)
	}
	s.offs, s.f = s.offs[:0], s.f[:0]
	fs := f
	if dwReadRows(g, x, oh, func(kh, ih int, _ []float32) {
		for kw := range a.KW {
			s.offs = append(s.offs, 4*(ih*a.W+kw*a.DilationW)*ch)
			s.f = append(s.f, f[(kh*a.KW+kw)*ch:][:ch]...)
		}
	}) < a.KH { // some filter rows fall outside: the others'
		fs = s.f
	}
	if lo < hi {
		s.window(y[lo*ch:], x[(lo*a.StrideW-a.PadLeft)*ch:], fs, ch, hi-lo, ch, a.StrideW*ch)
	}
	edges(lo, hi, g.ow, func(e0, e1 int) {
		clear(y[e0*ch : e1*ch])
		dwReadRows(g, x, oh, func(kh, _ int, row []float32) {
			dwRowTaps(g, kh, func(tap, clo, chi, iw0 int) {
				if c0, c1 := max(clo, e0), min(chi, e1); c0 < c1 {
					iw := iw0 + (c0-clo)*a.StrideW
					_ = row[(iw+(c1-c0-1)*a.StrideW)*ch+ch-1]
					sdwmac(&y[c0*ch], ch, &row[iw*ch], a.StrideW*ch, &f[tap*ch], ch, c1-c0)
				}
			})
		})
	})
}

// dwInputRow writes input row ih of an image's gradient dx [H W C] from dy
// [OH OW C]: each element gathers the taps that read it, in the filter's
// order. The row's columns fall in StrideW classes (iw = r + k·StrideW),
// each read by its own taps; a class's columns that every one of its taps
// reaches take the window kernel (over dy, a column of dy a column of the
// class), the others each tap in turn.
func dwInputRow(g dwGeom, f, dy, dx []float32, ih int, s *dwScratch) {
	a, ch, sw := g.a, g.c, g.a.StrideW
	dx = dx[ih*a.W*ch:][:a.W*ch]
	for r := range min(sw, a.W) {
		s.taps, s.offs, s.f = s.taps[:0], s.offs[:0], s.f[:0]
		qmin, qmax := 0, 0
		for kh := range a.KH {
			th := ih + a.PadTop - kh*a.DilationH // oh·StrideH
			if th < 0 || th%a.StrideH != 0 || th/a.StrideH >= g.oh {
				continue
			}
			for kw := range a.KW {
				d := r + a.PadLeft - kw*a.DilationW // ow·StrideW − k·StrideW
				if (d%sw+sw)%sw != 0 {
					continue
				}
				q := (d - (d%sw+sw)%sw) / sw
				if len(s.taps) == 0 || q < qmin {
					qmin = q
				}
				if len(s.taps) == 0 || q > qmax {
					qmax = q
				}
				s.taps = append(s.taps, dwTap{kh*a.KW + kw, th / a.StrideH, q})
			}
		}
		nk := (a.W - r + sw - 1) / sw // the class's columns
		kLo, kHi := 0, nk
		if len(s.taps) > 0 {
			kLo, kHi = min(max(-qmin, 0), nk), min(nk, g.ow-qmax)
		}
		kHi = max(kHi, kLo)
		for _, t := range s.taps {
			s.offs = append(s.offs, 4*(t.oh*g.ow+kLo+t.q)*ch)
			s.f = append(s.f, f[t.tap*ch:][:ch]...)
		}
		if kLo < kHi {
			s.window(dx[(r+kLo*sw)*ch:], dy, s.f, ch, kHi-kLo, sw*ch, ch)
		}
		edges(kLo, kHi, nk, func(k0, k1 int) {
			for k := k0; k < k1; k++ {
				out := dx[(r+k*sw)*ch:][:ch]
				clear(out)
				for _, t := range s.taps {
					if ow := k + t.q; ow >= 0 && ow < g.ow {
						sdwmac(&out[0], ch, &dy[(t.oh*g.ow+ow)*ch], ch, &f[t.tap*ch], ch, 1)
					}
				}
			}
		})
	}
}

// dwFilterImage adds an image's filter gradient to sum [KH KW C]: each
// tap's products over a row's columns, in float64.
func dwFilterImage(g dwGeom, x, dy []float32, sum []float64) {
	a, ch := g.a, g.c
	for oh := range g.oh {
		row := dy[oh*g.ow*ch:][:g.ow*ch]
		dwReadRows(g, x, oh, func(kh, _ int, xr []float32) {
			dwRowTaps(g, kh, func(tap, lo, hi, iw0 int) {
				_ = xr[(iw0+(hi-lo-1)*a.StrideW)*ch+ch-1]
				sdwdot64(&sum[tap*ch], &xr[iw0*ch], a.StrideW*ch, &row[lo*ch], ch, ch, hi-lo)
			})
		})
	}
}

// dwImages runs fn over the images of an NCHW batch in shards, each
// image's in and out as NHWC scratch: fn reads the transposes of ins'
// images (each [C, planes[i]] to [planes[i], C]) and writes the NHWC out
// image (of outPlane positions), which is transposed into outNCHW's image;
// outNCHW nil writes nothing back.
func dwImages(c *eager.Call, g dwGeom, ins [][]float32, planes []int, outNCHW []float32, outPlane int, cost float64, fn func(n int, ins [][]float32, out []float32)) {
	ch := g.c
	deviceOf(c).Parallel(g.n, cost, func(lo, hi int) {
		nhwc := make([][]float32, len(ins))
		for i := range ins {
			nhwc[i] = make([]float32, planes[i]*ch)
		}
		var out []float32
		if outNCHW != nil {
			out = make([]float32, outPlane*ch)
		}
		for n := lo; n < hi; n++ {
			for i, in := range ins {
				transposeInto(nhwc[i], in[n*ch*planes[i]:], ch, planes[i])
			}
			fn(n, nhwc, out)
			if outNCHW != nil {
				transposeInto(outNCHW[n*ch*outPlane:], out, outPlane, ch)
			}
		}
	})
}

// dwRows writes dst (images of dstPlane positions) from src (of
// srcPlane) a row of dst at a time, rows a dst image, by row (given an
// image of each as NHWC): NHWC batches a row a shard's unit, NCHW ones an
// image, transposed to NHWC and back (dwImages).
func dwRows(c *eager.Call, g dwGeom, src []float32, srcPlane int, dst []float32, dstPlane, rows int, cost float64,
	row func(src, dst []float32, r int, s *dwScratch)) {
	ch := g.c
	if g.a.Format == ops.NHWC {
		deviceOf(c).Parallel(g.n*rows, cost, func(lo, hi int) {
			var s dwScratch
			for r := lo; r < hi; r++ {
				n := r / rows
				row(src[n*srcPlane*ch:][:srcPlane*ch], dst[n*dstPlane*ch:][:dstPlane*ch], r%rows, &s)
			}
		})
		return
	}
	dwImages(c, g, [][]float32{src}, []int{srcPlane}, dst, dstPlane, cost*float64(rows), func(_ int, in [][]float32, out []float32) {
		var s dwScratch
		for r := range rows {
			row(in[0], out, r, &s)
		}
	})
}

// depthwiseVec is the forward (y from x and f).
func depthwiseVec(c *eager.Call, g dwGeom, xv, fv, yv []float32) {
	a := g.a
	dwRows(c, g, xv, a.H*a.W, yv, g.oh*g.ow, g.oh, float64(g.ow*g.c*a.KH*a.KW), func(x, y []float32, oh int, s *dwScratch) {
		dwForwardRow(g, x, fv, y, oh, s)
	})
}

// depthwiseInputVec is the input's gradient (dx from f and dy).
func depthwiseInputVec(c *eager.Call, g dwGeom, fv, dyv, dxv []float32) {
	a := g.a
	dwRows(c, g, dyv, g.oh*g.ow, dxv, a.H*a.W, a.H, float64(a.W*g.c*a.KH*a.KW), func(dy, dx []float32, ih int, s *dwScratch) {
		dwInputRow(g, fv, dy, dx, ih, s)
	})
}

// depthwiseFilterVec is the filter's gradient (df from x and dy): an
// image a shard's unit, the images' float64 sums added in order.
func depthwiseFilterVec(c *eager.Call, g dwGeom, xv, dyv, dfv []float32) {
	a, ch := g.a, g.c
	in, out := a.H*a.W, g.oh*g.ow
	size := a.KH * a.KW * ch
	sums := make([]float64, g.n*size)
	cost := float64(out * a.KH * a.KW * ch)
	if a.Format == ops.NHWC {
		deviceOf(c).Parallel(g.n, cost, func(lo, hi int) {
			for n := lo; n < hi; n++ {
				dwFilterImage(g, xv[n*in*ch:][:in*ch], dyv[n*out*ch:][:out*ch], sums[n*size:][:size])
			}
		})
	} else {
		dwImages(c, g, [][]float32{xv, dyv}, []int{in, out}, nil, 0, cost, func(n int, xdy [][]float32, _ []float32) {
			dwFilterImage(g, xdy[0], xdy[1], sums[n*size:][:size])
		})
	}
	for i := range size {
		acc := 0.0
		for n := range g.n {
			acc += sums[n*size+i]
		}
		dfv[i] = float32(acc)
	}
}
