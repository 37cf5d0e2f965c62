package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// Bands of an operand's rows: the frame of the NCHW kernels in which each
// element of a pooling's or a convolution's operand sums over the windows
// over it (pool2d_select_scatter_nchwband, dw_input_nchwrows). A block
// takes a band of an operand plane's rows at a time; the output rows of
// the windows over the band (contiguous in their plane) are staged in
// shared memory, read in order, and the band's elements are then
// computed from there and written in order. Where the windows of the
// output-row bands (pool_band.go) overlap, two bands would write the
// same operand element; here each element belongs to one band.
//
// The parameters after the kernel's own: pg (PoolGeometry: the operand
// H x W, the output OH x OW, the window, its strides and low padding),
// chunks (the bands in all), cpp (the bands a plane, a divisor: value,
// magic, shift) and per (the operand rows a band).

// RowBandRows is the operand rows a band of p holds where each output row
// of the windows over them stages rowBytes bytes in shared memory
// (BandBytes at most): per rows lie under at most (per + EH - 2) /
// SH + 1 windows' rows, EH the window's extent. It is 0 where one row's
// windows do not fit.
func RowBandRows(p PoolDims, rowBytes int) int {
	if rowBytes <= 0 || p.SH <= 0 {
		return 0
	}
	fit := BandBytes / rowBytes
	eh, _ := p.Extent()
	return max(min(fit*p.SH-eh+1, p.H), 0)
}

// rowBand is a row-band kernel's frame: in each band's body, where the
// band stands.
type rowBand struct {
	*band // the block's threads and their aligned turns; spec.tiled
	// The band's plane, first operand row and rows, the first output row
	// of the windows over it and their rows (u32); its first operand
	// column and columns, the first output column of the windows over
	// them and their columns (u32: 0, W, 0 and OW untiled); the band's
	// first element's index in the operand (u64); the staged outputs of
	// a plane (u32).
	plane, ih0, rows, olo, outRows ptx.Reg
	c0, width, owlo, outCols       ptx.Reg
	ibase                          ptx.Reg
	span                           ptx.Reg
}

// newRowBand declares the frame's parameters after the kernel's tensors
// and runs body for each of the block's bands; the block synchronises
// after each. Tiled bands split the rows into column tiles: then come the
// parameters cols, the operand columns a tile, and tpr, the tiles across
// a row (a divisor).
func newRowBand(k *ptx.Kernel, tiled bool, body func(rb *rowBand)) {
	k.ParamBytes("pg", PoolGeomLen)
	chunks := k.Param("chunks", ptx.U64)
	cpp := paramDivisor(k, "cpp")
	per := k.Param("per", ptx.U64)
	var tileCols ptx.Reg
	var tpr divisor
	if tiled {
		tileCols, tpr = k.Param("cols", ptx.U64), paramDivisor(k, "tpr")
	}
	H, W, OW := poolField(k, 1), poolField(k, 2), poolField(k, pgOW)
	rb := &rowBand{band: &band{k: k, spec: bandSpec{tiled: tiled}, W: W, OW: OW}}
	var first, step ptx.Reg
	rb.tid, rb.ntid, first, step = blockThreads(k)
	k.Loop(first, chunks, step, func(ch ptx.Reg) {
		plane64, band64 := divmod(k, ch, cpp)
		var tile64 ptx.Reg
		if tiled {
			band64, tile64 = divmod(k, band64, tpr)
		}
		rb.plane = k.Reg(ptx.U32)
		last, per32, band32 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", rb.plane, plane64)
		k.Op("cvt.u32.u64 %s, %s", per32, per)
		k.Op("cvt.u32.u64 %s, %s", band32, band64)
		rb.ih0, rb.rows = chunkOf(k, ptx.U32, band32, per32, H)
		k.Op("add.u32 %s, %s, %s", last, rb.ih0, rb.rows)
		k.Op("sub.u32 %s, %s, 1", last, last)
		rb.olo, rb.outRows = rb.cover(rb.ih0, last, pgEH, 7, 9, pgOH, 5) // the windows' extent over the rows
		if tiled {
			t32, c32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", t32, tile64)
			k.Op("cvt.u32.u64 %s, %s", c32, tileCols)
			rb.c0, rb.width = chunkOf(k, ptx.U32, t32, c32, W)
			k.Op("add.u32 %s, %s, %s", last, rb.c0, rb.width)
			k.Op("sub.u32 %s, %s, 1", last, last)
			rb.owlo, rb.outCols = rb.cover(rb.c0, last, pgEW, 8, 10, pgOW, 6)
		} else { // c0 and owlo are 0, and not read
			rb.width, rb.outCols = W, OW
		}
		rb.span = k.Reg(ptx.U32)
		k.Op("mul.lo.u32 %s, %s, %s", rb.span, rb.outRows, rb.outCols)
		rb.ibase = k.Reg(ptx.U64)
		i32 := k.Reg(ptx.U32)
		k.Op("mad.lo.u32 %s, %s, %s, %s", i32, rb.plane, H, rb.ih0)
		k.Op("mul.wide.u32 %s, %s, %s", rb.ibase, i32, W)
		if tiled {
			c64 := k.Reg(ptx.U64)
			k.Op("cvt.u64.u32 %s, %s", c64, rb.c0)
			k.Op("add.s64 %s, %s, %s", rb.ibase, rb.ibase, c64)
		}
		body(rb)
		k.Op("bar.sync 0") // the band is read before the next is staged
	})
}

// cover returns the first (u32) and the number (u32) of the window
// positions along one dimension whose windows hold a position in [from,
// last] (u32), poolCover's fields and slot describing the dimension.
func (rb *rowBand) cover(from, last ptx.Reg, fk, fs, fp, fo, slot int) (lo, n ptx.Reg) {
	k := rb.k
	lo64, _ := poolCover(k, from, fk, fs, fp, fo, slot)
	_, end64 := poolCover(k, last, fk, fs, fp, fo, slot)
	lo, n = k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", lo, lo64)
	k.Op("cvt.u32.u64 %s, %s", n, end64)
	k.Op("sub.u32 %s, %s, %s", n, n, lo)
	return lo, n
}

// stage copies the staged windows' values of plane (u32) of g (planes of
// OH x OW elements of t) to sh, in order (outRows runs of outCols); the
// caller synchronises the block before reading them.
func (rb *rowBand) stage(t DType, g, sh, plane ptx.Reg) {
	k := rb.k
	OH := poolField(k, pgOH)
	base, r32 := k.Reg(ptx.U64), k.Reg(ptx.U32)
	k.Op("mad.lo.u32 %s, %s, %s, %s", r32, plane, OH, rb.olo)
	k.Op("mul.wide.u32 %s, %s, %s", base, r32, rb.OW)
	if rb.spec.tiled {
		c64 := k.Reg(ptx.U64)
		k.Op("cvt.u64.u32 %s, %s", c64, rb.owlo)
		k.Op("add.s64 %s, %s, %s", base, base, c64)
	}
	rb.runs(rb.outRows, base, rb.OW, rb.outCols, t.Size(), func(e, i ptx.Reg) {
		v := k.Reg(t.reg())
		k.Op("ld.global.%s %s, [%s]", t.mem(), v, k.Addr(g, i, t.Size()))
		k.Op("st.shared.%s [%s], %s", t.mem(), k.Addr(sh, e, t.Size()), v)
	})
}

// elements runs body for each of the band's elements (d's, written in
// order by aligned turns): its row and its column (u32). body returns
// the value to store at out.
func (rb *rowBand) elements(d DType, out ptx.Reg, body func(ih, iw ptx.Reg) ptx.Reg) {
	k := rb.k
	rb.runsAt(rb.rows, rb.ibase, rb.W, rb.width, d.Size(), func(e, i, r, c ptx.Reg) {
		var iw ptx.Reg
		if rb.spec.tiled {
			iw = k.Reg(ptx.U32)
			k.Op("add.u32 %s, %s, %s", iw, rb.c0, c)
		} else {
			e32 := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", e32, e)
			r, iw = poolDiv(k, e32, 2, 3) // by W
		}
		ih := k.Reg(ptx.U32)
		k.Op("add.u32 %s, %s, %s", ih, rb.ih0, r)
		store(k, d, k.Addr(out, i, d.Size()), body(ih, iw))
	})
}

// staged is the place of window (oh, ow) (u32) in the staged rows (u64).
func (rb *rowBand) staged(oh, ow ptx.Reg) ptx.Reg {
	k := rb.k
	w32, col, w64 := k.Reg(ptx.U32), ow, k.Reg(ptx.U64)
	if rb.spec.tiled {
		col = k.Reg(ptx.U32)
		k.Op("sub.u32 %s, %s, %s", col, ow, rb.owlo)
	}
	k.Op("sub.u32 %s, %s, %s", w32, oh, rb.olo)
	k.Op("mad.lo.u32 %s, %s, %s, %s", w32, w32, rb.outCols, col)
	k.Op("cvt.u64.u32 %s, %s", w64, w32)
	return w64
}
