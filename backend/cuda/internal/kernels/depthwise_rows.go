package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// The NCHW depthwise input gradient at strides, multipliers or dilations
// above 1, by bands of dx's rows (rowband.go):
//
//   - dw_input_nchwrows_<d> (dx, dy, f, m, pg, chunks, cpp, per): pg
//     describes the forward as a pooling (H x W input, OH x OW output,
//     the filter's window, strides, low padding) whose C is the input's
//     channels; m is the multiplier. A block stages, for its band of a
//     dx plane (n, c), the rows of dy's M planes (n, c·M + m) under the
//     band and the channel's filter taps; each thread sums dy·f over the
//     outputs its element's taps reach in order (kh, kw, m), as the
//     direct kernel does. Without dilation the taps are found without a
//     division a tap (row ih + PT = q·SH + r is reached by taps kh = r +
//     j·SH of output row q - j); dilated, tap kh reaches output row (ih +
//     PT - kh·DH) / SH where that divides.
//   - dw_input_nchwrowtiles_<d> (the same, then cols and tpr): rows too
//     wide for a band, by bands split into tiles of dx's columns
//     (tiles.go; DepthwiseRowTiles).

// DepthwiseRowsTaps is the most filter values a channel of
// dw_input_nchwrows holds (taps times the multiplier), staged in shared
// memory.
const DepthwiseRowsTaps = 64

// DepthwiseRows reports whether dw_input_nchwrows takes the input
// gradient of the NCHW depthwise convolution g of dtype d: at most
// DepthwiseRowsTaps filter values a channel, and the rows of dy under one
// row of dx fitting a band's shared memory.
func DepthwiseRows(g DepthwiseDims, d DType) bool {
	return dwRowsTake(g, d) && DepthwiseRowsPer(g, d) > 0
}

// DepthwiseRowTiles is DepthwiseRows for rows too wide for a band: the
// tiling of dw_input_nchwrowtiles, and whether it takes g of dtype d.
func DepthwiseRowTiles(g DepthwiseDims, d DType) (Tiling, bool) {
	if !dwRowsTake(g, d) {
		return Tiling{}, false
	}
	return RowBandTiling(DepthwiseRowsPool(g), g.M*d.Size())
}

// dwRowsTake reports whether the row-band kernels can take g of dtype d:
// at most DepthwiseRowsTaps filter values a channel, float32 or float64.
func dwRowsTake(g DepthwiseDims, d DType) bool {
	return g.KH*g.KW*g.M <= DepthwiseRowsTaps && g.OH > 0 && g.OW > 0 && g.H > 0 && g.narrow() && (d == F32 || d == F64)
}

// DepthwiseRowsPer is the rows of dx a band of dw_input_nchwrows holds.
func DepthwiseRowsPer(g DepthwiseDims, d DType) int {
	return RowBandRows(DepthwiseRowsPool(g), g.OW*g.M*d.Size())
}

// DepthwiseRowsPool is pg of dw_input_nchwrows for g.
func DepthwiseRowsPool(g DepthwiseDims) PoolDims {
	return PoolDims{C: g.C, H: g.H, W: g.W, OH: g.OH, OW: g.OW, KH: g.KH, KW: g.KW, SH: g.SH, SW: g.SW, PH: g.PT, PW: g.PL, DH: g.DH, DW: g.DW}
}

// dwInputRows writes dw_input_nchwrows_<d>, or dw_input_nchwrowtiles_<d>
// whose bands are split into column tiles (newRowBand).
func dwInputRows(d DType, tiled bool) *ptx.Kernel {
	layout := "nchwrows"
	if tiled {
		layout = "nchwrowtiles"
	}
	k := ptx.NewKernel(Name("dw_input", layout, string(d)))
	dx, dy, f := k.ParamPtr("dx"), k.ParamPtr("dy"), k.ParamPtr("f")
	m := k.Param("m", ptx.U64)
	t := d.reg()
	dys := k.Shared("dys", BandBytes, 16)
	taps := k.Shared("taps", DepthwiseRowsTaps*d.Size(), d.Size())
	newRowBand(k, tiled, func(rb *rowBand) {
		C, KH, KW := poolField(k, pgC), poolField(k, 5), poolField(k, 6)
		OH, OW, SH, SW := poolField(k, pgOH), poolField(k, pgOW), poolField(k, 7), poolField(k, 8)
		M := k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", M, m)
		_, c := poolDiv(k, rb.plane, pgC, 0)
		// The channel's filter values, (kh·KW + kw)·M + m: f[tap·C·M + c·M + m].
		vals, v64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mul.lo.u32 %s, %s, %s", vals, KH, KW)
		k.Op("mul.lo.u32 %s, %s, %s", vals, vals, M)
		k.Op("cvt.u64.u32 %s, %s", v64, vals)
		k.Loop(rb.tid, v64, rb.ntid, func(i ptx.Reg) {
			i32, tap, mm, fi := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U64)
			k.Op("cvt.u32.u64 %s, %s", i32, i)
			k.Op("div.u32 %s, %s, %s", tap, i32, M) // a few values a block, once a band
			k.Op("rem.u32 %s, %s, %s", mm, i32, M)
			k.Op("mul.lo.u32 %s, %s, %s", tap, tap, C)
			k.Op("add.u32 %s, %s, %s", tap, tap, c)
			k.Op("mad.lo.u32 %s, %s, %s, %s", tap, tap, M, mm)
			k.Op("cvt.u64.u32 %s, %s", fi, tap)
			k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(taps, i, d.Size()), load(k, d, k.Addr(f, fi, d.Size())))
		})
		// dy's planes plane·M + m, one after another.
		span := rb.span
		dyPlane, at := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mul.lo.u32 %s, %s, %s", dyPlane, rb.plane, M)
		k.Op("mov.u64 %s, %s", at, dys)
		dwBandLoop(k, M, func(ptx.Reg) {
			rb.stage(d, dy, at, dyPlane)
			k.Op("add.u32 %s, %s, 1", dyPlane, dyPlane)
			bytes := k.Reg(ptx.U64)
			k.Op("mul.wide.u32 %s, %s, %d", bytes, span, d.Size())
			k.Op("add.s64 %s, %s, %s", at, at, bytes)
		})
		k.Op("bar.sync 0")
		DH, DW := poolField(k, pgDH), poolField(k, pgDW)
		dilated, one := k.Reg(ptx.Pred), k.Reg(ptx.U32)
		k.Op("mul.lo.u32 %s, %s, %s", one, DH, DW)
		k.Op("setp.ne.u32 %s, %s, 1", dilated, one)
		rb.elements(d, dx, func(ih, iw ptx.Reg) ptx.Reg {
			acc := k.Reg(t)
			k.Op("mov.%s %s, %s", t, acc, ptx.Imm(t, 0))
			// sum adds the terms of the taps rows and cols give, in order.
			sum := func(rows, cols func(body func(kk, o ptx.Reg))) {
				rows(func(kh, oh ptx.Reg) {
					cols(func(kw, ow ptx.Reg) {
						// dy's value at (oh, ow) of plane m: staged at w + m·span;
						// the filter's at (kh·KW + kw)·M + m.
						w, fv := rb.staged(oh, ow), k.Reg(ptx.U32)
						k.Op("mad.lo.u32 %s, %s, %s, %s", fv, kh, KW, kw)
						k.Op("mul.lo.u32 %s, %s, %s", fv, fv, M)
						da, fa, span64 := k.Addr(dys, w, d.Size()), k.Reg(ptx.U64), k.Reg(ptx.U64)
						k.Op("mul.wide.u32 %s, %s, %d", span64, span, d.Size())
						k.Op("mul.wide.u32 %s, %s, %d", fa, fv, d.Size())
						k.Op("add.s64 %s, %s, %s", fa, fa, taps)
						dwBandLoop(k, M, func(ptx.Reg) {
							dv, fvv := k.Reg(t), k.Reg(t)
							k.Op("ld.shared.%s %s, [%s]", d.mem(), dv, da)
							k.Op("ld.shared.%s %s, [%s]", d.mem(), fvv, fa)
							dwMulAdd(k, t, acc, dv, fvv)
							k.Op("add.s64 %s, %s, %s", da, da, span64)
							k.Op("add.s64 %s, %s, %d", fa, fa, d.Size())
						})
					})
				})
			}
			general, done := k.Label("dw_dilated"), k.Label("dw_summed")
			k.Op("@%s bra %s", dilated, general) // the same way for every thread
			sum(func(body func(kh, oh ptx.Reg)) { dwReachTaps(k, ih, poolField(k, 9), SH, KH, OH, 5, body) },
				func(body func(kw, ow ptx.Reg)) { dwReachTaps(k, iw, poolField(k, 10), SW, KW, OW, 6, body) })
			k.Op("bra.uni %s", done)
			k.Place(general)
			sum(func(body func(kh, oh ptx.Reg)) { dwDilatedTaps(k, ih, poolField(k, 9), SH, DH, KH, OH, 5, body) },
				func(body func(kw, ow ptx.Reg)) { dwDilatedTaps(k, iw, poolField(k, 10), SW, DW, KW, OW, 6, body) })
			k.Place(done)
			return acc
		})
	})
	return k
}

// dwReachTaps runs body(t, o) for the taps t (u32, ascending) of a
// window of K taps without dilation, stride S and low padding P, that
// reach position i, o the output position of each, inside [0, O); S's
// constants in pg's slot slot.
func dwReachTaps(k *ptx.Kernel, i, P, S, K, O ptx.Reg, slot int, body func(t, o ptx.Reg)) {
	q, r := dwReach(k, i, P, S, slot)
	t, o := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %s", t, r)
	k.Op("mov.u32 %s, %s", o, q)
	dwStrideLoop(k, t, K, S, o, O, func() { body(t, o) })
}

// dwDilatedTaps is dwReachTaps for taps D apart: tap t reaches i from
// output position (i + P - t·D) / S where that is a whole position.
func dwDilatedTaps(k *ptx.Kernel, i, P, S, D, K, O ptx.Reg, slot int, body func(t, o ptx.Reg)) {
	dwBandLoop(k, K, func(t ptx.Reg) {
		v, p, skip := k.Reg(ptx.S32), k.Reg(ptx.Pred), k.Label("dw_no_reach")
		k.Op("add.s32 %s, %s, %s", v, i, P)
		td := k.Reg(ptx.S32)
		k.Op("mul.lo.s32 %s, %s, %s", td, t, D)
		k.Op("sub.s32 %s, %s, %s", v, v, td)
		k.Op("setp.lt.s32 %s, %s, 0", p, v)
		k.Op("@%s bra %s", p, skip)
		o, r := divide32(k, v, S, k.LoadField32("pg", pgMagic+8*slot), k.LoadField32("pg", pgMagic+8*slot+4))
		k.Op("setp.ne.u32 %s, %s, 0", p, r)
		k.Op("@%s bra %s", p, skip)
		k.Op("setp.ge.u32 %s, %s, %s", p, o, O)
		k.Op("@%s bra %s", p, skip)
		body(t, o)
		k.Place(skip)
	})
}

// dwReach divides i + P by the stride S (u32; its constants in pg's slot
// slot): output position q's taps reach i from tap r on.
func dwReach(k *ptx.Kernel, i, P, S ptx.Reg, slot int) (q, r ptx.Reg) {
	v := k.Reg(ptx.U32)
	k.Op("add.u32 %s, %s, %s", v, i, P)
	return divide32(k, v, S, k.LoadField32("pg", pgMagic+8*slot), k.LoadField32("pg", pgMagic+8*slot+4))
}

// dwStrideLoop runs body for taps t (u32) from its value up by S while
// below K, the output position o (u32) going down by one with each:
// body runs only where o is inside [0, O) (a position below 0 wraps
// past O).
func dwStrideLoop(k *ptx.Kernel, t, K, S, o, O ptx.Reg, body func()) {
	p := k.Reg(ptx.Pred)
	top, next, done := k.Label("dw_reach"), k.Label("dw_reach_next"), k.Label("dw_reach_done")
	k.Place(top)
	k.Op("setp.ge.u32 %s, %s, %s", p, t, K)
	k.Op("@%s bra %s", p, done)
	k.Op("setp.ge.u32 %s, %s, %s", p, o, O)
	k.Op("@%s bra %s", p, next)
	body()
	k.Place(next)
	k.Op("add.u32 %s, %s, %s", t, t, S)
	k.Op("sub.u32 %s, %s, 1", o, o)
	k.Op("bra.uni %s", top)
	k.Place(done)
}
