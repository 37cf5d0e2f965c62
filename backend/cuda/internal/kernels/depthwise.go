package kernels

import (
	"encoding/binary"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Depthwise convolution kernels (ops/conv_depthwise.go), computed
// directly as backend/cpu's are; addresses from the element strides in
// the geometry, the thread index walked in the layout's order <l> (nchw
// or nhwc: DepthwiseLayouts):
//
//   - dw_fwd_<l>_<d> (out, x, f, n, dg, cm, oh, ow, m): a thread an
//     output (n, c·M+m, oh, ow), summing its taps' x·f in order (kh, kw).
//   - dw_input_<l>_<d> (dx, f, dy, n, dg, c, h, w, sh, sw): a thread an
//     input (n, c, ih, iw), summing dy·f over the outputs its taps reach
//     in order (kh, kw, m); the strides divide through their constants.
//   - dw_filter_<l>_<d> (out, x, dy, n, dg, span, chunk, elems, m, c, kw,
//     oh, ow): the filter gradient, summed in float64 over the span of
//     output positions: in NHWC as partial sums the host folds, in NCHW
//     a block an element (dwFilter says why).
//
// dg is DepthwiseGeometry; the divisors decompose the thread's index.

// DepthwiseDims are a depthwise convolution's sizes: the batch N, the
// channels C and multiplier M, the input H x W and output OH x OW, the
// filter KH x KW, strides, dilations, low paddings, and the input's (X)
// and output's (Y) element strides along images, channels, rows, columns.
type DepthwiseDims struct {
	N, C, M, H, W, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL int
	X, Y                                                  [4]int
}

const (
	dgN = iota
	dgC
	dgM
	dgH
	dgW
	dgOH
	dgOW
	dgKH
	dgKW
	dgSH
	dgSW
	dgDH
	dgDW
	dgPT
	dgPL
	dgX // four strides
	dgY = dgX + 4
	// DepthwiseGeomLen is the geometry parameter's size in bytes.
	DepthwiseGeomLen = 8 * (dgY + 4)
)

// narrow reports whether g's input and output index in 32 bits, as the
// band kernels' pooling geometry needs (PoolGeometry).
func (g DepthwiseDims) narrow() bool {
	return g.N*g.C*g.H*g.W < narrowLimit && g.N*g.C*g.M*g.OH*g.OW < narrowLimit
}

// DepthwiseGeometry fills the dg parameter.
func DepthwiseGeometry(g DepthwiseDims) []byte {
	b := make([]byte, DepthwiseGeomLen)
	vals := []int{g.N, g.C, g.M, g.H, g.W, g.OH, g.OW, g.KH, g.KW, g.SH, g.SW, g.DH, g.DW, g.PT, g.PL}
	vals = append(append(vals, g.X[:]...), g.Y[:]...)
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

// DepthwiseLayouts name the two orders the kernels walk elements in:
// NCHW's (images, channels, rows, columns) and NHWC's (images, rows,
// columns, channels), each its layout's memory order, so that a warp's
// neighbouring threads touch neighbouring elements.
var DepthwiseLayouts = []string{"nchw", "nhwc"}

func depthwiseKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range Floats {
		for _, l := range DepthwiseLayouts {
			last := l == "nhwc"
			out = append(out, dwForward(d, l, last), dwInput(d, l, last), dwFilter(d, l, last))
		}
	}
	return append(out, depthwiseBandKernels()...)
}

// dwIndex decomposes the thread index i of an array of (images, ch, h,
// w) elements, in NCHW's order or (last) NHWC's.
func dwIndex(k *ptx.Kernel, i ptx.Reg, last bool, ch, h, w divisor) (n, c, y, x ptx.Reg) {
	var q ptx.Reg
	if last {
		q, c = divmod(k, i, ch)
		q, x = divmod(k, q, w)
		n, y = divmod(k, q, h)
		return n, c, y, x
	}
	q, x = divmod(k, i, w)
	q, y = divmod(k, q, h)
	n, c = divmod(k, q, ch)
	return n, c, y, x
}

// dwField reads field i of dg.
func dwField(k *ptx.Kernel, i int) ptx.Reg { return k.LoadField("dg", 8*i) }

// dwOffset is n·s[0] + c·s[1] + h·s[2] + w·s[3] for the strides at field
// base of dg.
func dwOffset(k *ptx.Kernel, base int, n, c, h, w ptx.Reg) ptx.Reg {
	off := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", off, n, dwField(k, base))
	for i, v := range []ptx.Reg{c, h, w} {
		k.Op("mad.lo.s64 %s, %s, %s, %s", off, v, dwField(k, base+1+i), off)
	}
	return off
}

// dwFilterIndex is ((kh·KW + kw)·C + c)·M + m.
func dwFilterIndex(k *ptx.Kernel, kh, kw, c, m ptx.Reg) ptx.Reg {
	i := k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, %s, %s", i, kh, dwField(k, dgKW), kw)
	k.Op("mad.lo.s64 %s, %s, %s, %s", i, i, dwField(k, dgC), c)
	k.Op("mad.lo.s64 %s, %s, %s, %s", i, i, dwField(k, dgM), m)
	return i
}

// dwTap is o·s - p + t·dl (signed), and a predicate set when it falls
// outside [0, size).
func dwTap(k *ptx.Kernel, o, t ptx.Reg, s, p, dl, size int) (v, out ptx.Reg) {
	v, out = k.Reg(ptx.S64), k.Reg(ptx.Pred)
	k.Op("mul.lo.s64 %s, %s, %s", v, o, dwField(k, s))
	k.Op("sub.s64 %s, %s, %s", v, v, dwField(k, p))
	k.Op("mad.lo.s64 %s, %s, %s, %s", v, t, dwField(k, dl), v)
	k.Op("setp.ge.u64 %s, %s, %s", out, v, dwField(k, size)) // a negative one is large unsigned
	return v, out
}

// dwLoop runs body for t in [0, field size of dg).
func dwLoop(k *ptx.Kernel, size int, body func(t ptx.Reg)) {
	zero, one := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", zero)
	k.Op("mov.u64 %s, 1", one)
	k.Loop(zero, dwField(k, size), one, body)
}

// dwEachTap runs body for each tap (kh, kw), in order, whose row and
// column (rowOf(kh), colOf(kw): a position and a predicate set to skip
// it) are not skipped.
func dwEachTap(k *ptx.Kernel, rowOf, colOf func(t ptx.Reg) (pos, skip ptx.Reg), body func(kh, kw, row, col ptx.Reg)) {
	dwLoop(k, dgKH, func(kh ptx.Reg) {
		row, skipRow := rowOf(kh)
		rowDone := k.Label("dw_row")
		k.Op("@%s bra %s", skipRow, rowDone)
		dwLoop(k, dgKW, func(kw ptx.Reg) {
			col, skipCol := colOf(kw)
			next := k.Label("dw_tap")
			k.Op("@%s bra %s", skipCol, next)
			body(kh, kw, row, col)
			k.Place(next)
		})
		k.Place(rowDone)
	})
}

// dwMulAdd adds a·b to acc (of d's compute type, or float64 where wide),
// each rounded on its own.
func dwMulAdd(k *ptx.Kernel, t ptx.Type, acc, a, b ptx.Reg) {
	p := k.Reg(t)
	k.Op("mul.rn.%s %s, %s, %s", t, p, a, b)
	k.Op("add.rn.%s %s, %s, %s", t, acc, acc, p)
}

func dwForward(d DType, layout string, last bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("dw_fwd", layout, string(d)))
	o, x, f := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("f")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("dg", DepthwiseGeomLen)
	cmD, ohD, owD, mD := paramDivisor(k, "cm"), paramDivisor(k, "oh"), paramDivisor(k, "ow"), paramDivisor(k, "m")
	t := d.reg()
	k.GridStride(n, func(i ptx.Reg) {
		img, cm, oh, ow := dwIndex(k, i, last, cmD, ohD, owD)
		c, m := divmod(k, cm, mD)
		acc := k.Reg(t)
		k.Op("mov.%s %s, %s", t, acc, ptx.Imm(t, 0))
		dwEachTap(k, func(kh ptx.Reg) (ptx.Reg, ptx.Reg) { return dwTap(k, oh, kh, dgSH, dgPT, dgDH, dgH) },
			func(kw ptx.Reg) (ptx.Reg, ptx.Reg) { return dwTap(k, ow, kw, dgSW, dgPL, dgDW, dgW) },
			func(kh, kw, ih, iw ptx.Reg) {
				xv := load(k, d, k.Addr(x, dwOffset(k, dgX, img, c, ih, iw), d.Size()))
				fv := load(k, d, k.Addr(f, dwFilterIndex(k, kh, kw, c, m), d.Size()))
				dwMulAdd(k, t, acc, xv, fv)
			})
		store(k, d, k.Addr(o, dwOffset(k, dgY, img, cm, oh, ow), d.Size()), acc)
	})
	return k
}

func dwInput(d DType, layout string, last bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("dw_input", layout, string(d)))
	dx, f, dy := k.ParamPtr("dx"), k.ParamPtr("f"), k.ParamPtr("dy")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("dg", DepthwiseGeomLen)
	cD, hD, wD := paramDivisor(k, "c"), paramDivisor(k, "h"), paramDivisor(k, "w")
	shD, swD := paramDivisor(k, "sh"), paramDivisor(k, "sw")
	t := d.reg()
	k.GridStride(n, func(i ptx.Reg) {
		img, c, ih, iw := dwIndex(k, i, last, cD, hD, wD)
		acc := k.Reg(t)
		k.Op("mov.%s %s, %s", t, acc, ptx.Imm(t, 0))
		dwEachTap(k, func(kh ptx.Reg) (ptx.Reg, ptx.Reg) { return dwOut(k, ih, kh, dgPT, dgDH, shD, dgOH) },
			func(kw ptx.Reg) (ptx.Reg, ptx.Reg) { return dwOut(k, iw, kw, dgPL, dgDW, swD, dgOW) },
			func(kh, kw, oh, ow ptx.Reg) {
				dwLoop(k, dgM, func(m ptx.Reg) {
					cm := k.Reg(ptx.U64)
					k.Op("mad.lo.s64 %s, %s, %s, %s", cm, c, dwField(k, dgM), m)
					dv := load(k, d, k.Addr(dy, dwOffset(k, dgY, img, cm, oh, ow), d.Size()))
					fv := load(k, d, k.Addr(f, dwFilterIndex(k, kh, kw, c, m), d.Size()))
					dwMulAdd(k, t, acc, dv, fv)
				})
			})
		store(k, d, k.Addr(dx, dwOffset(k, dgX, img, c, ih, iw), d.Size()), acc)
	})
	return k
}

// dwOut is the output position whose tap t reaches input position i
// ((i + p - t·dl) / s, s through its divisor's constants), and a
// predicate set where none does (negative, not a multiple of the stride,
// or past the output's size).
func dwOut(k *ptx.Kernel, i, t ptx.Reg, p, dl int, s divisor, size int) (o, skip ptx.Reg) {
	v := k.Reg(ptx.S64)
	skip = k.Reg(ptx.Pred)
	k.Op("add.s64 %s, %s, %s", v, i, dwField(k, p))
	mul := k.Reg(ptx.S64)
	k.Op("mul.lo.s64 %s, %s, %s", mul, t, dwField(k, dl))
	k.Op("sub.s64 %s, %s, %s", v, v, mul)
	k.Op("setp.lt.s64 %s, %s, 0", skip, v)
	k.Op("selp.s64 %s, 0, %s, %s", v, v, skip) // keeps the division in range
	o, r := divmod(k, v, s)
	q := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", q, r)
	k.Op("or.pred %s, %s, %s", skip, skip, q)
	k.Op("setp.ge.u64 %s, %s, %s", q, o, dwField(k, size))
	k.Op("or.pred %s, %s, %s", skip, skip, q)
	return o, skip
}

// dwFilterCoords decomposes filter element fi into (kh, kw, c) and c·M+m.
func dwFilterCoords(k *ptx.Kernel, fi ptx.Reg, mD, cD, kwD divisor) (kh, kw, c, cm ptx.Reg) {
	q1, m := divmod(k, fi, mD)
	q2, c := divmod(k, q1, cD)
	kh, kw = divmod(k, q2, kwD)
	cm = k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, %s, %s", cm, c, dwField(k, dgM), m)
	return kh, kw, c, cm
}

// dwFilterTerm adds x·dy at output position (img, oh, ow) for the filter
// element's tap (kh, kw) to the float64 acc, where the tap falls inside
// the input.
func dwFilterTerm(k *ptx.Kernel, d DType, x, dy, acc, img, oh, ow, kh, kw, c, cm ptx.Reg) {
	ih, outH := dwTap(k, oh, kh, dgSH, dgPT, dgDH, dgH)
	iw, outW := dwTap(k, ow, kw, dgSW, dgPL, dgDW, dgW)
	k.Op("or.pred %s, %s, %s", outH, outH, outW)
	next := k.Label("dw_pos")
	k.Op("@%s bra %s", outH, next)
	xv := load(k, d, k.Addr(x, dwOffset(k, dgX, img, c, ih, iw), d.Size()))
	dv := load(k, d, k.Addr(dy, dwOffset(k, dgY, img, cm, oh, ow), d.Size()))
	if d == F32 {
		xw, dw := k.Reg(ptx.F64), k.Reg(ptx.F64)
		k.Op("cvt.f64.f32 %s, %s", xw, xv)
		k.Op("cvt.f64.f32 %s, %s", dw, dv)
		xv, dv = xw, dw
	}
	dwMulAdd(k, ptx.F64, acc, xv, dv)
	k.Place(next)
}

// dwFilter is the filter gradient. In NHWC (last) it writes float64
// partial sums: a thread's index is (chunk, filter element), the element
// fastest, and it sums chunk output positions (images, rows and columns
// flattened), so a warp's neighbours read neighbouring channels; the host
// folds the partials along the chunks and rounds once. In NCHW a block
// sums a filter element (n: the elements), its threads striding over the
// positions, so a warp's neighbours read neighbouring columns, and the
// block's tree (float64) is rounded once into the element.
func dwFilter(d DType, layout string, last bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("dw_filter", layout, string(d)))
	out, x, dy := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("dy")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("dg", DepthwiseGeomLen)
	span, chunk := k.Param("span", ptx.U64), k.Param("chunk", ptx.U64)
	elemsD, mD, cD, kwD := paramDivisor(k, "elems"), paramDivisor(k, "m"), paramDivisor(k, "c"), paramDivisor(k, "kw")
	ohD, owD := paramDivisor(k, "oh"), paramDivisor(k, "ow")
	sum := func(acc, p, kh, kw, c, cm ptx.Reg) {
		r, ow := divmod(k, p, owD)
		img, oh := divmod(k, r, ohD)
		dwFilterTerm(k, d, x, dy, acc, img, oh, ow, kh, kw, c, cm)
	}
	zero := func() ptx.Reg {
		acc := k.Reg(ptx.F64)
		k.Op("mov.f64 %s, %s", acc, ptx.Imm(ptx.F64, 0))
		return acc
	}
	if !last {
		b := newBlockRows(k, 8)
		b.eachRow(n, func(fi ptx.Reg) {
			kh, kw, c, cm := dwFilterCoords(k, fi, mD, cD, kwD)
			acc := zero()
			b.eachElem(span, func(p ptx.Reg) { sum(acc, p, kh, kw, c, cm) })
			r := b.tree(ptx.F64, acc, func(a, c ptx.Reg) ptx.Reg {
				s := k.Reg(ptx.F64)
				k.Op("add.rn.f64 %s, %s, %s", s, a, c)
				return s
			})
			b.first(func() {
				v := r
				if d == F32 {
					v = k.Reg(ptx.F32)
					k.Op("cvt.rn.f32.f64 %s, %s", v, r)
				}
				store(k, d, k.Addr(out, fi, d.Size()), v)
			})
		})
		return k
	}
	one := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 1", one)
	k.GridStride(n, func(i ptx.Reg) {
		j, fi := divmod(k, i, elemsD)
		kh, kw, c, cm := dwFilterCoords(k, fi, mD, cD, kwD)
		from, to := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", from, j, chunk)
		k.Op("add.s64 %s, %s, %s", to, from, chunk)
		k.Op("min.u64 %s, %s, %s", to, to, span)
		acc := zero()
		k.Loop(from, to, one, func(p ptx.Reg) { sum(acc, p, kh, kw, c, cm) })
		k.Store(ptx.F64, k.Addr(out, i, 8), acc)
	})
	return k
}
