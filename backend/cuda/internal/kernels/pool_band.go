package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// The NCHW pooling kernels for windows neither the 2x2 kernels nor the
// pair kernels take (3x3 windows at a stride of 2, say): a block takes a
// band of an image plane's output rows at a time, stages the input rows
// the band's windows read (contiguous in the plane) in shared memory,
// read in order, and computes the band's windows from there; a tap on
// padding counts as *init, as in the other kernels:
//
//   - pool2d_<sum|max|min>_nchwband_<dtype> (out, x, init, pg, chunks,
//     cpp, per): per output rows a band, cpp bands a plane (the divisor:
//     value, magic, shift), chunks bands in all; pg is PoolGeometry. The
//     outputs are written in order.
//   - pool2d_select_put_<ge|le>_nchwband_<dtype> (out, x, src, init, pg,
//     chunks, cpp, per): pool2d_select_put's, for windows that do not
//     overlap: the band's rows of the result are staged too (init, and
//     each window's put where it selects) and written in order. Rows no
//     band reads (gaps between windows) are the caller's to fill.
//
// Their _nchwtile_ twins take rows too wide for a band (tiles.go): bands
// split into tiles of cols output columns (two more parameters: cols,
// and tpr, the tiles across a row, a divisor), each tile's input rows
// staged and its outputs written a row at a time.

// BandBytes is the shared memory a band kernel stages each of its arrays
// in (the input rows, and a select_put's gradient, a scatter's
// selections and values): 16 KiB, so that a 3x3 window's float32 rows
// fit up to some 1360 columns; two arrays and a filter's taps stay well
// under a block's 48 KiB of static shared memory.
const BandBytes = 16384

// FilterBandBytes is dw_filter_nchwband's (its input rows, and dy's): its
// per-thread float64 sums take another 18 KiB.
const FilterBandBytes = 8192

// PoolBand reports whether the band kernels take p of dtype d: NCHW
// windows, the rows one window reads fitting a band's shared memory.
func PoolBand(p PoolDims, d DType) bool { return poolBandIn(p, d, BandBytes) }

func poolBandIn(p PoolDims, d DType, bytes int) bool {
	eh, _ := p.Extent()
	return slices.Contains(quadTypes, d) && eh*p.W*d.Size() <= bytes && p.OH > 0 && p.OW > 0
}

// BandRows is the output rows a band of p holds for dtype d: as many as
// the input rows their windows read fit in shared memory.
func BandRows(p PoolDims, d DType) int { return bandRowsIn(p, d, BandBytes) }

func bandRowsIn(p PoolDims, d DType, bytes int) int {
	rows := bytes / (p.W * d.Size()) // input rows that fit
	eh, _ := p.Extent()
	return min((rows-eh)/p.SH+1, p.OH)
}

// bandSpec is what a band kernel's frame is made of: the divisor of its
// output planes by the input plane they read (nil for 1: a depthwise
// convolution's M output channels read a channel), the shared memory its
// input rows stage in, and whether its bands split the rows into column
// tiles (the "nchwtile" kernels, for rows too wide for a band's shared
// memory: then come the parameters cols, the output columns a tile, and
// tpr, the tiles across a row, a divisor).
type bandSpec struct {
	planes *divisor
	bytes  int
	tiled  bool
}

// band is a band kernel's frame: its parameters, and, in each band's
// body, where the band stands.
type band struct {
	k         *ptx.Kernel
	d         DType
	spec      bandSpec
	x         ptx.Reg // the input
	sh        ptx.Reg // the staged input rows
	tid, ntid ptx.Reg // u64
	W, OW     ptx.Reg // u32 fields of pg
	// In a band: its plane, first output row and rows (u32), its first
	// staged input row (s32) and staged rows (u32), its staged elements
	// (u64) and their first index in x (u64), and its first output's
	// index (u64); its index among its plane's bands, and their number
	// (u32). Its first output column and columns, its first staged input
	// column and the staged rows' pitch (u32): 0, OW, 0 and W untiled.
	plane, oh0, rows, lo, inRows ptx.Reg
	count, base, obase           ptx.Reg
	index, bands                 ptx.Reg
	ow0, cols, clo, pitch        ptx.Reg
}

// newBand declares the parameters after the kernel's tensors and runs
// body for each of the block's bands (a grid's stride apart), once the
// band's input rows are staged (none where x is the zero Reg: the band's
// geometry alone); tiled bands split the rows (bandSpec).
func newBand(k *ptx.Kernel, d DType, x ptx.Reg, tiled bool, body func(b *band)) {
	newBandOf(k, d, x, bandSpec{bytes: BandBytes, tiled: tiled}, body)
}

// newBandOf is newBand of the frame s.
func newBandOf(k *ptx.Kernel, d DType, x ptx.Reg, s bandSpec, body func(b *band)) {
	k.ParamBytes("pg", PoolGeomLen)
	chunks := k.Param("chunks", ptx.U64)
	cpp := paramDivisor(k, "cpp")
	per := k.Param("per", ptx.U64)
	var tileCols ptx.Reg
	var tpr divisor
	if s.tiled {
		tileCols, tpr = k.Param("cols", ptx.U64), paramDivisor(k, "tpr")
	}
	b := &band{k: k, d: d, spec: s, x: x, sh: k.Shared("band", s.bytes, 16), W: poolField(k, 2), OW: poolField(k, 4)}
	H, OH := poolField(k, 1), poolField(k, 3)
	SH, PH, KH := poolField(k, 7), poolField(k, 9), poolField(k, pgEH) // the window's extent
	var first, step ptx.Reg
	b.tid, b.ntid, first, step = blockThreads(k)
	k.Loop(first, chunks, step, func(ch ptx.Reg) {
		plane64, band64 := divmod(k, ch, cpp)
		rowBand64 := band64
		var tile64 ptx.Reg
		if s.tiled {
			rowBand64, tile64 = divmod(k, band64, tpr)
		}
		idx, per32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
		b.plane = k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", b.plane, plane64)
		k.Op("cvt.u32.u64 %s, %s", idx, rowBand64)
		k.Op("cvt.u32.u64 %s, %s", per32, per)
		b.index, b.bands = k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", b.index, band64)
		k.Op("cvt.u32.u64 %s, %s", b.bands, cpp.v)
		// The band's output rows [oh0, oh0+rows) and the input rows
		// [lo, hi) their windows read.
		b.oh0, b.rows = chunkOf(k, ptx.U32, idx, per32, OH)
		lo, hi := windowSpan(k, b.oh0, b.rows, SH, PH, KH, H)
		b.lo, b.inRows = lo, k.Reg(ptx.U32)
		k.Op("sub.s32 %s, %s, %s", b.inRows, hi, lo)
		b.columns(tile64, tileCols)
		span, row0 := k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("mul.lo.u32 %s, %s, %s", span, b.inRows, b.pitch)
		b.count, b.base = k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("cvt.u64.u32 %s, %s", b.count, span)
		in := b.plane
		if s.planes != nil {
			v32 := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", v32, s.planes.v)
			in, _ = divide32(k, b.plane, v32, s.planes.magic, s.planes.shift)
		}
		k.Op("mad.lo.u32 %s, %s, %s, %s", row0, in, H, lo)
		k.Op("mul.wide.u32 %s, %s, %s", b.base, row0, b.W)
		pr := k.Reg(ptx.U32)
		k.Op("mad.lo.u32 %s, %s, %s, %s", pr, b.plane, OH, b.oh0)
		b.obase = k.Reg(ptx.U64)
		k.Op("mul.wide.u32 %s, %s, %s", b.obase, pr, b.OW)
		if s.tiled {
			for _, r := range []struct{ at, by ptx.Reg }{{b.base, b.clo}, {b.obase, b.ow0}} {
				c := k.Reg(ptx.U64)
				k.Op("cvt.u64.u32 %s, %s", c, r.by)
				k.Op("add.s64 %s, %s, %s", r.at, r.at, c)
			}
		}
		if x != (ptx.Reg{}) {
			b.each(func(e, i ptx.Reg) { // stage the band's input, in order
				v := k.Reg(d.reg())
				k.Op("ld.global.%s %s, [%s]", d.mem(), v, k.Addr(x, i, d.Size()))
				k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(b.sh, e, d.Size()), v)
			})
			k.Op("bar.sync 0")
		}
		body(b)
		k.Op("bar.sync 0") // the band is read before the next is staged
	})
}

// columns sets the band's output columns [ow0, ow0+cols) and the input
// columns [clo, clo+pitch) their windows read: the tile's (tile64 of
// tileCols columns, u64) where the frame is tiled, else whole rows.
func (b *band) columns(tile64, tileCols ptx.Reg) {
	k := b.k
	if !b.spec.tiled { // ow0 and clo are 0, and not read
		b.cols, b.pitch = b.OW, b.W
		return
	}
	b.ow0, b.cols, b.clo, b.pitch = k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	t32, c32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", t32, tile64)
	k.Op("cvt.u32.u64 %s, %s", c32, tileCols)
	b.ow0, b.cols = chunkOf(k, ptx.U32, t32, c32, b.OW)
	lo, hi := windowSpan(k, b.ow0, b.cols, poolField(k, 8), poolField(k, 10), poolField(k, pgEW), b.W)
	b.clo, b.pitch = lo, k.Reg(ptx.U32)
	k.Op("sub.s32 %s, %s, %s", b.pitch, hi, lo)
}

// windowSpan returns the input positions [lo, hi) (s32) that the windows
// at positions [first, first+n) read along a dimension (u32): stride S,
// low padding P and extent E, clamped to [0, size).
func windowSpan(k *ptx.Kernel, first, n, S, P, E, size ptx.Reg) (lo, hi ptx.Reg) {
	lo, hi = k.Reg(ptx.S32), k.Reg(ptx.S32)
	k.Op("mul.lo.s32 %s, %s, %s", lo, first, S)
	k.Op("sub.s32 %s, %s, %s", lo, lo, P)
	k.Op("add.s32 %s, %s, %s", hi, first, n)
	k.Op("sub.s32 %s, %s, 1", hi, hi)
	k.Op("mad.lo.s32 %s, %s, %s, %s", hi, hi, S, E)
	k.Op("sub.s32 %s, %s, %s", hi, hi, P)
	k.Op("max.s32 %s, %s, 0", lo, lo)
	k.Op("min.s32 %s, %s, %s", hi, hi, size)
	k.Op("max.s32 %s, %s, %s", hi, hi, lo)
	return lo, hi
}

// blockThreads returns the thread's index in its block, the block's
// threads, the block's index and the grid's blocks (u64): a block-stride
// loop over chunks starts at first and steps by step.
func blockThreads(k *ptx.Kernel) (tid, ntid, first, step ptx.Reg) {
	tid, ntid, first, step = k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	for _, p := range []struct {
		r   ptx.Reg
		sym string
	}{{tid, "%tid.x"}, {ntid, "%ntid.x"}, {first, "%ctaid.x"}, {step, "%nctaid.x"}} {
		r32 := k.Reg(ptx.U32)
		k.Op("mov.u32 %s, %s", r32, p.sym)
		k.Op("cvt.u64.u32 %s, %s", p.r, r32)
	}
	return tid, ntid, first, step
}

// each runs body for the band's staged elements, the block's threads in
// turn (aligned on each run's first element), with the element's index
// among the staged (e) and in x (i), both u64.
func (b *band) each(body func(e, i ptx.Reg)) {
	if !b.spec.tiled {
		b.aligned(b.base, b.count, b.d.Size(), func(e ptx.Reg) {
			i := b.k.Reg(ptx.U64)
			b.k.Op("add.s64 %s, %s, %s", i, b.base, e)
			body(e, i)
		})
		return
	}
	b.runs(b.inRows, b.base, b.W, b.pitch, b.d.Size(), body)
}

// runs runs body for the elements of n runs (u32) of width elements
// (u32, of size bytes), run r's first at first + r·pitch (u64; pitch
// u32) and packed in order from 0: body gets an element's place in the
// packing (e) and its index (i), both u64. An untiled frame's runs are
// its rows, back to back: one run of n·width.
// Each warp reconverges after each run (bar.warp.sync: the lanes that
// left the run a turn early wait), so that its accesses of the next run
// are one request each, as the emulator's profile then counts them too.
func (b *band) runs(n, first, pitch, width ptx.Reg, size int, body func(e, i ptx.Reg)) {
	b.runsAt(n, first, pitch, width, size, func(e, i, _, _ ptx.Reg) { body(e, i) })
}

// runsAt is runs whose body also gets the run (r) and the element's
// place in it (c), both u32: in an untiled frame r and c are not set
// (the caller divides e where it needs them).
func (b *band) runsAt(n, first, pitch, width ptx.Reg, size int, body func(e, i, r, c ptx.Reg)) {
	k := b.k
	if !b.spec.tiled {
		all, all64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mul.lo.u32 %s, %s, %s", all, n, width)
		k.Op("cvt.u64.u32 %s, %s", all64, all)
		b.aligned(first, all64, size, func(e ptx.Reg) {
			i := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", i, first, e)
			body(e, i, ptx.Reg{}, ptx.Reg{})
		})
		return
	}
	w64 := k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", w64, width)
	dwBandLoop(k, n, func(r ptx.Reg) {
		start, packed := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("mul.wide.u32 %s, %s, %s", start, r, pitch)
		k.Op("add.s64 %s, %s, %s", start, start, first)
		k.Op("mul.wide.u32 %s, %s, %s", packed, r, width)
		b.aligned(start, w64, size, func(c ptx.Reg) {
			e, i, c32 := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U32)
			k.Op("add.s64 %s, %s, %s", e, packed, c)
			k.Op("add.s64 %s, %s, %s", i, start, c)
			k.Op("cvt.u32.u64 %s, %s", c32, c)
			body(e, i, r, c32)
		})
		k.Op("bar.warp.sync 0xffffffff") // the warp reconverges before the next run
	})
}

// aligned runs body for e in [0, n), the block's threads in turn, the
// turns shifted so that the elements first+e (of size bytes) a warp takes
// start on a 32-byte sector: a band's rows start anywhere in a sector
// (planes of 14x14 floats do), and unshifted, every warp's 32 neighbours
// would straddle one sector more than they fill.
func (b *band) aligned(first, n ptx.Reg, size int, body func(e ptx.Reg)) {
	k := b.k
	off, end := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("and.b64 %s, %s, %d", off, first, max(32/size, 1)-1)
	k.Op("add.s64 %s, %s, %s", end, n, off)
	k.Loop(b.tid, end, b.ntid, func(s ptx.Reg) {
		p, skip := k.Reg(ptx.Pred), k.Label("before_band")
		k.Op("setp.lt.u64 %s, %s, %s", p, s, off)
		k.Op("@%s bra %s", p, skip)
		e := k.Reg(ptx.U64)
		k.Op("sub.s64 %s, %s, %s", e, s, off)
		body(e)
		k.Place(skip)
	})
}

// outputs runs body for the band's outputs (of size bytes), the block's
// threads in turn, aligned on each run of them: j is an output's place
// among the band's and o its index (u64); pos gives its row in the band
// and its column (u32), dividing j where the frame is untiled.
func (b *band) outputs(size int, body func(j, o ptx.Reg, pos func() (r, ow ptx.Reg))) {
	k := b.k
	b.runsAt(b.rows, b.obase, b.OW, b.cols, size, func(j, o, r, c ptx.Reg) {
		body(j, o, func() (ptx.Reg, ptx.Reg) {
			if !b.spec.tiled {
				j32 := k.Reg(ptx.U32)
				k.Op("cvt.u32.u64 %s, %s", j32, j)
				return poolDiv(k, j32, 4, 1) // by OW
			}
			ow := k.Reg(ptx.U32)
			k.Op("add.u32 %s, %s, %s", ow, b.ow0, c)
			return r, ow
		})
	})
}

// windows runs body for each of the band's windows (j, its place among
// the band's outputs, and o, the output's index) with the window's first
// tap (ih0, iw0, s32) and the taps' index in the staged rows (at), a
// warp's windows aligned for outputs of the input's dtype.
func (b *band) windows(body func(j, o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg)) {
	b.windowsOf(b.d.Size(), body)
}

// windowsOf is windows for outputs of size bytes.
func (b *band) windowsOf(size int, body func(j, o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg)) {
	k := b.k
	at := func(ih, iw ptx.Reg) ptx.Reg {
		i, i64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
		col := iw
		if b.spec.tiled {
			col = k.Reg(ptx.U32)
			k.Op("sub.s32 %s, %s, %s", col, iw, b.clo)
		}
		k.Op("sub.s32 %s, %s, %s", i, ih, b.lo)
		k.Op("mad.lo.u32 %s, %s, %s, %s", i, i, b.pitch, col)
		k.Op("cvt.u64.u32 %s, %s", i64, i)
		return i64
	}
	b.outputs(size, func(j, o ptx.Reg, pos func() (r, ow ptx.Reg)) {
		r, ow := pos()
		ih0, iw0 := k.Reg(ptx.S32), k.Reg(ptx.S32)
		k.Op("add.u32 %s, %s, %s", ih0, b.oh0, r)
		k.Op("mul.lo.s32 %s, %s, %s", ih0, ih0, poolField(k, 7))
		k.Op("sub.s32 %s, %s, %s", ih0, ih0, poolField(k, 9))
		k.Op("mul.lo.s32 %s, %s, %s", iw0, ow, poolField(k, 8))
		k.Op("sub.s32 %s, %s, %s", iw0, iw0, poolField(k, 10))
		body(j, o, ih0, iw0, at)
	})
}

// staged loads the staged element at idx in the dtype's compute type.
func (b *band) staged(sh, idx ptx.Reg) ptx.Reg {
	k, d := b.k, b.d
	raw := k.Reg(d.reg())
	k.Op("ld.shared.%s %s, [%s]", d.mem(), raw, k.Addr(sh, idx, d.Size()))
	return toCompute(k, d, raw)
}

// bandLayout names the band kernels in kernel names: "nchwband", or
// "nchwtile" where the bands are split into column tiles.
func bandLayout(tiled bool) string {
	if tiled {
		return "nchwtile"
	}
	return "nchwband"
}

// poolBandReduceKernel writes pool2d_<kind>_<nchwband|nchwtile>_<d>.
func poolBandReduceKernel(kind string, d DType, tiled bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d", kind, bandLayout(tiled), string(d)))
	out, x, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("init")
	op := map[string]string{"sum": "add", "max": "max", "min": "min"}[kind]
	c := d.Compute() // a half type's taps in float32, the result rounded once
	init := toCompute(k, d, load(k, d, ip))
	newBand(k, d, x, tiled, func(b *band) {
		b.windows(func(_, o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
			acc := k.Reg(c.reg())
			k.Op("mov.%s %s, %s", bits(c.reg()), acc, init)
			eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
				v := k.Reg(c.reg())
				k.Op("mov.%s %s, %s", bits(c.reg()), v, init)
				skip := k.Label("band_tap")
				k.Op("@%s bra %s", pad, skip)
				k.Op("mov.%s %s, %s", bits(c.reg()), v, b.staged(b.sh, idx))
				k.Place(skip)
				k.Op("mov.%s %s, %s", bits(c.reg()), acc, binaryOp(k, op, c, acc, v))
			})
			store(k, d, k.Addr(out, o, d.Size()), fromCompute(k, d, acc))
		})
	})
	return k
}

// poolBandSelectPutKernel writes pool2d_select_put_<ge|le>_<nchwband|nchwtile>_<d>.
func poolBandSelectPutKernel(d DType, ge, tiled bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_select_put", selName(ge), bandLayout(tiled), string(d)))
	out, x, src, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("src"), k.ParamPtr("init")
	init := load(k, d, ip)
	newBand(k, d, x, tiled, func(b *band) {
		put := k.Shared("grads", BandBytes, 16)
		b.each(func(e, _ ptx.Reg) { k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(put, e, d.Size()), init) })
		k.Op("bar.sync 0")
		b.windows(func(_, o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
			s := newSelection(k, d.Compute(), ge) // a half type's taps compared in float32
			eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
				next := k.Label("band_tap")
				k.Op("@%s bra %s", pad, next)
				s.consider(b.staged(b.sh, idx), idx)
				k.Place(next)
			})
			skip := k.Label("none_chosen")
			k.Op("@!%s bra %s", s.found, skip)
			sum := binaryOp(k, "add", d.Compute(), toCompute(k, d, init), toCompute(k, d, load(k, d, k.Addr(src, o, d.Size()))))
			k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(put, s.chosen, d.Size()), fromCompute(k, d, sum))
			k.Place(skip)
		})
		b.writeStaged(put, out)
	})
	return k
}

// writeStaged writes the band's rows of out, staged in shared memory at
// put, in order, once every thread has staged its part.
func (b *band) writeStaged(put, out ptx.Reg) {
	k, d := b.k, b.d
	k.Op("bar.sync 0")
	b.each(func(e, i ptx.Reg) {
		v := k.Reg(d.reg())
		k.Op("ld.shared.%s %s, [%s]", d.mem(), v, k.Addr(put, e, d.Size()))
		store(k, d, k.Addr(out, i, d.Size()), v)
	})
}
