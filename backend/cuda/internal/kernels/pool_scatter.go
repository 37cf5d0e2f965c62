package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

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
//   - pool2d_select_scatter_nhwc_<dtype> (out, sel, src, init, n, pg): a
//     thread an operand element, in the layout's order: *init plus src of
//     each window over it that chose it, windows in order, summed in the
//     compute dtype and rounded once.
//   - pool2d_select_scatter_nchwband_<dtype> (out, sel, src, init, pg,
//     chunks, cpp, per): the same sums by bands of an image plane's
//     operand rows, per rows a band, cpp bands a plane (the divisor:
//     value, magic, shift), chunks bands in all: a block stages the
//     selections and the src values of the windows over its band (whole
//     output rows, contiguous in the plane) in shared memory, read in
//     order, then writes the band's elements in order.
//
// Rows too wide for a band take the _nchwtile_ twins of the NCHW kernels
// (tiles.go): the selections by tiles of output columns, the scatter by
// tiles of operand columns.
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

// PoolScatterBand reports whether pool2d_select_scatter_nchwband takes p
// of dtype d: the windows over one operand row fit a band's shared
// memory.
func PoolScatterBand(p PoolDims, d DType) bool {
	return slices.Contains(quadTypes, d) && p.H > 0 && p.OH > 0 && p.OW > 0 && ScatterBandRows(p, d) > 0
}

// ScatterBandRows is the operand rows a band of
// pool2d_select_scatter_nchwband holds for p of dtype d (RowBandRows of
// the windows' values; their selections, a byte each, fit beside them).
func ScatterBandRows(p PoolDims, d DType) int { return RowBandRows(p, p.OW*d.Size()) }

func poolScatterKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range append(append([]DType{}, Numeric...), Halves...) {
		for _, ge := range []bool{true, false} {
			out = append(out, poolSelectKernel(d, ge, "nhwc"))
		}
		for _, nhwc := range []bool{true, false} {
			out = append(out, poolScatterKernel(d, nhwc, true), poolScatterKernel(d, nhwc, false))
		}
		for _, layout := range []string{"nhwc", "nchw"} {
			out = append(out, poolArgmaxKernel(d, layout))
		}
		for _, nhwc := range []bool{true, false} {
			out = append(out, poolUnpoolGatherKernel(d, nhwc), poolUnpoolPutKernel(d, nhwc))
		}
	}
	for _, d := range quadTypes {
		for _, tiled := range []bool{false, true} {
			for _, ge := range []bool{true, false} {
				out = append(out, poolSelectKernel(d, ge, bandLayout(tiled)))
			}
			out = append(out, poolBandScatterKernel(d, tiled, true), poolBandScatterKernel(d, tiled, false),
				poolArgmaxKernel(d, bandLayout(tiled)), poolBandUnpoolPutKernel(d, tiled))
		}
		out = append(out, poolQuadsArgmaxKernel(d), poolQuadsUnpoolPutKernel(d))
	}
	return out
}

// poolSelectKernel writes pool2d_select_<ge|le>_<layout>_<d>, layout nhwc
// or nchwband.
func poolSelectKernel(d DType, ge bool, layout string) *ptx.Kernel {
	return poolChooseKernel(Name("pool2d_select", selName(ge), layout, string(d)), d, ge, layout, false)
}

// poolChooseKernel writes kernel name, which writes each window's
// selection (pool2d_select's byte) to sel, and, where keep, the chosen
// tap's value to out (the compute dtype's extreme, -Inf for max, where
// every tap is on padding): parameters (out if keep, sel, x, then the
// layout's: n and pg for nhwc and nchw, a thread a window; the band
// kernels' for nchwband and nchwtile).
func poolChooseKernel(name string, d DType, ge bool, layout string, keep bool) *ptx.Kernel {
	k := ptx.NewKernel(name)
	var out ptx.Reg
	if keep {
		out = k.ParamPtr("out")
	}
	sel, x := k.ParamPtr("sel"), k.ParamPtr("x")
	// choose writes the selection of the window at (ih0, iw0) to sel[o],
	// value giving a tap's value from its index.
	choose := func(o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg, value func(idx ptx.Reg) ptx.Reg) {
		c := d.Compute()
		s := newSelection(k, c, ge) // a half type's taps compared in float32
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
		if keep {
			v := k.Reg(c.reg())
			k.Op("selp.%s %s, %s, %s, %s", c.reg(), v, s.best, reduceInit(map[bool]string{true: "max", false: "min"}[ge], c), s.found)
			store(k, d, k.Addr(out, o, d.Size()), fromCompute(k, d, v))
		}
	}
	if layout == "nchwband" || layout == "nchwtile" {
		newBand(k, d, x, layout == "nchwtile", func(b *band) {
			b.windowsOf(1, func(_, o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
				choose(o, ih0, iw0, at, func(idx ptx.Reg) ptx.Reg { return b.staged(b.sh, idx) })
			})
		})
		return k
	}
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	poolLoop(k, n, func(o64, o ptx.Reg) {
		ih0, iw0, at := poolWindow(k, layout == "nhwc", o)
		choose(o64, ih0, iw0, at, func(idx ptx.Reg) ptx.Reg {
			return toCompute(k, d, load(k, d, k.Addr(x, idx, d.Size())))
		})
	})
	return k
}

// poolScatterKernel writes pool2d_select_scatter_<nhwc|nchw>_<d> where
// chosen, else pool2d_spread_<nhwc|nchw>_<d> (out, src, init, n, pg): each
// operand element init plus the values of every window over it (with a
// zero init, a sum's ReduceWindow over src dilated by the pooling's
// strides: the gradient of the pooling's sums).
func poolScatterKernel(d DType, nhwc, chosen bool) *ptx.Kernel {
	k := ptx.NewKernel(Name(ScatterKind(chosen), LayoutName(nhwc), string(d)))
	o := k.ParamPtr("out")
	var sel ptx.Reg
	if chosen {
		sel = k.ParamPtr("sel")
	}
	src, ip := k.ParamPtr("src"), k.ParamPtr("init")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	C, OH, OW := poolField(k, pgC), poolField(k, pgOH), poolField(k, pgOW)
	init := toCompute(k, d, load(k, d, ip))
	// A window along a row: C elements on in NHWC, the next in NCHW.
	selStep, valStep := k.Reg(ptx.U64), k.Reg(ptx.U64)
	if nhwc {
		k.Op("cvt.u64.u32 %s, %s", selStep, C)
	} else {
		k.Op("mov.u64 %s, 1", selStep)
	}
	k.Op("mul.lo.s64 %s, %s, %d", valStep, selStep, d.Size())
	poolLoop(k, n, func(i64, i ptx.Reg) {
		img, ch, ih, iw := poolIndex(k, i, nhwc, 1, 4, 2, 3) // H and W
		acc := scatterSum(k, d, init, ih, iw, windowWalk{
			at: func(oh, ow ptx.Reg) (ptx.Reg, ptx.Reg) {
				win, w64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
				if nhwc { // ((img·OH + oh)·OW + ow)·C + ch
					k.Op("mad.lo.u32 %s, %s, %s, %s", win, img, OH, oh)
					k.Op("mad.lo.u32 %s, %s, %s, %s", win, win, OW, ow)
					k.Op("mad.lo.u32 %s, %s, %s, %s", win, win, C, ch)
				} else { // ((img·C + ch)·OH + oh)·OW + ow
					k.Op("mad.lo.u32 %s, %s, %s, %s", win, img, C, ch)
					k.Op("mad.lo.u32 %s, %s, %s, %s", win, win, OH, oh)
					k.Op("mad.lo.u32 %s, %s, %s, %s", win, win, OW, ow)
				}
				k.Op("cvt.u64.u32 %s, %s", w64, win)
				if !chosen {
					return ptx.Reg{}, k.Addr(src, w64, d.Size())
				}
				return k.Addr(sel, w64, 1), k.Addr(src, w64, d.Size())
			},
			selStep: selStep, valStep: valStep, every: !chosen,
			read: func(ps, pv ptx.Reg) (ptx.Reg, ptx.Reg) {
				if !chosen {
					return ptx.Reg{}, toCompute(k, d, load(k, d, pv))
				}
				return load(k, U8, ps), toCompute(k, d, load(k, d, pv))
			},
		})
		store(k, d, k.Addr(o, i64, d.Size()), fromCompute(k, d, acc))
	})
	return k
}

// poolBandScatterKernel writes pool2d_select_scatter_<nchwband|nchwtile>_<d>
// where chosen, else pool2d_spread_<nchwband|nchwtile>_<d> (out, src,
// init, ...): the windows' values (and selections) staged a band at a
// time.
func poolBandScatterKernel(d DType, tiled, chosen bool) *ptx.Kernel {
	k := ptx.NewKernel(Name(ScatterKind(chosen), bandLayout(tiled), string(d)))
	o := k.ParamPtr("out")
	var sel, shSel ptx.Reg
	if chosen {
		sel, shSel = k.ParamPtr("sel"), k.Shared("sel_band", BandBytes, 16)
	}
	src, ip := k.ParamPtr("src"), k.ParamPtr("init")
	shSrc := k.Shared("src_band", BandBytes, 16)
	init := toCompute(k, d, load(k, d, ip))
	selStep, valStep := k.Reg(ptx.U64), k.Reg(ptx.U64) // a staged window along a row: the next element
	k.Op("mov.u64 %s, 1", selStep)
	k.Op("mov.u64 %s, %d", valStep, d.Size())
	newRowBand(k, tiled, func(rb *rowBand) {
		if chosen {
			rb.stage(U8, sel, shSel, rb.plane)
		}
		rb.stage(d, src, shSrc, rb.plane)
		k.Op("bar.sync 0")
		rb.elements(d, o, func(ih, iw ptx.Reg) ptx.Reg {
			acc := scatterSum(k, d, init, ih, iw, windowWalk{
				at: func(oh, ow ptx.Reg) (ptx.Reg, ptx.Reg) {
					w := rb.staged(oh, ow)
					if !chosen {
						return ptx.Reg{}, k.Addr(shSrc, w, d.Size())
					}
					return k.Addr(shSel, w, 1), k.Addr(shSrc, w, d.Size())
				},
				selStep: selStep, valStep: valStep, every: !chosen,
				read: func(ps, pv ptx.Reg) (ptx.Reg, ptx.Reg) {
					raw := k.Reg(d.reg())
					k.Op("ld.shared.%s %s, [%s]", d.mem(), raw, pv)
					if !chosen {
						return ptx.Reg{}, toCompute(k, d, raw)
					}
					chosen := k.Reg(ptx.U32)
					k.Op("ld.shared.u8 %s, [%s]", chosen, ps)
					return chosen, toCompute(k, d, raw)
				},
			})
			return fromCompute(k, d, acc)
		})
	})
	return k
}

// ScatterKind names the scatter kernels: pool2d_select_scatter where the
// windows chose, pool2d_spread where every tap counts.
func ScatterKind(chosen bool) string {
	if chosen {
		return "pool2d_select_scatter"
	}
	return "pool2d_spread"
}

// windowWalk reads the windows of an output row in order for
// scatterSum: at gives the addresses (u64) of window (oh, ow)'s selection
// and value (oh and ow u32), selStep and valStep the bytes (u64) from one
// window's to the next's along the row, and read loads a selection (u32)
// and a value (the compute dtype) from their addresses.
type windowWalk struct {
	at               func(oh, ow ptx.Reg) (sel, val ptx.Reg)
	selStep, valStep ptx.Reg
	read             func(sel, val ptx.Reg) (chosen, v ptx.Reg)
	// every sums every window's value and reads no selection (sel is the
	// zero Reg).
	every bool
}

// scatterSum returns init plus the values of the windows over element
// (ih, iw) (u32) that chose it, in the compute dtype, windows in order,
// walking each output row's windows by w.
func scatterSum(k *ptx.Kernel, d DType, init, ih, iw ptx.Reg, w windowWalk) ptx.Reg {
	c, KW, SW := d.Compute(), poolField(k, 6), poolField(k, 8)
	acc := k.Reg(c.reg())
	k.Op("mov.%s %s, %s", bits(c.reg()), acc, init)
	one := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 1", one)
	ohLo, ohEnd := poolCover(k, ih, 5, 7, 9, pgOH, 5)
	owLo, owEnd := poolCover(k, iw, 6, 8, 10, pgOW, 6)
	lo, n, col, shift := k.Reg(ptx.U32), k.Reg(ptx.S32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", lo, owLo)
	k.Op("cvt.u32.u64 %s, %s", n, owEnd)
	k.Op("sub.s32 %s, %s, %s", n, n, lo)
	// The tap's column in the first window: iw + PW - lo·SW; a step along
	// the row takes SW from it.
	k.Op("add.u32 %s, %s, %s", col, iw, poolField(k, 10))
	k.Op("mul.lo.u32 %s, %s, %s", shift, lo, SW)
	k.Op("sub.u32 %s, %s, %s", col, col, shift)
	k.Loop(ohLo, ohEnd, one, func(oh64 ptx.Reg) {
		oh, tap, sh := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", oh, oh64)
		// The tap's number in window (oh, lo): (ih + PH - oh·SH)·KW + col.
		k.Op("add.u32 %s, %s, %s", tap, ih, poolField(k, 9))
		k.Op("mul.lo.u32 %s, %s, %s", sh, oh, poolField(k, 7))
		k.Op("sub.u32 %s, %s, %s", tap, tap, sh)
		k.Op("mad.lo.u32 %s, %s, %s, %s", tap, tap, KW, col)
		ps, pv := w.at(oh, lo)
		left, p := k.Reg(ptx.S32), k.Reg(ptx.Pred)
		k.Op("mov.s32 %s, %s", left, n)
		top, done := k.Label("windows"), k.Label("windows_done")
		k.Place(top)
		k.Op("setp.le.s32 %s, %s, 0", p, left)
		k.Op("@%s bra %s", p, done)
		// Every lane reads its window's value, chosen or not: without
		// branching, a warp's neighbours read whole sectors.
		chosen, v := w.read(ps, pv)
		sum := binaryOp(k, "add", c, acc, v)
		if w.every {
			k.Op("mov.%s %s, %s", bits(c.reg()), acc, sum)
		} else {
			k.Op("setp.eq.u32 %s, %s, %s", p, chosen, tap)
			k.Op("selp.%s %s, %s, %s, %s", bits(c.reg()), acc, sum, acc, p)
			k.Op("add.s64 %s, %s, %s", ps, ps, w.selStep)
		}
		k.Op("add.s64 %s, %s, %s", pv, pv, w.valStep)
		k.Op("sub.u32 %s, %s, %s", tap, tap, SW)
		k.Op("sub.s32 %s, %s, 1", left, left)
		k.Op("bra.uni %s", top)
		k.Place(done)
	})
	return acc
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
