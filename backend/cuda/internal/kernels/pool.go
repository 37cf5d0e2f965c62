package kernels

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Pooling kernels: the windows of 2-D pooling over NHWC or NCHW images
// (a window of [1 KH KW 1] or [1 1 KH KW], no dilation, padding of the
// image's height and width only), in 32-bit index arithmetic where the
// generic window kernels handle any rank: a thread per output position
// (or window) finds its image, channel and place by three divisions by
// constants, then walks its KH x KW taps in order. The parameter "pg"
// is PoolGeometry. Semantics are the window kernels' (a tap on padding
// counts as *init; selections take the first extreme, padding never):
//
//   - pool2d_<sum|max|min>_<nhwc|nchw>_<dtype> (out, x, init, n, pg):
//     ReduceWindow over n windows; the half types' taps in float32, the
//     result rounded once.
//   - pool2d_select_put_<ge|le>_<nhwc|nchw>_<dtype> (out, x, src, init, n,
//     pg): window_select_put's one pass, for windows that do not overlap:
//     each window writes its whole block.
//   - pool2d_<sum|max|min>_nchw2_<f32|f64> and
//     pool2d_select_put_<ge|le>_nchw2_<f32|f64>: the NCHW kernels for
//     windows two columns wide at a stride of two (PoolPairs), a row of
//     the window one aligned vector of two.
//   - pool2d_<sum|max|min>_nchw2x2_<f32|f64> and
//     pool2d_select_put_<ge|le>_nchw2x2_<f32|f64>: those of 2x2 windows
//     at a stride of two without padding (PoolQuads), staged by chunks
//     of row pairs in shared memory (pool_quads.go).
//   - pool2d_<sum|max|min>_nchwband_<dtype> and
//     pool2d_select_put_<ge|le>_nchwband_<dtype>: other NCHW windows, by
//     bands of output rows whose input rows are staged in shared memory
//     (pool_band.go).
//   - pool2d_select_* and pool2d_select_scatter_*: SelectAndScatter over
//     overlapping windows, in two passes (pool_scatter.go).

// PoolDims describes a 2-D pooling: C channels of H x W images, the
// output OH x OW, the window KH x KW, its strides and low padding, and
// its dilations DH x DW (0 counts as 1: the pooling kernels take none;
// the depthwise band kernels do).
type PoolDims struct {
	C, H, W, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW int
}

// Extent is the rows and columns a window of p spans: (K-1)·D + 1.
func (p PoolDims) Extent() (h, w int) {
	return (p.KH-1)*max(p.DH, 1) + 1, (p.KW-1)*max(p.DW, 1) + 1
}

// pg's layout: eleven u32 fields in PoolDims' order up to PW, then the
// window's extent (EH, EW) and its dilations (DH, DW, at least 1), then
// DivMagic's constants (magic, shift) for C, OW, OH, W, H, SH and SW
// (slots 0-6).
const (
	pgFields    = 15
	pgMagic     = 4 * pgFields
	pgC, pgOW   = 0, 4
	pgOH        = 3
	pgEH, pgEW  = 11, 12
	pgDH, pgDW  = 13, 14
	PoolGeomLen = pgMagic + 7*8
)

// PoolGeometry fills the parameter; n is the output's element count,
// which must be below 2^31 (the caller takes the window kernels beyond).
func PoolGeometry(p PoolDims, n int) []byte {
	if n >= narrowLimit {
		panic(fmt.Sprintf("kernels: a pooling of %d outputs needs the window kernels", n))
	}
	b := make([]byte, PoolGeomLen)
	eh, ew := p.Extent()
	for i, v := range []int{p.C, p.H, p.W, p.OH, p.OW, p.KH, p.KW, p.SH, p.SW, p.PH, p.PW, eh, ew, max(p.DH, 1), max(p.DW, 1)} {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	for i, v := range []int{p.C, p.OW, p.OH, p.W, p.H, p.SH, p.SW} {
		m, s := DivMagic(uint32(max(v, 1)))
		binary.LittleEndian.PutUint32(b[pgMagic+8*i:], m)
		binary.LittleEndian.PutUint32(b[pgMagic+8*i+4:], s)
	}
	return b
}

// poolField reads field i of pg.
func poolField(k *ptx.Kernel, i int) ptx.Reg { return k.LoadField32("pg", 4*i) }

// poolDiv divides e by field i of pg (C, OW or OH: constants slot j).
func poolDiv(k *ptx.Kernel, e ptx.Reg, i, j int) (q, r ptx.Reg) {
	return divide32(k, e, poolField(k, i), k.LoadField32("pg", pgMagic+8*j), k.LoadField32("pg", pgMagic+8*j+4))
}

// poolIndex decomposes index i (u32) of an array of (images, C, Y, X) in
// NHWC's order ((n·Y + y)·X + x)·C + c or NCHW's ((n·C + c)·Y + y)·X + x,
// Y and X the fields fy and fx of pg, their constants in slots sy and sx.
func poolIndex(k *ptx.Kernel, i ptx.Reg, nhwc bool, fy, sy, fx, sx int) (n, c, y, x ptx.Reg) {
	var t ptx.Reg
	if nhwc {
		t, c = poolDiv(k, i, pgC, 0)
		t, x = poolDiv(k, t, fx, sx)
		n, y = poolDiv(k, t, fy, sy)
		return n, c, y, x
	}
	t, x = poolDiv(k, i, fx, sx)
	t, y = poolDiv(k, t, fy, sy)
	n, c = poolDiv(k, t, pgC, 0)
	return n, c, y, x
}

// poolWindow decomposes output index o (u32) into its image, channel and
// place, and returns the functions that give the input index of tap (ih,
// iw) and whether it is in the image.
func poolWindow(k *ptx.Kernel, nhwc bool, o ptx.Reg) (ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
	n, c, oh, ow := poolIndex(k, o, nhwc, pgOH, 2, pgOW, 1)
	ih0, iw0 = k.Reg(ptx.S32), k.Reg(ptx.S32)
	k.Op("mul.lo.s32 %s, %s, %s", ih0, oh, poolField(k, 7))
	k.Op("sub.s32 %s, %s, %s", ih0, ih0, poolField(k, 9))
	k.Op("mul.lo.s32 %s, %s, %s", iw0, ow, poolField(k, 8))
	k.Op("sub.s32 %s, %s, %s", iw0, iw0, poolField(k, 10))
	// The image's base index and the steps along H and W.
	base, sh, sw := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	H, W, C := poolField(k, 1), poolField(k, 2), poolField(k, 0)
	if nhwc { // ((n·H + ih)·W + iw)·C + c
		k.Op("mul.lo.u32 %s, %s, %s", base, n, H)
		k.Op("mul.lo.u32 %s, %s, %s", base, base, W)
		k.Op("mul.lo.u32 %s, %s, %s", base, base, C)
		k.Op("add.u32 %s, %s, %s", base, base, c)
		k.Op("mov.u32 %s, %s", sw, C)
		k.Op("mul.lo.u32 %s, %s, %s", sh, W, C)
	} else { // ((n·C + c)·H + ih)·W + iw
		k.Op("mad.lo.u32 %s, %s, %s, %s", base, n, C, c)
		k.Op("mul.lo.u32 %s, %s, %s", base, base, H)
		k.Op("mul.lo.u32 %s, %s, %s", base, base, W)
		k.Op("mov.u32 %s, 1", sw)
		k.Op("mov.u32 %s, %s", sh, W)
	}
	at = func(ih, iw ptx.Reg) ptx.Reg {
		i, i64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mad.lo.u32 %s, %s, %s, %s", i, ih, sh, base)
		k.Op("mad.lo.u32 %s, %s, %s, %s", i, iw, sw, i)
		k.Op("cvt.u64.u32 %s, %s", i64, i)
		return i64
	}
	return ih0, iw0, at
}

// eachPoolTap runs body for each tap of the window at (ih0, iw0) in
// order, with a predicate set when it is on padding and, when not, the
// input index.
func eachPoolTap(k *ptx.Kernel, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg, body func(pad, idx ptx.Reg)) {
	KW, H, W := poolField(k, 6), poolField(k, 1), poolField(k, 2)
	eachPoolRow(k, ih0, func(ih ptx.Reg) {
		kw, iw, p := k.Reg(ptx.U32), k.Reg(ptx.S32), k.Reg(ptx.Pred)
		cols, colsDone := k.Label("pool_cols"), k.Label("pool_cols_done")
		k.Op("mov.u32 %s, 0", kw)
		k.Place(cols)
		k.Op("setp.ge.u32 %s, %s, %s", p, kw, KW)
		k.Op("@%s bra %s", p, colsDone)
		k.Op("add.s32 %s, %s, %s", iw, iw0, kw)
		// On padding: ih or iw outside [0, H) x [0, W) (an unsigned
		// compare takes the negatives as large).
		q, qw := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("setp.ge.u32 %s, %s, %s", q, ih, H)
		k.Op("setp.ge.u32 %s, %s, %s", qw, iw, W)
		k.Op("or.pred %s, %s, %s", q, q, qw)
		body(q, tapIndex(k, q, at, ih, iw))
		k.Op("add.u32 %s, %s, 1", kw, kw)
		k.Op("bra.uni %s", cols)
		k.Place(colsDone)
	})
}

// eachPoolRow runs body for each row ih = ih0 + kh of a window, kh in
// [0, KH).
func eachPoolRow(k *ptx.Kernel, ih0 ptx.Reg, body func(ih ptx.Reg)) {
	KH := poolField(k, 5)
	kh, ih, p := k.Reg(ptx.U32), k.Reg(ptx.S32), k.Reg(ptx.Pred)
	rows, rowsDone := k.Label("pool_rows"), k.Label("pool_rows_done")
	k.Op("mov.u32 %s, 0", kh)
	k.Place(rows)
	k.Op("setp.ge.u32 %s, %s, %s", p, kh, KH)
	k.Op("@%s bra %s", p, rowsDone)
	k.Op("add.s32 %s, %s, %s", ih, ih0, kh)
	body(ih)
	k.Op("add.u32 %s, %s, 1", kh, kh)
	k.Op("bra.uni %s", rows)
	k.Place(rowsDone)
}

// tapIndex is the input index of (ih, iw), or 0 where pad is set.
func tapIndex(k *ptx.Kernel, pad ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg, ih, iw ptx.Reg) ptx.Reg {
	idx := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", idx)
	inside := k.Label("pool_inside")
	k.Op("@%s bra %s", pad, inside)
	k.Op("mov.u64 %s, %s", idx, at(ih, iw))
	k.Place(inside)
	return idx
}

func poolKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(Numeric, Halves) {
		for _, nhwc := range []bool{true, false} {
			for _, kind := range []string{"sum", "max", "min"} {
				out = append(out, poolReduceKernel(kind, d, LayoutName(nhwc)))
			}
			out = append(out, poolSelectPutKernel(d, true, nhwc), poolSelectPutKernel(d, false, nhwc))
		}
	}
	for _, d := range []DType{F32, F64} {
		for _, kind := range []string{"sum", "max", "min"} {
			out = append(out, poolReduceKernel(kind, d, "nchw2"))
		}
		out = append(out, poolPairsSelectPutKernel(d, true), poolPairsSelectPutKernel(d, false))
	}
	for _, d := range quadTypes {
		for _, kind := range []string{"sum", "max", "min"} {
			out = append(out, poolQuadsReduceKernel(kind, d))
		}
		out = append(out, poolQuadsSelectPutKernel(d, true), poolQuadsSelectPutKernel(d, false))
		for _, tiled := range []bool{false, true} {
			for _, kind := range []string{"sum", "max", "min"} {
				out = append(out, poolBandReduceKernel(kind, d, tiled))
			}
			out = append(out, poolBandSelectPutKernel(d, true, tiled), poolBandSelectPutKernel(d, false, tiled))
		}
	}
	return append(out, poolScatterKernels()...)
}

// PoolPairs reports whether the pair kernels (pool2d_*_nchw2) take p: an
// NCHW pooling whose windows are two columns wide at a stride of two, an
// even width and an even left padding, so that each window row is one
// aligned pair of elements, wholly inside the image or wholly on
// padding. A warp's windows then read and write whole sectors, where one
// element a tap reads every other element of each.
func PoolPairs(p PoolDims, d DType) bool {
	return (d == F32 || d == F64) && p.KW == 2 && p.SW == 2 && p.W%2 == 0 && p.PW%2 == 0
}

// eachPoolPair runs body for each row of the window at (ih0, iw0) (a
// PoolPairs window) in order, with a predicate set when its pair is on
// padding and, when not, the index of its first element.
func eachPoolPair(k *ptx.Kernel, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg, body func(pad, idx ptx.Reg)) {
	H, W := poolField(k, 1), poolField(k, 2)
	offW := k.Reg(ptx.Pred) // the pair's columns outside the image
	k.Op("setp.ge.u32 %s, %s, %s", offW, iw0, W)
	eachPoolRow(k, ih0, func(ih ptx.Reg) {
		q := k.Reg(ptx.Pred)
		k.Op("setp.ge.u32 %s, %s, %s", q, ih, H)
		k.Op("or.pred %s, %s, %s", q, q, offW)
		body(q, tapIndex(k, q, at, ih, iw0))
	})
}

// loadPair loads the pair at element idx of x.
func loadPair(k *ptx.Kernel, d DType, x, idx ptx.Reg) (a, b ptx.Reg) {
	a, b = k.Reg(d.reg()), k.Reg(d.reg())
	k.Op("ld.global.v2.%s {%s, %s}, [%s]", d.mem(), a, b, k.Addr(x, idx, d.Size()))
	return a, b
}

// poolPairsSelectPutKernel writes pool2d_select_put_<ge|le>_nchw2_<d>:
// pool2d_select_put_<ge|le>_nchw for PoolPairs windows, a pair a row
// read and written.
func poolPairsSelectPutKernel(d DType, ge bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_select_put", selName(ge), "nchw2", string(d)))
	o, x, src, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("src"), k.ParamPtr("init")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	poolLoop(k, n, func(o64, oi ptx.Reg) {
		ih0, iw0, at := poolWindow(k, false, oi)
		s := newSelection(k, d, ge)
		eachPoolPair(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
			next := k.Label("pair")
			k.Op("@%s bra %s", pad, next)
			a, b := loadPair(k, d, x, idx)
			s.consider(a, idx)
			idx1 := k.Reg(ptx.U64)
			k.Op("add.u64 %s, %s, 1", idx1, idx)
			s.consider(b, idx1)
			k.Place(next)
		})
		init := load(k, d, ip)
		put, skip := k.Reg(d.reg()), k.Label("none_chosen")
		k.Op("mov.%s %s, %s", bits(d.reg()), put, init)
		k.Op("@!%s bra %s", s.found, skip)
		k.Op("mov.%s %s, %s", bits(d.reg()), put, binaryOp(k, "add", d, init, load(k, d, k.Addr(src, o64, d.Size()))))
		k.Place(skip)
		eachPoolPair(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
			next := k.Label("put_pair")
			k.Op("@%s bra %s", pad, next)
			vs := [2]ptx.Reg{k.Reg(d.reg()), k.Reg(d.reg())}
			for j, v := range vs {
				here := k.Reg(ptx.Pred)
				k.Op("setp.eq.u64 %s, %s, %s", here, idx, s.chosen)
				if j == 1 {
					idx1 := k.Reg(ptx.U64)
					k.Op("add.u64 %s, %s, 1", idx1, idx)
					k.Op("setp.eq.u64 %s, %s, %s", here, idx1, s.chosen)
				}
				k.Op("and.pred %s, %s, %s", here, here, s.found)
				k.Op("selp.%s %s, %s, %s, %s", d.reg(), v, put, init, here)
			}
			k.Op("st.global.v2.%s [%s], {%s, %s}", d.mem(), k.Addr(o, idx, d.Size()), vs[0], vs[1])
			k.Place(next)
		})
	})
	return k
}

// LayoutName names the thread-a-window pooling kernels of a layout:
// "nhwc" or "nchw".
func LayoutName(nhwc bool) string {
	if nhwc {
		return "nhwc"
	}
	return "nchw"
}

// poolIndex is the grid-stride loop over n (u64) with a u32 index.
func poolLoop(k *ptx.Kernel, n ptx.Reg, body func(o64, o ptx.Reg)) {
	k.GridStride(n, func(o64 ptx.Reg) {
		o := k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", o, o64)
		body(o64, o)
	})
}

// poolReduceKernel writes pool2d_<kind>_<layout>_<d>, layout nhwc, nchw
// or nchw2 (PoolPairs windows, read a pair a row).
func poolReduceKernel(kind string, d DType, layout string) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d", kind, layout, string(d)))
	o, x, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("init")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	op := map[string]string{"sum": "add", "max": "max", "min": "min"}[kind]
	each, width := eachPoolTap, 1
	if layout == "nchw2" {
		each, width = eachPoolPair, 2
	}
	c := d.Compute() // a half type's taps widened to float32, the result rounded once
	poolLoop(k, n, func(o64, oi ptx.Reg) {
		init := toCompute(k, d, load(k, d, ip))
		acc := k.Reg(c.reg())
		k.Op("mov.%s %s, %s", bits(c.reg()), acc, init)
		ih0, iw0, at := poolWindow(k, layout == "nhwc", oi)
		each(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
			vs := make([]ptx.Reg, width)
			for i := range vs {
				vs[i] = k.Reg(c.reg())
				k.Op("mov.%s %s, %s", bits(c.reg()), vs[i], init)
			}
			inside := k.Label("tap_value")
			k.Op("@%s bra %s", pad, inside)
			switch {
			case width == 2:
				k.Op("ld.global.v2.%s {%s, %s}, [%s]", d.mem(), vs[0], vs[1], k.Addr(x, idx, d.Size()))
			case d != c:
				k.Op("mov.%s %s, %s", bits(c.reg()), vs[0], toCompute(k, d, load(k, d, k.Addr(x, idx, d.Size()))))
			default:
				k.Op("ld.global.%s %s, [%s]", d.mem(), vs[0], k.Addr(x, idx, d.Size()))
			}
			k.Place(inside)
			for _, v := range vs {
				k.Op("mov.%s %s, %s", bits(c.reg()), acc, binaryOp(k, op, c, acc, v))
			}
		})
		store(k, d, k.Addr(o, o64, d.Size()), fromCompute(k, d, acc))
	})
	return k
}

func poolSelectPutKernel(d DType, ge, nhwc bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_select_put", selName(ge), LayoutName(nhwc), string(d)))
	o, x, src, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("src"), k.ParamPtr("init")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	poolLoop(k, n, func(o64, oi ptx.Reg) {
		ih0, iw0, at := poolWindow(k, nhwc, oi)
		s := newSelection(k, d.Compute(), ge) // a half type's taps compared in float32
		found, chosen := s.found, s.chosen
		eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
			next := k.Label("tap")
			k.Op("@%s bra %s", pad, next)
			s.consider(toCompute(k, d, load(k, d, k.Addr(x, idx, d.Size()))), idx)
			k.Place(next)
		})
		putBlock(k, d, found, chosen, load(k, d, ip), k.Addr(src, o64, d.Size()), func(body func(pad, idx ptx.Reg)) {
			eachPoolTap(k, ih0, iw0, at, body)
		}, o)
	})
	return k
}

// selection is a window's choice so far: whether a tap inside was seen,
// the best value and its index.
type selection struct {
	k      *ptx.Kernel
	d      DType
	cmp    string
	best   ptx.Reg
	chosen ptx.Reg // u64
	found  ptx.Reg // pred
	yes    ptx.Reg // u32 zero, to set found
}

func newSelection(k *ptx.Kernel, d DType, ge bool) *selection {
	s := &selection{k: k, d: d, cmp: map[bool]string{true: "gt", false: "lt"}[ge],
		best: k.Reg(d.reg()), chosen: k.Reg(ptx.U64), found: k.Reg(ptx.Pred), yes: k.Reg(ptx.U32)}
	k.Op("mov.%s %s, %s", bits(d.reg()), s.best, ptx.Imm(d.reg(), 0))
	k.Op("mov.u64 %s, 0", s.chosen)
	k.Op("mov.u32 %s, 0", s.yes)
	k.Op("setp.ne.u32 %s, %s, %s", s.found, s.yes, s.yes) // false
	return s
}

// consider takes the tap at idx of value v, inside the operand, in the
// window's order: the first tap inside, then a larger (ge) or smaller
// value, or the first NaN.
func (s *selection) consider(v, idx ptx.Reg) {
	k, d := s.k, s.d
	next, take := k.Label("tap"), k.Label("take")
	p := k.Reg(ptx.Pred)
	k.Op("@!%s bra %s", s.found, take) // the first tap inside
	k.Op("setp.%s.%s %s, %s, %s", s.cmp, cmpType(d), p, v, s.best)
	if d.float() { // or v is the first NaN
		vn, bn := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("setp.nan.%s %s, %s, %s", d.reg(), vn, v, v)
		k.Op("setp.num.%s %s, %s, %s", d.reg(), bn, s.best, s.best)
		k.Op("and.pred %s, %s, %s", vn, vn, bn)
		k.Op("or.pred %s, %s, %s", p, p, vn)
	}
	k.Op("@!%s bra %s", p, next)
	k.Place(take)
	k.Op("mov.u64 %s, %s", s.chosen, idx)
	k.Op("mov.%s %s, %s", bits(d.reg()), s.best, v)
	k.Op("setp.eq.u32 %s, %s, %s", s.found, s.yes, s.yes) // true
	k.Place(next)
}

// putBlock writes a window's whole block of out, its taps inside the
// operand in order (a warp's stores then fill whole sectors where the
// layout puts its windows side by side): init + *src at the chosen
// offset (when found), init elsewhere. taps walks the window's taps as
// eachPoolTap does.
func putBlock(k *ptx.Kernel, d DType, found, chosen, init, src ptx.Reg, taps func(body func(pad, idx ptx.Reg)), out ptx.Reg) {
	put, skip := k.Reg(d.reg()), k.Label("none_chosen")
	k.Op("mov.%s %s, %s", bits(d.reg()), put, init)
	k.Op("@!%s bra %s", found, skip)
	sum := binaryOp(k, "add", d.Compute(), toCompute(k, d, init), toCompute(k, d, load(k, d, src)))
	k.Op("mov.%s %s, %s", bits(d.reg()), put, fromCompute(k, d, sum)) // a half type's sum rounded once
	k.Place(skip)
	taps(func(pad, idx ptx.Reg) {
		next := k.Label("put_next")
		k.Op("@%s bra %s", pad, next)
		here, v := k.Reg(ptx.Pred), k.Reg(d.reg())
		k.Op("setp.eq.u64 %s, %s, %s", here, idx, chosen)
		k.Op("and.pred %s, %s, %s", here, here, found)
		k.Op("selp.%s %s, %s, %s, %s", d.reg(), v, put, init, here)
		store(k, d, k.Addr(out, idx, d.Size()), v)
		k.Place(next)
	})
}
