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
	*band // the block's threads and their aligned turns
	// The band's plane, first operand row, the first output row of the
	// windows over it and their rows (u32); the band's first element's
	// index in the operand and its elements (u64).
	plane, ih0, olo, outRows ptx.Reg
	ibase, elems             ptx.Reg
}

// newRowBand declares the frame's parameters after the kernel's tensors
// and runs body for each of the block's bands; the block synchronises
// after each.
func newRowBand(k *ptx.Kernel, body func(rb *rowBand)) {
	k.ParamBytes("pg", PoolGeomLen)
	chunks := k.Param("chunks", ptx.U64)
	cpp := paramDivisor(k, "cpp")
	per := k.Param("per", ptx.U64)
	H, W := poolField(k, 1), poolField(k, 2)
	rb := &rowBand{band: &band{k: k}}
	var first, step ptx.Reg
	rb.tid, rb.ntid, first, step = blockThreads(k)
	k.Loop(first, chunks, step, func(ch ptx.Reg) {
		plane64, band64 := divmod(k, ch, cpp)
		rb.plane, rb.ih0, rb.olo, rb.outRows = k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
		rows, last, per32 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", rb.plane, plane64)
		k.Op("cvt.u32.u64 %s, %s", per32, per)
		k.Op("cvt.u32.u64 %s, %s", rb.ih0, band64)
		k.Op("mul.lo.u32 %s, %s, %s", rb.ih0, rb.ih0, per32)
		k.Op("sub.u32 %s, %s, %s", rows, H, rb.ih0)
		k.Op("min.u32 %s, %s, %s", rows, rows, per32)
		k.Op("add.u32 %s, %s, %s", last, rb.ih0, rows)
		k.Op("sub.u32 %s, %s, 1", last, last)
		olo64, _ := poolCover(k, rb.ih0, pgEH, 7, 9, pgOH, 5) // the windows' extent over the rows
		_, oend64 := poolCover(k, last, pgEH, 7, 9, pgOH, 5)
		k.Op("cvt.u32.u64 %s, %s", rb.olo, olo64)
		k.Op("cvt.u32.u64 %s, %s", rb.outRows, oend64)
		k.Op("sub.u32 %s, %s, %s", rb.outRows, rb.outRows, rb.olo)
		rb.elems, rb.ibase = k.Reg(ptx.U64), k.Reg(ptx.U64)
		i32 := k.Reg(ptx.U32)
		k.Op("mul.wide.u32 %s, %s, %s", rb.elems, rows, W)
		k.Op("mad.lo.u32 %s, %s, %s, %s", i32, rb.plane, H, rb.ih0)
		k.Op("mul.wide.u32 %s, %s, %s", rb.ibase, i32, W)
		body(rb)
		k.Op("bar.sync 0") // the band is read before the next is staged
	})
}

// stage copies the staged output rows of plane (u32) of g (planes of OH
// x OW elements of t) to sh, in order; the caller synchronises the block
// before reading them.
func (rb *rowBand) stage(t DType, g, sh, plane ptx.Reg) {
	k := rb.k
	OH, OW := poolField(k, pgOH), poolField(k, pgOW)
	n, base, r32, n32 := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mul.lo.u32 %s, %s, %s", n32, rb.outRows, OW)
	k.Op("cvt.u64.u32 %s, %s", n, n32)
	k.Op("mad.lo.u32 %s, %s, %s, %s", r32, plane, OH, rb.olo)
	k.Op("mul.wide.u32 %s, %s, %s", base, r32, OW)
	rb.aligned(base, n, t.Size(), func(e ptx.Reg) {
		i, v := k.Reg(ptx.U64), k.Reg(t.reg())
		k.Op("add.s64 %s, %s, %s", i, base, e)
		k.Op("ld.global.%s %s, [%s]", t.mem(), v, k.Addr(g, i, t.Size()))
		k.Op("st.shared.%s [%s], %s", t.mem(), k.Addr(sh, e, t.Size()), v)
	})
}

// elements runs body for each of the band's elements (d's, written in
// order by aligned turns): its index in the band (u64), its row and its
// column (u32). body returns the value to store at out.
func (rb *rowBand) elements(d DType, out ptx.Reg, body func(e, ih, iw ptx.Reg) ptx.Reg) {
	k := rb.k
	rb.aligned(rb.ibase, rb.elems, d.Size(), func(e ptx.Reg) {
		e32, ih := k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", e32, e)
		r, iw := poolDiv(k, e32, 2, 3) // by W
		k.Op("add.u32 %s, %s, %s", ih, rb.ih0, r)
		v := body(e, ih, iw)
		oi := k.Reg(ptx.U64)
		k.Op("add.s64 %s, %s, %s", oi, rb.ibase, e)
		store(k, d, k.Addr(out, oi, d.Size()), v)
	})
}

// staged is the place of window (oh, ow) (u32) in the staged rows (u64).
func (rb *rowBand) staged(oh, ow ptx.Reg) ptx.Reg {
	k := rb.k
	w32, w64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
	k.Op("sub.u32 %s, %s, %s", w32, oh, rb.olo)
	k.Op("mad.lo.u32 %s, %s, %s, %s", w32, w32, poolField(k, pgOW), ow)
	k.Op("cvt.u64.u32 %s, %s", w64, w32)
	return w64
}
