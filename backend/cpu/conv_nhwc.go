package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The NHWC kernels of the GEMM convolution (conv_gemm.go): per image, the
// im2col matrix P [OH*OW, KH*KW*C] and one GEMM against the HWIO filter,
// read in place as [KH*KW*C, O].

// im2col fills p [OH*OW, KH*KW*C] from one image x [H, W, C]: row (oh, ow)
// holds the pixels under the filter, zeros in the padding. Filter row by
// filter row, so each input row is read while it is in cache. (col2im
// walks the same runs; one walker for both, the direction a flag, made the
// [32 32 32 3] train step 15% slower in an interleaved A/B.)
func im2col[T convElem](p, x []T, g convGeom) {
	kc, kkc := g.kw*g.c, g.kh*g.kw*g.c
	for oh := 0; oh < g.oh; oh++ {
		rows := p[oh*g.ow*kkc:][:g.ow*kkc]
		for kh := 0; kh < g.kh; kh++ {
			ih := oh*g.sh + kh*g.dh - g.pt
			if ih < 0 || ih >= g.h {
				for ow := 0; ow < g.ow; ow++ {
					clear(rows[ow*kkc+kh*kc:][:kc])
				}
				continue
			}
			src := x[ih*g.w*g.c:][:g.w*g.c]
			for ow := 0; ow < g.ow; ow++ {
				seg := rows[ow*kkc+kh*kc:][:kc]
				iw0 := ow*g.sw - g.pl
				if g.dw == 1 && iw0 >= 0 && iw0+g.kw <= g.w {
					copySmall(seg, src[iw0*g.c:][:kc])
					continue
				}
				for kw := 0; kw < g.kw; kw++ {
					px := seg[kw*g.c:][:g.c]
					if iw := iw0 + kw*g.dw; iw >= 0 && iw < g.w {
						copySmall(px, src[iw*g.c:][:g.c])
					} else {
						clear(px)
					}
				}
			}
		}
	}
}

// col2im adds p [OH*OW, KH*KW*C] back into one image's gradient dx [H, W,
// C], the adjoint of im2col.
func col2im[T tensor.Float](dx, p []T, g convGeom) {
	kc, kkc := g.kw*g.c, g.kh*g.kw*g.c
	for oh := 0; oh < g.oh; oh++ {
		rows := p[oh*g.ow*kkc:][:g.ow*kkc]
		for kh := 0; kh < g.kh; kh++ {
			ih := oh*g.sh + kh*g.dh - g.pt
			if ih < 0 || ih >= g.h {
				continue
			}
			dst := dx[ih*g.w*g.c:][:g.w*g.c]
			for ow := 0; ow < g.ow; ow++ {
				seg := rows[ow*kkc+kh*kc:][:kc]
				iw0 := ow*g.sw - g.pl
				if g.dw == 1 && iw0 >= 0 && iw0+g.kw <= g.w {
					addSmall(dst[iw0*g.c:][:kc], seg)
					continue
				}
				for kw := 0; kw < g.kw; kw++ {
					if iw := iw0 + kw*g.dw; iw >= 0 && iw < g.w {
						addSmall(dst[iw*g.c:][:g.c], seg[kw*g.c:][:g.c])
					}
				}
			}
		}
	}
}

// copySmall is copy for the short runs of im2col (a few channels): a loop
// where the call to memmove would cost more than the copy.
func copySmall[T convElem](dst, src []T) {
	if len(dst) >= 32 {
		copy(dst, src)
		return
	}
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = src[i]
	}
}

// addSmall is addInto for col2im's short runs.
func addSmall[T tensor.Float](dst, src []T) {
	if len(dst) >= 32 {
		addInto(dst, src)
		return
	}
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// conv2DNHWC: y [N, OH, OW, O], Y_n = P_n · F, then ep.
//
// With one input channel the image [H, W, 1] is also [1, H, W], and the
// im2col matrix's transpose is NCHW's im2row matrix: made by copies of
// whole shifted rows, and packed as the GEMM's transposed A 12 contiguous
// values at a time, where im2col moves one value per copy (the first
// layer of a grayscale CNN: 2x).
func conv2DNHWC[T tensor.Float](c *eager.Call, g convGeom, x, f, y []T, ep convEpilogue[T]) {
	ohw, img := g.oh*g.ow, g.h*g.w*g.c
	perImage(c, g, ohw*g.taps(), nil, func(n int, p []T, par bool) {
		yn := y[n*ohw*g.o : (n+1)*ohw*g.o]
		if g.c == 1 {
			im2row(p, x[n*img:], g)
			gemmOn(c, par, ohw, g.o, g.taps(), p, true, f, false, yn, false)
		} else {
			im2col(p, x[n*img:], g)
			gemmOn(c, par, ohw, g.o, g.taps(), p, false, f, false, yn, false)
		}
		ep.apply(yn, ohw)
	}, nil)
}

// conv2DNHWCInput: dx [N, H, W, C], P_n = dY_n · Fᵀ added back by col2im.
func conv2DNHWCInput[T tensor.Float](c *eager.Call, g convGeom, f, dy, dx []T) {
	ohw, img, taps := g.oh*g.ow, g.h*g.w*g.c, g.taps()
	ft, buf := nhwcFilterT(g, f)
	defer putGemmScratch(buf)
	perImage(c, g, ohw*taps, nil, func(n int, p []T, par bool) {
		nhwcInputImage(c, par, g, ft, dy[n*ohw*g.o:(n+1)*ohw*g.o], p, dx[n*img:(n+1)*img])
	}, nil)
}

// nhwcFilterT is Fᵀ [O, taps] of an HWIO filter, made once per call so
// that each image's GEMM reads it in place instead of packing the
// transposed filter again; the buffer goes back to putGemmScratch.
func nhwcFilterT[T tensor.Float](g convGeom, f []T) ([]T, *[]byte) {
	taps := g.taps()
	ft, buf := gemmScratch[T](g.o * taps)
	for t := range taps {
		for o, v := range f[t*g.o : (t+1)*g.o] {
			ft[o*taps+t] = v
		}
	}
	return ft, buf
}

// nhwcInputImage is one image's input gradient dxn [H, W, C] from its
// output gradient dyn [OH*OW, O]: P_n = dY_n · Fᵀ into the scratch p,
// added back by col2im.
func nhwcInputImage[T tensor.Float](c *eager.Call, par bool, g convGeom, ft, dyn, p, dxn []T) {
	ohw, taps := g.oh*g.ow, g.taps()
	gemmOn(c, par, ohw, taps, g.o, dyn, false, ft, false, p, false)
	clear(dxn)
	col2im(dxn, p, g)
}

// conv2DNHWCFilter: df [KH, KW, C, O] = Σ_n P_nᵀ · dY_n, each goroutine
// summing its images into its own block, the blocks added at the end
// (nhwcFilterImage, nhwcFilterResult).
func conv2DNHWCFilter[T tensor.Float](c *eager.Call, g convGeom, x, dy, df []T) {
	ohw, img, taps := g.oh*g.ow, g.h*g.w*g.c, g.taps()
	direct := nhwcFilterDirect[T](g)
	total, buf := perImageSums(c, g, ohw*taps, taps*g.o, func(n int, p, acc []T, par bool) {
		nhwcFilterImage(c, par, g, x[n*img:], dy[n*ohw*g.o:(n+1)*ohw*g.o], p, acc, direct)
	})
	defer putGemmScratch(buf)
	nhwcFilterResult(df, total, g, direct)
}

// nhwcFilterDirect reports whether the filter gradient runs as P_nᵀ · dY_n
// (acc [taps, O]) rather than its transpose dY_nᵀ · P_n (acc [O, taps]).
// The transpose serves where the filter has more taps than outputs,
// unless P_nᵀ packs as fast as dY_nᵀ (spack12T) and pads the
// micro-kernel's tiles less: 288 taps fill 24 tiles of 12 rows where 64
// outputs fill 5⅓ (P_nᵀ · dY_n took 7% less time on Zen 4). With fewer taps
// than outputs (a first layer: one to three input channels) P_nᵀ · dY_n
// is the better product: dY_n is then read in place as the GEMM's
// right-hand side, as wide as the micro-kernel, and the short P_nᵀ has
// few rows to pack. With one input channel P_nᵀ is NCHW's im2row matrix,
// as in conv2DNHWC, and P_nᵀ · dY_n packs best whatever the counts.
func nhwcFilterDirect[T tensor.Float](g convGeom) bool {
	taps := g.taps()
	return taps < g.o || g.c == 1 ||
		turnPays[T](g.o, taps)
}

// nhwcFilterImage adds image n's filter gradient to acc: xn is the image
// [H, W, C] (or more, from it), dyn its output gradient [OH*OW, O], p
// scratch for its im2col (im2row with one channel) matrix.
func nhwcFilterImage[T tensor.Float](c *eager.Call, par bool, g convGeom, xn, dyn, p, acc []T, direct bool) {
	ohw, taps := g.oh*g.ow, g.taps()
	if g.c == 1 {
		im2row(p, xn, g)
		gemmOn(c, par, taps, g.o, ohw, p, false, dyn, false, acc, true)
		return
	}
	im2col(p, xn, g)
	if direct {
		gemmOn(c, par, taps, g.o, ohw, p, true, dyn, false, acc, true)
		return
	}
	gemmOn(c, par, g.o, taps, ohw, dyn, true, p, false, acc, true)
}

// nhwcFilterResult writes the summed blocks as the HWIO filter gradient.
func nhwcFilterResult[T tensor.Float](df, total []T, g convGeom, direct bool) {
	taps := g.taps()
	if direct {
		copy(df, total) // [taps, O]: the HWIO filter's layout
		return
	}
	for o := 0; o < g.o; o++ {
		for t, v := range total[o*taps : (o+1)*taps] {
			df[t*g.o+o] = v
		}
	}
}
