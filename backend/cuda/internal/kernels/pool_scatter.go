package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// SelectAndScatter over overlapping 2-D pooling windows (3x3 at a stride
// of 2, say), in two passes where the window kernels take three
// rank-generic ones:
//
//   - pool2d_select_<ge|le>_<nhwc|nchwband>_<dtype> (sel, x, ...): each
//     window's choice as its tap's number in the window (row-major, one
//     byte; PoolSelectNone where every tap is on padding), the first
//     largest (ge) or smallest, a NaN winning over numbers. NHWC a thread
//     a window (n, pg); NCHW by bands whose input rows are staged (the
//     band kernels' parameters).
//   - pool2d_select_scatter_<nhwc|nchw>_<dtype> (out, sel, src, init, n,
//     pg): a thread an operand element, in the layout's order: *init plus
//     src of each window over it that chose it, windows in order, summed
//     in the compute dtype and rounded once.
//
// The selections are a byte a window where the window kernels write an
// int64 offset, and the scatter reads only the windows over its element.

// PoolSelectNone is the selection of a window whose taps are all on
// padding.
const PoolSelectNone = 255

// PoolSelects reports whether the selection kernels take p: at most 254
// taps a window, so that a tap's number fits a byte beside
// PoolSelectNone.
func PoolSelects(p PoolDims) bool { return p.KH*p.KW < PoolSelectNone }

func poolScatterKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range append(append([]DType{}, Numeric...), Halves...) {
		for _, ge := range []bool{true, false} {
			out = append(out, poolSelectKernel(d, ge, "nhwc"))
		}
		out = append(out, poolSelectScatterKernel(d, true), poolSelectScatterKernel(d, false))
	}
	for _, d := range quadTypes {
		for _, ge := range []bool{true, false} {
			out = append(out, poolSelectKernel(d, ge, "nchwband"))
		}
	}
	return out
}

// poolSelectKernel writes pool2d_select_<ge|le>_<layout>_<d>, layout nhwc
// or nchwband.
func poolSelectKernel(d DType, ge bool, layout string) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_select", selName(ge), layout, string(d)))
	sel, x := k.ParamPtr("sel"), k.ParamPtr("x")
	// choose writes the selection of the window at (ih0, iw0) to sel[o],
	// value giving a tap's value from its index.
	choose := func(o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg, value func(idx ptx.Reg) ptx.Reg) {
		s := newSelection(k, d.Compute(), ge) // a half type's taps compared in float32
		tap := k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 0", tap)
		eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
			next := k.Label("tap")
			k.Op("@%s bra %s", pad, next)
			s.consider(value(idx), tap)
			k.Place(next)
			k.Op("add.s64 %s, %s, 1", tap, tap)
		})
		r := k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", r, s.chosen)
		k.Op("selp.u32 %s, %s, %d, %s", r, r, PoolSelectNone, s.found)
		store(k, U8, k.Addr(sel, o, 1), r)
	}
	if layout == "nchwband" {
		newBand(k, d, x, func(b *band) {
			b.windowsOf(1, func(j, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
				o := k.Reg(ptx.U64)
				k.Op("add.s64 %s, %s, %s", o, b.obase, j)
				choose(o, ih0, iw0, at, func(idx ptx.Reg) ptx.Reg { return b.staged(b.sh, idx) })
			})
		})
		return k
	}
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	poolLoop(k, n, func(o64, o ptx.Reg) {
		ih0, iw0, at := poolWindow(k, true, o)
		choose(o64, ih0, iw0, at, func(idx ptx.Reg) ptx.Reg {
			return toCompute(k, d, load(k, d, k.Addr(x, idx, d.Size())))
		})
	})
	return k
}

// poolSelectScatterKernel writes pool2d_select_scatter_<nhwc|nchw>_<d>.
func poolSelectScatterKernel(d DType, nhwc bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_select_scatter", layoutName(nhwc), string(d)))
	o, sel, src, ip := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("src"), k.ParamPtr("init")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	c := d.Compute()
	C, OH, OW, KW := poolField(k, pgC), poolField(k, pgOH), poolField(k, pgOW), poolField(k, 6)
	one := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 1", one)
	poolLoop(k, n, func(i64, i ptx.Reg) {
		img, ch, ih, iw := poolIndex(k, i, nhwc, 1, 4, 2, 3) // H and W
		acc := k.Reg(c.reg())
		k.Op("mov.%s %s, %s", bits(c.reg()), acc, toCompute(k, d, load(k, d, ip)))
		ohLo, ohEnd := poolCover(k, ih, 5, 7, 9, pgOH, 5)
		owLo, owEnd := poolCover(k, iw, 6, 8, 10, pgOW, 6)
		k.Loop(ohLo, ohEnd, one, func(oh64 ptx.Reg) {
			oh := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", oh, oh64)
			row := k.Reg(ptx.U32) // the tap's row in the window: ih + PH - oh·SH
			k.Op("add.u32 %s, %s, %s", row, ih, poolField(k, 9))
			sh := k.Reg(ptx.U32)
			k.Op("mul.lo.u32 %s, %s, %s", sh, oh, poolField(k, 7))
			k.Op("sub.u32 %s, %s, %s", row, row, sh)
			base := k.Reg(ptx.U32) // the window (oh, 0)'s index
			if nhwc {
				k.Op("mad.lo.u32 %s, %s, %s, %s", base, img, OH, oh)
				k.Op("mul.lo.u32 %s, %s, %s", base, base, OW)
			} else {
				k.Op("mad.lo.u32 %s, %s, %s, %s", base, img, C, ch)
				k.Op("mad.lo.u32 %s, %s, %s, %s", base, base, OH, oh)
				k.Op("mul.lo.u32 %s, %s, %s", base, base, OW)
			}
			k.Loop(owLo, owEnd, one, func(ow64 ptx.Reg) {
				ow, win, tap := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
				k.Op("cvt.u32.u64 %s, %s", ow, ow64)
				k.Op("add.u32 %s, %s, %s", win, base, ow)
				if nhwc {
					k.Op("mad.lo.u32 %s, %s, %s, %s", win, win, C, ch)
				}
				// The tap's number: row·KW + iw + PW - ow·SW.
				k.Op("mul.lo.u32 %s, %s, %s", tap, ow, poolField(k, 8))
				k.Op("sub.u32 %s, %s, %s", tap, iw, tap)
				k.Op("add.u32 %s, %s, %s", tap, tap, poolField(k, 10))
				k.Op("mad.lo.u32 %s, %s, %s, %s", tap, row, KW, tap)
				w64 := k.Reg(ptx.U64)
				k.Op("cvt.u64.u32 %s, %s", w64, win)
				// Every lane reads its window's value, chosen or not: a
				// warp's neighbours read whole sectors, without branching.
				chosen, p := load(k, U8, k.Addr(sel, w64, 1)), k.Reg(ptx.Pred)
				sum := binaryOp(k, "add", c, acc, toCompute(k, d, load(k, d, k.Addr(src, w64, d.Size()))))
				k.Op("setp.eq.u32 %s, %s, %s", p, chosen, tap)
				k.Op("selp.%s %s, %s, %s, %s", bits(c.reg()), acc, sum, acc, p)
			})
		})
		store(k, d, k.Addr(o, i64, d.Size()), fromCompute(k, d, acc))
	})
	return k
}

// poolCover returns [lo, end) (u64) of the window positions along one
// dimension whose windows hold position i (u32): lo = ceil((i + P - K +
// 1) / S) (0 at least), end = (i + P) / S + 1 (the positions' count at
// most), for the fields of pg giving the window's size K, stride S, low
// padding P and positions O, the stride dividing through constants slot.
func poolCover(k *ptx.Kernel, i ptx.Reg, fk, fs, fp, fo, slot int) (lo, end ptx.Reg) {
	S := poolField(k, fs)
	div := func(e ptx.Reg) ptx.Reg {
		q, _ := divide32(k, e, S, k.LoadField32("pg", pgMagic+8*slot), k.LoadField32("pg", pgMagic+8*slot+4))
		return q
	}
	top, t := k.Reg(ptx.U32), k.Reg(ptx.S32)
	k.Op("add.u32 %s, %s, %s", top, i, poolField(k, fp))
	hi := div(top)
	k.Op("add.u32 %s, %s, 1", hi, hi)
	k.Op("min.u32 %s, %s, %s", hi, hi, poolField(k, fo))
	// t = i + P + 1 - K, rounded up to a stride where positive.
	k.Op("add.s32 %s, %s, 1", t, top)
	k.Op("sub.s32 %s, %s, %s", t, t, poolField(k, fk))
	k.Op("max.s32 %s, %s, 0", t, t)
	k.Op("add.s32 %s, %s, %s", t, t, S)
	k.Op("sub.s32 %s, %s, 1", t, t)
	l := div(t)
	lo, end = k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", lo, l)
	k.Op("cvt.u64.u32 %s, %s", end, hi)
	return lo, end
}
