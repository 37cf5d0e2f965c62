package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// The NCHW depthwise convolution by bands (pool_band.go's frame): a block
// stages a band's input rows of one plane in shared memory, whole sectors
// read once, and its threads compute the band's outputs from them, where
// the direct kernels read each tap's row shifted off its sectors (output
// plane p reads input plane p / M, its filter column c·M+m the plane's
// remainder by C·M, which pg's C holds):
//
//   - dw_fwd_nchwband_<d> (out, x, f, m, ...): the forward, pg describing
//     the convolution as a pooling (input H x W, output OH x OW, the
//     filter's window, strides, low padding and dilations: a band stages
//     the rows its windows' extent spans); taps in order (kh, kw).
//   - dw_input_nchwband_<d> (dx, dy, f, m, ...): the input gradient at a
//     multiplier (m), strides and dilations of 1, a correlation of dy with the filter
//     turned half a turn: pg describes dy as the input (OH x OW), dx as
//     the output, low padding KH-1-PT and KW-1-PL; the filter's taps in
//     order (kh, kw), as the direct kernel sums them.
//   - dw_filter_nchwband_<d> (part, x, dy, m, ...): the filter gradient's
//     float64 partial sums a band (dwFilterBand), dilated or not.
//
// The forward and input gradient stage their plane's filter taps in
// shared memory too. DepthwiseBand and DepthwiseFilterBand say which
// convolutions they take; rows too wide for a band take their _nchwtile_
// twins (tiles.go; DepthwiseTile, DepthwiseFilterTile).

// DepthwiseBandTaps is the most taps a filter the band kernels take has
// (a band stages its plane's taps in shared memory).
const DepthwiseBandTaps = 64

// DepthwiseBand reports whether the band kernels take the NCHW depthwise
// convolution g of dtype d (input gradient: grad): for the input
// gradient a multiplier, strides and dilations of 1 and low padding
// inside the window; at most DepthwiseBandTaps taps, and the rows a band
// reads fitting its shared memory.
func DepthwiseBand(g DepthwiseDims, d DType, grad bool) bool {
	return dwBandTakes(g, grad) && PoolBand(DepthwisePool(g, grad), d)
}

// DepthwiseTile is DepthwiseBand for rows too wide for a band: the
// tiling of dw_fwd_nchwtile or dw_input_nchwtile (grad), and whether they
// take g of dtype d.
func DepthwiseTile(g DepthwiseDims, d DType, grad bool) (Tiling, bool) {
	if !dwBandTakes(g, grad) {
		return Tiling{}, false
	}
	return BandTiling(DepthwisePool(g, grad), d, BandBytes, 0)
}

// dwBandTakes reports whether the band kernels' windows can describe g:
// for the input gradient a multiplier, strides and dilations of 1 and
// low padding inside the window; at most DepthwiseBandTaps taps.
func dwBandTakes(g DepthwiseDims, grad bool) bool {
	if g.KH*g.KW > DepthwiseBandTaps || !g.narrow() {
		return false
	}
	return !grad || g.M == 1 && g.SH == 1 && g.SW == 1 && g.DH == 1 && g.DW == 1 && g.PT < g.KH && g.PL < g.KW
}

// DepthwiseFilterBand reports whether dw_filter_nchwband takes the
// filter gradient of the NCHW depthwise convolution g of dtype d: the
// rows a band reads of the input and of dy fitting its shared memory.
func DepthwiseFilterBand(g DepthwiseDims, d DType) bool {
	if !g.narrow() {
		return false
	}
	p := DepthwisePool(g, false)
	return poolBandIn(p, d, FilterBandBytes) && FilterBandRows(p, d)*p.OW*d.Size() <= FilterBandBytes
}

// DepthwiseFilterTile is the tiling of dw_filter_nchwtile for the filter
// gradient of g of dtype d (its input rows and dy's outputs staged in
// FilterBandBytes each), and whether it takes it.
func DepthwiseFilterTile(g DepthwiseDims, d DType) (Tiling, bool) {
	if !g.narrow() {
		return Tiling{}, false
	}
	return BandTiling(DepthwisePool(g, false), d, FilterBandBytes, d.Size())
}

// FilterBandRows is the output rows a band of dw_filter_nchwband holds for
// p (DepthwisePool) of dtype d.
func FilterBandRows(p PoolDims, d DType) int { return bandRowsIn(p, d, FilterBandBytes) }

// DepthwisePool describes g (or its input gradient: grad) as the pooling
// whose windows the band kernels walk.
func DepthwisePool(g DepthwiseDims, grad bool) PoolDims {
	if grad {
		return PoolDims{C: g.C, H: g.OH, W: g.OW, OH: g.H, OW: g.W, KH: g.KH, KW: g.KW, SH: 1, SW: 1,
			PH: g.KH - 1 - g.PT, PW: g.KW - 1 - g.PL}
	}
	return PoolDims{C: g.C * g.M, H: g.H, W: g.W, OH: g.OH, OW: g.OW, KH: g.KH, KW: g.KW, SH: g.SH, SW: g.SW, PH: g.PT, PW: g.PL, DH: g.DH, DW: g.DW}
}

func depthwiseBandKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range Floats {
		for _, tiled := range []bool{false, true} {
			out = append(out, dwBand(d, false, tiled), dwBand(d, true, tiled), dwFilterBand(d, tiled), dwInputRows(d, tiled))
		}
	}
	return out
}

// dwBand writes dw_fwd_nchwband_<d>, or dw_input_nchwband_<d> (turned:
// the window's taps walked from its last, each the filter's tap in
// order).
func dwBand(d DType, turned, tiled bool) *ptx.Kernel {
	name := Name("dw_fwd", bandLayout(tiled), string(d))
	if turned {
		name = Name("dw_input", bandLayout(tiled), string(d))
	}
	k := ptx.NewKernel(name)
	out, x, f := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("f")
	m := paramDivisor(k, "m") // the multiplier: output plane p reads input plane p / M
	t := d.reg()
	taps := k.Shared("taps", DepthwiseBandTaps*d.Size(), d.Size())
	newBandOf(k, d, x, bandSpec{planes: &m, bytes: BandBytes, tiled: tiled}, func(b *band) {
		_, c := poolDiv(k, b.plane, pgC, 0)
		C, KH, KW, H, W := poolField(k, pgC), poolField(k, 5), poolField(k, 6), poolField(k, 1), poolField(k, 2)
		// The plane's filter taps, staged once a band: f[tap·C + c].
		n, n64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mul.lo.u32 %s, %s, %s", n, KH, KW)
		k.Op("cvt.u64.u32 %s, %s", n64, n)
		k.Loop(b.tid, n64, b.ntid, func(i ptx.Reg) {
			i32, fi := k.Reg(ptx.U32), k.Reg(ptx.U64)
			k.Op("cvt.u32.u64 %s, %s", i32, i)
			k.Op("mad.lo.u32 %s, %s, %s, %s", i32, i32, C, c)
			k.Op("cvt.u64.u32 %s, %s", fi, i32)
			k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(taps, i, d.Size()), load(k, d, k.Addr(f, fi, d.Size())))
		})
		k.Op("bar.sync 0")
		DH, DW := poolField(k, pgDH), poolField(k, pgDW)
		size, step := int64(d.Size()), k.Reg(ptx.S64) // the bytes from a tap's column to the next's
		if turned {
			k.Op("mov.s64 %s, %d", step, -size) // the window's columns walked from its last
		} else {
			k.Op("mul.wide.s32 %s, %s, %d", step, DW, size)
		}
		b.windows(func(_, o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
			acc := k.Reg(t)
			k.Op("mov.%s %s, %s", t, acc, ptx.Imm(t, 0))
			// The filter's columns [lo, hi) whose taps fall inside the
			// image, the same for every row: no bounds check a tap.
			lo, hi, first := k.Reg(ptx.S32), k.Reg(ptx.S32), k.Reg(ptx.S32)
			if turned { // column iw0 + KW-1-kw: kw in [iw0+KW-W, iw0+KW)
				k.Op("add.s32 %s, %s, %s", hi, iw0, KW)
				k.Op("sub.s32 %s, %s, %s", lo, hi, W)
				k.Op("max.s32 %s, %s, 0", lo, lo)
				k.Op("min.s32 %s, %s, %s", hi, hi, KW)
				k.Op("sub.s32 %s, %s, 1", first, KW)
				k.Op("sub.s32 %s, %s, %s", first, first, lo)
				k.Op("add.s32 %s, %s, %s", first, first, iw0)
			} else { // column iw0 + kw·DW: the taps past the image's edges skipped, a window at an edge a step each
				dwInsideColumns(k, iw0, KW, DW, W, lo, hi, first)
			}
			count := k.Reg(ptx.S32)
			k.Op("sub.s32 %s, %s, %s", count, hi, lo)
			dwBandLoop(k, KH, func(kh ptx.Reg) {
				ih := dwBandTap(k, ih0, KH, kh, DH, turned)
				pad, rowDone := k.Reg(ptx.Pred), k.Label("dw_band_row")
				k.Op("setp.ge.u32 %s, %s, %s", pad, ih, H) // negatives are large unsigned
				k.Op("@%s bra %s", pad, rowDone)
				// The row's first tap inside, in the staged rows and in the
				// filter's taps (kh·KW + lo).
				xa, fa, fi := k.Addr(b.sh, at(ih, first), d.Size()), k.Reg(ptx.U64), k.Reg(ptx.U32)
				k.Op("mad.lo.u32 %s, %s, %s, %s", fi, kh, KW, lo)
				k.Op("cvt.u64.u32 %s, %s", fa, fi)
				k.Op("mad.lo.s64 %s, %s, %d, %s", fa, fa, size, taps)
				left, p := k.Reg(ptx.S32), k.Reg(ptx.Pred)
				k.Op("mov.s32 %s, %s", left, count)
				top := k.Label("dw_band_taps")
				k.Place(top)
				k.Op("setp.le.s32 %s, %s, 0", p, left)
				k.Op("@%s bra %s", p, rowDone)
				xv, fv := k.Reg(t), k.Reg(t)
				k.Op("ld.shared.%s %s, [%s]", d.mem(), xv, xa)
				k.Op("ld.shared.%s %s, [%s]", d.mem(), fv, fa)
				dwMulAdd(k, t, acc, xv, fv)
				k.Op("add.s64 %s, %s, %s", xa, xa, step)
				k.Op("add.s64 %s, %s, %d", fa, fa, size)
				k.Op("sub.s32 %s, %s, 1", left, left)
				k.Op("bra.uni %s", top)
				k.Place(rowDone)
			})
			store(k, d, k.Addr(out, o, d.Size()), acc)
		})
	})
	return k
}

// dwBandTap is the row (or column) of tap i of a window starting at p0,
// of K taps D apart: p0 + i·D, or turned (no dilation), p0 + K-1-i
// (s32).
func dwBandTap(k *ptx.Kernel, p0, K, i, D ptx.Reg, turned bool) ptx.Reg {
	p := k.Reg(ptx.S32)
	if !turned {
		k.Op("mad.lo.s32 %s, %s, %s, %s", p, i, D, p0)
		return p
	}
	k.Op("add.s32 %s, %s, %s", p, p0, K)
	k.Op("sub.s32 %s, %s, %s", p, p, i)
	k.Op("sub.s32 %s, %s, 1", p, p)
	return p
}

// dwInsideColumns sets [lo, hi) to the taps of a window starting at
// column iw0 (s32), of KW taps DW apart, that fall inside [0, W), and
// first to lo's column: a step a tap past either edge, none inside.
func dwInsideColumns(k *ptx.Kernel, iw0, KW, DW, W, lo, hi, first ptx.Reg) {
	last := k.Reg(ptx.S32)
	k.Op("mov.s32 %s, 0", lo)
	k.Op("mov.s32 %s, %s", first, iw0)
	loopUntil(k, "dw_left", func(p ptx.Reg) { k.Op("setp.ge.s32 %s, %s, 0", p, first) },
		func(p ptx.Reg) { k.Op("setp.ge.s32 %s, %s, %s", p, lo, KW) },
		func() {
			k.Op("add.s32 %s, %s, 1", lo, lo)
			k.Op("add.s32 %s, %s, %s", first, first, DW)
		})
	k.Op("mov.s32 %s, %s", hi, KW)
	k.Op("sub.s32 %s, %s, 1", last, KW)
	k.Op("mad.lo.s32 %s, %s, %s, %s", last, last, DW, iw0)
	loopUntil(k, "dw_right", func(p ptx.Reg) { k.Op("setp.le.s32 %s, %s, %s", p, hi, lo) },
		func(p ptx.Reg) { k.Op("setp.lt.s32 %s, %s, %s", p, last, W) },
		func() {
			k.Op("sub.s32 %s, %s, 1", hi, hi)
			k.Op("sub.s32 %s, %s, %s", last, last, DW)
		})
}

// loopUntil runs step until one of two tests (each setting p) holds,
// testing before each step.
func loopUntil(k *ptx.Kernel, name string, test1, test2 func(p ptx.Reg), step func()) {
	p := k.Reg(ptx.Pred)
	top, done := k.Label(name), k.Label(name+"_done")
	k.Place(top)
	for _, test := range []func(ptx.Reg){test1, test2} {
		test(p)
		k.Op("@%s bra %s", p, done)
	}
	step()
	k.Op("bra.uni %s", top)
	k.Place(done)
}

// dwBandLoop runs body for i in [0, n) (u32).
func dwBandLoop(k *ptx.Kernel, n ptx.Reg, body func(i ptx.Reg)) {
	i, p := k.Reg(ptx.U32), k.Reg(ptx.Pred)
	top, done := k.Label("dw_band_loop"), k.Label("dw_band_done")
	k.Op("mov.u32 %s, 0", i)
	k.Place(top)
	k.Op("setp.ge.u32 %s, %s, %s", p, i, n)
	k.Op("@%s bra %s", p, done)
	body(i)
	k.Op("add.u32 %s, %s, 1", i, i)
	k.Op("bra.uni %s", top)
	k.Place(done)
}

// DepthwiseFilterSlots is the most taps whose sums dw_filter_nchwband
// keeps a thread in shared memory (3x3 filters); larger filters walk the
// band's windows once a tap.
const DepthwiseFilterSlots = 9

// dwFilterBand writes dw_filter_nchwband_<d> (part, x, dy, m, ...): the
// filter gradient's float64 partial sums a band: the band stages its
// input rows and its rows of dy; each thread sums x·dy of each filter tap
// (kh, kw) over its share of the band's outputs, in its slots of shared
// memory (up to DepthwiseFilterSlots taps: one walk over the windows) or
// a walk a tap, and a tree across the block sums each tap;
// part [N·bands, KH·KW·C·M] gets row n·bands + band, column tap·C·M + cm
// for output plane (n, cm). The host folds the rows and rounds once.
func dwFilterBand(d DType, tiled bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("dw_filter", bandLayout(tiled), string(d)))
	part, x, dy := k.ParamPtr("part"), k.ParamPtr("x"), k.ParamPtr("dy")
	m := paramDivisor(k, "m")
	dys := k.Shared("dys", FilterBandBytes, 16)
	slots := k.Shared("slots", ReduceBlock*DepthwiseFilterSlots*8, 8)
	tree := &blockRows{k: k, sh: k.Shared("partials", ReduceBlock*8, 8)}
	add := func(a, c ptx.Reg) ptx.Reg {
		r := k.Reg(ptx.F64)
		k.Op("add.rn.f64 %s, %s, %s", r, a, c)
		return r
	}
	newBandOf(k, d, x, bandSpec{planes: &m, bytes: FilterBandBytes, tiled: tiled}, func(b *band) {
		tree.tid, tree.ntid = b.tid, b.ntid
		n, cm := poolDiv(k, b.plane, pgC, 0)
		CM, KH, KW, H, W := poolField(k, pgC), poolField(k, 5), poolField(k, 6), poolField(k, 1), poolField(k, 2)
		b.outputs(d.Size(), func(j, o ptx.Reg, _ func() (ptx.Reg, ptx.Reg)) { // the band's outputs of dy
			k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(dys, j, d.Size()), load(k, d, k.Addr(dy, o, d.Size())))
		})
		k.Op("bar.sync 0")
		// This band's row of part: (n·bands + band)·KH·KW·CM.
		row, taps, row64 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mad.lo.u32 %s, %s, %s, %s", row, n, b.bands, b.index)
		k.Op("mul.lo.u32 %s, %s, %s", taps, KH, KW)
		k.Op("mul.lo.u32 %s, %s, %s", taps, taps, CM)
		k.Op("mul.wide.u32 %s, %s, %s", row64, row, taps)
		store := func(kh, kw, total ptx.Reg) { // part[row64 + (kh·KW + kw)·CM + cm] = total, by thread 0
			tree.first(func() {
				col := k.Reg(ptx.U32)
				k.Op("mad.lo.u32 %s, %s, %s, %s", col, kh, KW, kw)
				k.Op("mad.lo.u32 %s, %s, %s, %s", col, col, CM, cm)
				at := k.Reg(ptx.U64)
				k.Op("cvt.u64.u32 %s, %s", at, col)
				k.Op("add.s64 %s, %s, %s", at, at, row64)
				k.Store(ptx.F64, k.Addr(part, at, 8), total)
			})
		}
		// term adds x·dy of tap (kh, kw) of window j to the float64 acc,
		// where the tap is inside the image.
		DH, DW := poolField(k, pgDH), poolField(k, pgDW)
		term := func(acc, j, ih0, iw0, kh, kw ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
			ih, iw := dwBandTap(k, ih0, KH, kh, DH, false), dwBandTap(k, iw0, KW, kw, DW, false)
			pad, q := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
			k.Op("setp.ge.u32 %s, %s, %s", pad, ih, H) // negatives are large unsigned
			k.Op("setp.ge.u32 %s, %s, %s", q, iw, W)
			k.Op("or.pred %s, %s, %s", pad, pad, q)
			next := k.Label("dw_filter_tap")
			k.Op("@%s bra %s", pad, next)
			xv, dv := k.Reg(d.reg()), k.Reg(d.reg())
			k.Op("ld.shared.%s %s, [%s]", d.mem(), xv, k.Addr(b.sh, at(ih, iw), d.Size()))
			k.Op("ld.shared.%s %s, [%s]", d.mem(), dv, k.Addr(dys, j, d.Size()))
			dwMulAdd(k, ptx.F64, acc, widen(k, d, xv), widen(k, d, dv))
			k.Place(next)
		}
		few, p, done := k.Reg(ptx.U32), k.Reg(ptx.Pred), k.Label("dw_filter_done")
		k.Op("mul.lo.u32 %s, %s, %s", few, KH, KW)
		k.Op("setp.gt.u32 %s, %s, %d", p, few, DepthwiseFilterSlots)
		many := k.Label("dw_filter_many")
		k.Op("@%s bra %s", p, many)
		// Few taps: one walk over the band's windows, each thread's sums
		// a tap in its slots of shared memory, then a tree a tap.
		mine := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %d, %s", mine, b.tid, 8*DepthwiseFilterSlots, slots)
		dwBandLoop(k, few, func(t ptx.Reg) {
			t64 := k.Reg(ptx.U64)
			k.Op("cvt.u64.u32 %s, %s", t64, t)
			k.Op("st.shared.f64 [%s], %s", k.Addr(mine, t64, 8), ptx.Imm(ptx.F64, 0))
		})
		b.windows(func(j, _, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
			slot := k.Reg(ptx.U64)
			k.Op("mov.u64 %s, %s", slot, mine)
			dwBandLoop(k, KH, func(kh ptx.Reg) {
				dwBandLoop(k, KW, func(kw ptx.Reg) {
					acc := k.Reg(ptx.F64)
					k.Op("ld.shared.f64 %s, [%s]", acc, slot)
					term(acc, j, ih0, iw0, kh, kw, at)
					k.Op("st.shared.f64 [%s], %s", slot, acc)
					k.Op("add.s64 %s, %s, 8", slot, slot)
				})
			})
		})
		dwBandLoop(k, KH, func(kh ptx.Reg) {
			dwBandLoop(k, KW, func(kw ptx.Reg) {
				t, v := k.Reg(ptx.U32), k.Reg(ptx.F64)
				k.Op("mad.lo.u32 %s, %s, %s, %s", t, kh, KW, kw)
				t64 := k.Reg(ptx.U64)
				k.Op("cvt.u64.u32 %s, %s", t64, t)
				k.Op("ld.shared.f64 %s, [%s]", v, k.Addr(mine, t64, 8))
				store(kh, kw, tree.tree(ptx.F64, v, add))
			})
		})
		k.Op("bra.uni %s", done)
		// Many taps: a walk over the windows a tap, its sum in a register.
		k.Place(many)
		dwBandLoop(k, KH, func(kh ptx.Reg) {
			dwBandLoop(k, KW, func(kw ptx.Reg) {
				acc := k.Reg(ptx.F64)
				k.Op("mov.f64 %s, %s", acc, ptx.Imm(ptx.F64, 0))
				b.windows(func(j, _, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) { term(acc, j, ih0, iw0, kh, kw, at) })
				store(kh, kw, tree.tree(ptx.F64, acc, add))
			})
		})
		k.Place(done)
	})
	return k
}
