package kernels

import (
	"encoding/binary"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Depthwise convolution kernels (ops/conv_depthwise.go), computed
// directly as backend/cpu's are, for any layout (element strides in the
// geometry), a thread an element:
//
//   - dw_fwd_<d> (out, x, f, n, dg, ow, oh, cm, m): output (n, c·M+m,
//     oh, ow) sums its taps' x·f in order (kh, kw).
//   - dw_input_<d> (dx, f, dy, n, dg, w, h, c): input (n, c, ih, iw) sums
//     dy·f over the outputs its taps reach, in order (kh, kw, m).
//   - dw_filter_<d> (df, x, dy, n, dg, m, c, kw): filter element (kh, kw,
//     c, m) sums x·dy over the images and positions in float64, rounded
//     once: a long serial sum a thread (the filter is small).
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

func depthwiseKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range Floats {
		out = append(out, dwForward(d), dwInput(d), dwFilter(d))
	}
	return out
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

func dwForward(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("dw_fwd", string(d)))
	o, x, f := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("f")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("dg", DepthwiseGeomLen)
	owD, ohD, cmD, mD := paramDivisor(k, "ow"), paramDivisor(k, "oh"), paramDivisor(k, "cm"), paramDivisor(k, "m")
	t := d.reg()
	k.GridStride(n, func(i ptx.Reg) {
		q1, ow := divmod(k, i, owD)
		q2, oh := divmod(k, q1, ohD)
		img, cm := divmod(k, q2, cmD)
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

func dwInput(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("dw_input", string(d)))
	dx, f, dy := k.ParamPtr("dx"), k.ParamPtr("f"), k.ParamPtr("dy")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("dg", DepthwiseGeomLen)
	wD, hD, cD := paramDivisor(k, "w"), paramDivisor(k, "h"), paramDivisor(k, "c")
	t := d.reg()
	k.GridStride(n, func(i ptx.Reg) {
		q1, iw := divmod(k, i, wD)
		q2, ih := divmod(k, q1, hD)
		img, c := divmod(k, q2, cD)
		acc := k.Reg(t)
		k.Op("mov.%s %s, %s", t, acc, ptx.Imm(t, 0))
		dwEachTap(k, func(kh ptx.Reg) (ptx.Reg, ptx.Reg) { return dwOut(k, ih, kh, dgPT, dgDH, dgSH, dgOH) },
			func(kw ptx.Reg) (ptx.Reg, ptx.Reg) { return dwOut(k, iw, kw, dgPL, dgDW, dgSW, dgOW) },
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
// ((i + p - t·dl) / s), and a predicate set where none does (negative,
// not a multiple of the stride, or past the output's size).
func dwOut(k *ptx.Kernel, i, t ptx.Reg, p, dl, s, size int) (o, skip ptx.Reg) {
	v, r := k.Reg(ptx.S64), k.Reg(ptx.U64)
	o, skip = k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("add.s64 %s, %s, %s", v, i, dwField(k, p))
	mul := k.Reg(ptx.S64)
	k.Op("mul.lo.s64 %s, %s, %s", mul, t, dwField(k, dl))
	k.Op("sub.s64 %s, %s, %s", v, v, mul)
	k.Op("setp.lt.s64 %s, %s, 0", skip, v)
	k.Op("selp.s64 %s, 0, %s, %s", v, v, skip) // keeps the division well defined
	k.Op("rem.u64 %s, %s, %s", r, v, dwField(k, s))
	k.Op("div.u64 %s, %s, %s", o, v, dwField(k, s))
	q := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", q, r)
	k.Op("or.pred %s, %s, %s", skip, skip, q)
	k.Op("setp.ge.u64 %s, %s, %s", q, o, dwField(k, size))
	k.Op("or.pred %s, %s, %s", skip, skip, q)
	return o, skip
}

func dwFilter(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("dw_filter", string(d)))
	df, x, dy := k.ParamPtr("df"), k.ParamPtr("x"), k.ParamPtr("dy")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("dg", DepthwiseGeomLen)
	mD, cD, kwD := paramDivisor(k, "m"), paramDivisor(k, "c"), paramDivisor(k, "kw")
	k.GridStride(n, func(i ptx.Reg) {
		q1, m := divmod(k, i, mD)
		q2, c := divmod(k, q1, cD)
		kh, kw := divmod(k, q2, kwD)
		cm := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", cm, c, dwField(k, dgM), m)
		acc := k.Reg(ptx.F64)
		k.Op("mov.f64 %s, %s", acc, ptx.Imm(ptx.F64, 0))
		dwLoop(k, dgN, func(img ptx.Reg) {
			dwLoop(k, dgOH, func(oh ptx.Reg) {
				ih, outH := dwTap(k, oh, kh, dgSH, dgPT, dgDH, dgH)
				skip := k.Label("dw_row")
				k.Op("@%s bra %s", outH, skip)
				dwLoop(k, dgOW, func(ow ptx.Reg) {
					iw, outW := dwTap(k, ow, kw, dgSW, dgPL, dgDW, dgW)
					next := k.Label("dw_pos")
					k.Op("@%s bra %s", outW, next)
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
				})
				k.Place(skip)
			})
		})
		r := acc
		if d == F32 {
			r = k.Reg(ptx.F32)
			k.Op("cvt.rn.f32.f64 %s, %s", r, acc)
		}
		store(k, d, k.Addr(df, i, d.Size()), r)
	})
	return k
}
