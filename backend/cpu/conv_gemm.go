package cpu

import (
	"sync"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of Conv2DGemm and its two backprops (ops/conv_gemm.go), each
// image one GEMM, in either layout without transposing the batch:
//   - NCHW: against the image's "im2row" matrix, row (c, kh, kw) input
//     channel c shifted by tap (kh, kw) over the output positions; then
//     Y_n [O, OH*OW] = F [O, C*KH*KW] · P_n is already image n's output,
//     and the input lands in P_n by row copies.
//   - NHWC (conv_nhwc.go): against its "im2col" matrix, row (oh, ow) the
//     input pixels under the filter there, (kh, kw, c) in order, so that
//     the HWIO filter is already its [KH*KW*C, O] right-hand side and
//     Y_n [OH*OW, O] = P_n · F is the image's output.

// convGeom is the geometry of one call: strides sh, sw, dilations dh, dw,
// pads pt, pb, pl, pr, input h x w, batch n, channels c and o, filter
// kh x kw, output oh x ow.
type convGeom struct {
	sh, sw, dh, dw, pt, pb, pl, pr int
	h, w                           int
	format                         ops.DataFormat
	n, c, o, kh, kw, oh, ow        int
}

// geomOf is the geometry of a call with attributes a (which the op's
// shape rule has checked), batch n, ch input and o output channels.
func geomOf(a ops.Conv2DGemmAttrs, n, ch, o int) convGeom {
	oh, ow := a.OutSize()
	return convGeom{sh: a.StrideH, sw: a.StrideW, dh: a.DilationH, dw: a.DilationW,
		pt: a.PadTop, pb: a.PadBottom, pl: a.PadLeft, pr: a.PadRight, h: a.H, w: a.W, format: a.Format,
		n: n, c: ch, o: o, kh: a.KH, kw: a.KW, oh: oh, ow: ow}
}

func (g convGeom) taps() int { return g.c * g.kh * g.kw }

// span returns the output columns [lo, hi) whose input column ow*s+off lies
// in [0, w).
func span(off, s, w, ow int) (int, int) {
	lo := 0
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	hi := ow
	if last := w - 1 - off; last < 0 {
		hi = 0
	} else {
		hi = min(hi, last/s+1)
	}
	return min(lo, hi), hi
}

// shifted reports whether every im2row row is its input plane shifted by
// a constant (stride 1 with the output as wide as the input, as "same"
// padding gives), and the rows [lo, hi) of the output whose input row
// exists for filter row kh.
func (g convGeom) shifted(kh int) (ok bool, lo, hi int) {
	if g.sh != 1 || g.sw != 1 || g.ow != g.w {
		return false, 0, 0
	}
	return true, max(0, g.pt-kh*g.dh), min(g.oh, g.h+g.pt-kh*g.dh)
}

// tap is one row of the im2row matrix: input channel c seen through
// filter tap (kh, kw). Output column ow reads input column ow*sw+off; lo and
// hi bound the output columns whose input column exists. When the geometry
// is shifted (g.shifted), the whole row is the plane shifted by d, valid
// over [s0, s1) with output rows [r0, r1) inside the input.
type tap struct {
	c, kh, off, lo, hi int
	shift              bool
	r0, r1, d, s0, s1  int
}

// forTaps calls fn with every im2row row in order: its index and its tap.
func (g convGeom) forTaps(fn func(r int, t tap)) {
	for c := 0; c < g.c; c++ {
		for kh := 0; kh < g.kh; kh++ {
			for kw := 0; kw < g.kw; kw++ {
				t := tap{c: c, kh: kh, off: kw*g.dw - g.pl}
				t.lo, t.hi = span(t.off, g.sw, g.w, g.ow)
				t.shift, t.r0, t.r1 = g.shifted(kh)
				if t.shift {
					t.d = (kh*g.dh-g.pt)*g.w + t.off
					t.s0, t.s1 = max(t.r0*g.w, -t.d), min(t.r1*g.w, g.h*g.w-t.d)
					if t.s0 > t.s1 { // padding past the plane: no column valid (s0 could pass the row's end)
						t.s0 = max(t.s1, 0)
					}
				}
				fn((c*g.kh+kh)*g.kw+kw, t)
			}
		}
	}
}

// clearWrapped zeroes, in a shifted row, the columns of output rows [r0,
// r1) whose input column lies outside the plane (where the shift wrapped
// around a row end). The runs are a padding's width, a value or two: plain
// stores, where clear's call per run cost more than the stores (a tenth
// of a small convolution's training step).
func clearWrapped[T convElem](row []T, t tap, w int) {
	for oh := t.r0; oh < t.r1; oh++ {
		for x := oh * w; x < oh*w+t.lo; x++ {
			row[x] = 0
		}
		for x := oh*w + t.hi; x < (oh+1)*w; x++ {
			row[x] = 0
		}
	}
}

// im2row fills p [C*KH*KW, OH*OW] from one image x [C, H, W].
func im2row[T convElem](p, x []T, g convGeom) {
	ohw := g.oh * g.ow
	g.forTaps(func(r int, t tap) {
		row := p[r*ohw:][:ohw]
		if t.shift {
			// One copy of the plane, shifted; then zeros where the shift
			// wrapped around a row end or left the plane.
			plane := x[t.c*g.h*g.w:][:g.h*g.w]
			clear(row[:max(t.s0, 0)])
			if t.s0 < t.s1 {
				copy(row[t.s0:t.s1], plane[t.s0+t.d:t.s1+t.d])
			}
			clear(row[max(t.s1, 0):])
			clearWrapped(row, t, g.w)
			return
		}
		for oh := 0; oh < g.oh; oh++ {
			seg := row[oh*g.ow : (oh+1)*g.ow]
			ih := oh*g.sh + t.kh*g.dh - g.pt
			if ih < 0 || ih >= g.h {
				clear(seg)
				continue
			}
			src := x[(t.c*g.h+ih)*g.w:][:g.w]
			clear(seg[:t.lo])
			clear(seg[t.hi:])
			if t.lo >= t.hi {
				continue // no output column reads this row (src[lo+off:] may lie outside it)
			}
			if g.sw == 1 {
				copy(seg[t.lo:t.hi], src[t.lo+t.off:t.hi+t.off])
				continue
			}
			for ow := t.lo; ow < t.hi; ow++ {
				seg[ow] = src[ow*g.sw+t.off]
			}
		}
	})
}

// row2im adds p [C*KH*KW, OH*OW] back into one image's gradient dx [C, H,
// W], the adjoint of im2row.
func row2im[T tensor.Float](dx, p []T, g convGeom) {
	ohw := g.oh * g.ow
	g.forTaps(func(r int, t tap) {
		row := p[r*ohw:][:ohw]
		if t.lo >= t.hi {
			return
		}
		if t.shift {
			// Zero the entries im2row would have zeroed (wrapped columns),
			// then add the rows in one shifted pass.
			clearWrapped(row, t, g.w)
			if t.s0 < t.s1 {
				addInto(dx[t.c*g.h*g.w:][:g.h*g.w][t.s0+t.d:t.s1+t.d], row[t.s0:t.s1])
			}
			return
		}
		for oh := 0; oh < g.oh; oh++ {
			ih := oh*g.sh + t.kh*g.dh - g.pt
			if ih < 0 || ih >= g.h {
				continue
			}
			seg := row[oh*g.ow : (oh+1)*g.ow]
			dst := dx[(t.c*g.h+ih)*g.w:][:g.w]
			if g.sw == 1 {
				addInto(dst[t.lo+t.off:t.hi+t.off], seg[t.lo:t.hi])
				continue
			}
			for ow := t.lo; ow < t.hi; ow++ {
				dst[ow*g.sw+t.off] += seg[ow]
			}
		}
	})
}

// tapMajor lays a [KH, KW, C, O] filter out as [C*KH*KW, O], rows in
// im2row's order.
func tapMajor[T convElem](dst, f []T, g convGeom) {
	for kh := 0; kh < g.kh; kh++ {
		for kw := 0; kw < g.kw; kw++ {
			for c := 0; c < g.c; c++ {
				copy(dst[((c*g.kh+kh)*g.kw+kw)*g.o:][:g.o], f[((kh*g.kw+kw)*g.c+c)*g.o:][:g.o])
			}
		}
	}
}

// filterOf is the inverse of tapMajor: src is [C*KH*KW, O], f is [KH, KW,
// C, O].
func filterOf[T tensor.Float](f, src []T, g convGeom) {
	for kh := 0; kh < g.kh; kh++ {
		for kw := 0; kw < g.kw; kw++ {
			for c := 0; c < g.c; c++ {
				copy(f[((kh*g.kw+kw)*g.c+c)*g.o:][:g.o], src[((c*g.kh+kh)*g.kw+kw)*g.o:][:g.o])
			}
		}
	}
}

// filterOfT is the inverse of tapMajor for a transposed source: src is
// [O, C*KH*KW], f is [KH, KW, C, O].
func filterOfT[T tensor.Float](f, src []T, g convGeom) {
	taps := g.taps()
	for kh := 0; kh < g.kh; kh++ {
		for kw := 0; kw < g.kw; kw++ {
			for c := 0; c < g.c; c++ {
				t := (c*g.kh+kh)*g.kw + kw
				row := f[((kh*g.kw+kw)*g.c+c)*g.o:][:g.o]
				for o := range row {
					row[o] = src[o*taps+t]
				}
			}
		}
	}
}

// perImage runs fn(n, scratch) over the batch: images in parallel, one
// GEMM each on its worker, when the batch has an image per worker; else
// image by image, each GEMM split across the workers. Each goroutine gets
// size elements of scratch, passed to start before its first image and to
// done after its last (either may be nil).
func perImage[T tensor.Float](c *eager.Call, g convGeom, size int, start func(s []T), fn func(n int, s []T, parallelGemm bool), done func(s []T)) {
	run := func(lo, hi int, par bool) {
		s, buf := gemmScratch[T](size)
		if start != nil {
			start(s)
		}
		for n := lo; n < hi; n++ {
			fn(n, s, par)
		}
		if done != nil {
			done(s)
		}
		putGemmScratch(buf)
	}
	dev := deviceOf(c)
	if g.n < dev.Workers() {
		run(0, g.n, true)
		return
	}
	cost := float64(g.o*g.taps()*g.oh*g.ow) / 16
	dev.Parallel(g.n, cost, func(lo, hi int) { run(lo, hi, false) })
}

// perImageSums runs fn over the batch as perImage does, with size
// elements of scratch and a block of accLen elements that each goroutine
// zeroes before its first image and fn adds its image into; the blocks
// are summed into total, which the caller gives back to putGemmScratch
// with buf.
func perImageSums[T tensor.Float](c *eager.Call, g convGeom, size, accLen int, fn func(n int, s, acc []T, parallelGemm bool)) (total []T, buf *[]byte) {
	var mu sync.Mutex
	total, buf = gemmScratch[T](accLen)
	clear(total)
	perImage(c, g, size+accLen, func(s []T) { clear(s[size:]) }, func(n int, s []T, par bool) {
		fn(n, s[:size], s[size:size+accLen], par)
	}, func(s []T) {
		mu.Lock()
		addInto(total, s[size:size+accLen])
		mu.Unlock()
	})
	return total, buf
}

// gemmOn is gemm (out = a·b, or out += a·b when accumulate), split across
// the workers or on this goroutine alone.
func gemmOn[T gemmElem](c *eager.Call, parallel bool, m, n, k int, a []T, transA bool, b []T, transB bool, out []T, accumulate bool) {
	dev := deviceOf(c)
	if !parallel {
		dev = nil
	}
	gemmAcc(dev, m, n, k, a, transA, b, transB, out, accumulate)
}

func conv2DGemmKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	convForward[T](c, c.Attrs.(ops.Conv2DGemmAttrs), outs[0], convEpilogue[T]{})
}

// fusedConv2DKernel is FusedConv2D: the convolution with the bias and the
// activation applied to each image's output after its GEMM, while it is
// in cache.
func fusedConv2DKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.FusedConv2DAttrs)
	ep := newEpilogue(data[T](c.Inputs[2]), a.Activation == ops.ReluActivation, a.Conv.Format)
	defer ep.free()
	convForward(c, a.Conv, outs[0], ep)
}

// convForward is the convolution of the call's first two inputs (x and
// the filter) into y, ep applied to each image's output.
func convForward[T tensor.Float](c *eager.Call, a ops.Conv2DGemmAttrs, y *tensor.Tensor, ep convEpilogue[T]) {
	x, f := c.Inputs[0], c.Inputs[1]
	g := geomOf(a, x.Dim(0), a.Channels(x), f.Dim(3))
	if g.format == ops.NHWC {
		conv2DNHWC(c, g, data[T](x), data[T](f), data[T](y), ep)
		return
	}
	xv, yv := data[T](x), data[T](y)
	taps, ohw := g.taps(), g.oh*g.ow
	fm, buf := gemmScratch[T](taps * g.o)
	defer putGemmScratch(buf)
	tapMajor(fm, data[T](f), g)
	// Y_n [O, OH*OW] = Fᵀ · P_n, or, where that pads the micro-kernel's
	// tiles more and P_n packs fast as a transposed A (spack12T), Y_nᵀ =
	// P_nᵀ · F into scratch, transposed into place: 64 outputs fill 5⅓
	// tiles of 12 rows and 196 positions 6⅛ panels of 32, where 196 rows
	// and 64 columns pad 4% (the Fashion-MNIST CNN's second layer).
	turned := turnPays[T](g.o, ohw)
	scratch := taps * ohw
	if turned {
		scratch += ohw * g.o
	}
	perImage(c, g, scratch, nil, func(n int, s []T, par bool) {
		p := s[:taps*ohw]
		im2row(p, xv[n*g.c*g.h*g.w:], g)
		yn := yv[n*g.o*ohw : (n+1)*g.o*ohw]
		if turned {
			yt := s[taps*ohw:]
			gemmOn(c, par, ohw, g.o, taps, p, true, fm, false, yt, false)
			transposeInto(yn, yt, ohw, g.o)
		} else {
			gemmOn(c, par, g.o, ohw, taps, fm, true, p, false, yn, false)
		}
		ep.apply(yn, ohw)
	}, nil)
}

// convEpilogue is what FusedConv2D does to each image's output after its
// GEMM: add the bias, then Relu when relu is set. Without a bias it does
// nothing (Conv2D).
type convEpilogue[T tensor.Float] struct {
	bias []T
	relu bool
	// tile (NHWC) is the bias repeated to about periodTile elements, so
	// that adding it to the image's [OH*OW, O] output is long row adds.
	tile []T
	buf  *[]byte
}

func newEpilogue[T tensor.Float](bias []T, relu bool, f ops.DataFormat) convEpilogue[T] {
	e := convEpilogue[T]{bias: bias, relu: relu}
	if f == ops.NHWC && len(bias) > 0 {
		e.tile, e.buf = gemmScratch[T](periodLen(len(bias)))
		repeatInto(e.tile, bias)
	}
	return e
}

func (e convEpilogue[T]) free() {
	if e.buf != nil {
		putGemmScratch(e.buf)
	}
}

// apply adds the bias to one image's output y and applies the
// activation: y is [O, ohw] (NCHW) or, when e has a tile, [ohw, O].
func (e convEpilogue[T]) apply(y []T, ohw int) {
	if e.bias == nil {
		return
	}
	if e.tile != nil {
		for lo := 0; lo < len(y); lo += len(e.tile) {
			d := y[lo:min(len(y), lo+len(e.tile))]
			addInto(d, e.tile[:len(d)])
			if e.relu {
				reluLoop(d, d)
			}
		}
		return
	}
	for o, b := range e.bias {
		row := y[o*ohw : (o+1)*ohw]
		addScalar(row, row, b)
		if e.relu {
			reluLoop(row, row)
		}
	}
}

func conv2DGemmInputKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	f, dy := c.Inputs[0], c.Inputs[1]
	g := geomOf(c.Attrs.(ops.Conv2DGemmAttrs), dy.Dim(0), f.Dim(2), f.Dim(3))
	if g.format == ops.NHWC {
		conv2DNHWCInput[T](c, g, data[T](f), data[T](dy), data[T](outs[0]))
		return
	}
	dyv, dx := data[T](dy), data[T](outs[0])
	taps, ohw, img := g.taps(), g.oh*g.ow, g.c*g.h*g.w
	fm, buf := gemmScratch[T](taps * g.o)
	defer putGemmScratch(buf)
	tapMajor(fm, data[T](f), g)
	perImage(c, g, taps*ohw, nil, func(n int, p []T, par bool) {
		nchwInputImage(c, par, g, fm, dyv[n*g.o*ohw:(n+1)*g.o*ohw], p, dx[n*img:(n+1)*img])
	}, nil)
}

// nchwInputImage is one image's input gradient dxn [C, H, W] from its
// output gradient dyn [O, OH*OW] and the tap-major filter fm: P_n =
// fm · dY_n into the scratch p, added back by row2im.
func nchwInputImage[T tensor.Float](c *eager.Call, par bool, g convGeom, fm, dyn, p, dxn []T) {
	gemmOn(c, par, g.taps(), g.oh*g.ow, g.o, fm, false, dyn, false, p, false)
	clear(dxn)
	row2im(dxn, p, g)
}

func conv2DGemmFilterKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x, dy, a := c.Inputs[0], c.Inputs[1], c.Attrs.(ops.Conv2DGemmAttrs)
	g := geomOf(a, x.Dim(0), a.Channels(x), a.Channels(dy))
	if g.format == ops.NHWC {
		conv2DNHWCFilter[T](c, g, data[T](x), data[T](dy), data[T](outs[0]))
		return
	}
	xv, dyv := data[T](x), data[T](dy)
	taps, ohw := g.taps(), g.oh*g.ow
	// Each goroutine sums its images' products into its own block after
	// its im2row scratch; the blocks are added at the end.
	turned := nchwFilterTurned[T](g)
	total, buf := perImageSums(c, g, taps*ohw, taps*g.o, func(n int, p, acc []T, par bool) {
		nchwFilterImage(c, par, g, xv[n*g.c*g.h*g.w:], dyv[n*g.o*ohw:(n+1)*g.o*ohw], p, acc, turned)
	})
	defer putGemmScratch(buf)
	nchwFilterResult(data[T](outs[0]), total, g, turned)
}

// nchwFilterTurned reports whether the filter gradient runs as dF [taps,
// O] += P_n · dY_nᵀ rather than dFᵀ [O, taps] += dY_n · P_nᵀ: with many
// taps and 12-row float32 kernels (whose packing of both operands
// transposes through AVX-512), where its tiles pad less (288 taps fill 24
// tiles of 12 rows where 64 outputs fill 5⅓).
func nchwFilterTurned[T tensor.Float](g convGeom) bool {
	taps := g.taps()
	return taps >= g.o && turnPays[T](g.o, taps)
}

// nchwFilterImage adds one image's filter gradient to acc: xn is the
// image [C, H, W] (or more, from it), dyn its output gradient [O, OH*OW],
// p scratch for its im2row matrix.
func nchwFilterImage[T tensor.Float](c *eager.Call, par bool, g convGeom, xn, dyn, p, acc []T, turned bool) {
	taps, ohw := g.taps(), g.oh*g.ow
	im2row(p, xn, g)
	// dFᵀ [O, taps] += dY_n [O, OH*OW] · P_nᵀ: with many taps a GEMM
	// reading P_n transposed through its packing (3.2x the row dot
	// products on the Fashion-MNIST CNN's second layer); with fewer taps
	// than outputs (a first layer) dot products of rows, which spare the
	// packing (2x the GEMM there).
	switch {
	case turned:
		gemmOn(c, par, taps, g.o, ohw, p, false, dyn, true, acc, true)
	case taps >= g.o:
		gemmOn(c, par, g.o, taps, ohw, dyn, false, p, true, acc, true)
	case !par:
		dotsNT(g.o, taps, ohw, dyn, p, acc, true)
	default:
		deviceOf(c).Parallel(g.o, float64(taps*ohw)/8, func(lo, hi int) {
			dotsNT(hi-lo, taps, ohw, dyn[lo*ohw:], p, acc[lo*taps:], true)
		})
	}
}

// nchwFilterResult writes the summed blocks as the HWIO filter gradient.
func nchwFilterResult[T tensor.Float](df, total []T, g convGeom, turned bool) {
	if turned {
		filterOf(df, total, g)
		return
	}
	filterOfT(df, total, g)
}

func init() {
	kernels{f32: conv2DGemmKernel[float32], f64: conv2DGemmKernel[float64]}.register("Conv2DGemm")
	kernels{f32: fusedConv2DKernel[float32], f64: fusedConv2DKernel[float64]}.register("FusedConv2D")
	kernels{f32: conv2DGemmInputKernel[float32], f64: conv2DGemmInputKernel[float64]}.register("Conv2DGemmBackpropInput")
	kernels{f32: conv2DGemmFilterKernel[float32], f64: conv2DGemmFilterKernel[float64]}.register("Conv2DGemmBackpropFilter")
	kernels{f32: fusedConv2DBackpropKernel[float32], f64: fusedConv2DBackpropKernel[float64]}.register("FusedConv2DBackprop")
}
