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

// band is a band kernel's frame: its parameters, and, in each band's
// body, where the band stands.
type band struct {
	k         *ptx.Kernel
	d         DType
	x         ptx.Reg // the input
	sh        ptx.Reg // the staged input rows
	tid, ntid ptx.Reg // u64
	W, OW     ptx.Reg // u32 fields of pg
	// In a band: its plane, first output row and rows (u32), its first
	// staged input row (s32), its staged elements (u64) and their first
	// index in x (u64), and its first output's index (u64); its index
	// among its plane's bands, and their number (u32).
	plane, oh0, rows, lo ptx.Reg
	count, base, obase   ptx.Reg
	index, bands         ptx.Reg
}

// newBand declares the parameters after the kernel's tensors and runs
// body for each of the block's bands (a grid's stride apart), once the
// band's input rows are staged.
func newBand(k *ptx.Kernel, d DType, x ptx.Reg, body func(b *band)) {
	newBandOf(k, d, x, nil, BandBytes, body)
}

// newBandOf is newBand whose output plane p reads input plane p /
// planes (a divisor parameter, its constants set; nil for 1): a depthwise
// convolution's M output channels a channel; its input rows staged in
// bytes of shared memory.
func newBandOf(k *ptx.Kernel, d DType, x ptx.Reg, planes *divisor, bytes int, body func(b *band)) {
	k.ParamBytes("pg", PoolGeomLen)
	chunks := k.Param("chunks", ptx.U64)
	cpp := paramDivisor(k, "cpp")
	per := k.Param("per", ptx.U64)
	b := &band{k: k, d: d, x: x, sh: k.Shared("band", bytes, 16), W: poolField(k, 2), OW: poolField(k, 4)}
	H, OH := poolField(k, 1), poolField(k, 3)
	SH, PH, KH := poolField(k, 7), poolField(k, 9), poolField(k, pgEH) // the window's extent
	var first, step ptx.Reg
	b.tid, b.ntid, first, step = blockThreads(k)
	k.Loop(first, chunks, step, func(ch ptx.Reg) {
		plane64, band64 := divmod(k, ch, cpp)
		idx, per32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
		b.plane = k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", b.plane, plane64)
		k.Op("cvt.u32.u64 %s, %s", idx, band64)
		k.Op("cvt.u32.u64 %s, %s", per32, per)
		b.index, b.bands = idx, k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", b.bands, cpp.v)
		// The band's output rows [oh0, oh0+rows) and the input rows
		// [lo, hi) their windows read.
		b.oh0, b.rows = k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("mul.lo.u32 %s, %s, %s", b.oh0, idx, per32)
		k.Op("sub.u32 %s, %s, %s", b.rows, OH, b.oh0)
		k.Op("min.u32 %s, %s, %s", b.rows, b.rows, per32)
		lo, hi := k.Reg(ptx.S32), k.Reg(ptx.S32)
		k.Op("mul.lo.s32 %s, %s, %s", lo, b.oh0, SH)
		k.Op("sub.s32 %s, %s, %s", lo, lo, PH)
		k.Op("add.s32 %s, %s, %s", hi, b.oh0, b.rows)
		k.Op("sub.s32 %s, %s, 1", hi, hi)
		k.Op("mad.lo.s32 %s, %s, %s, %s", hi, hi, SH, KH)
		k.Op("sub.s32 %s, %s, %s", hi, hi, PH)
		k.Op("max.s32 %s, %s, 0", lo, lo)
		k.Op("min.s32 %s, %s, %s", hi, hi, H)
		k.Op("max.s32 %s, %s, %s", hi, hi, lo)
		b.lo = lo
		span, row0 := k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("sub.s32 %s, %s, %s", span, hi, lo)
		k.Op("mul.lo.u32 %s, %s, %s", span, span, b.W)
		b.count, b.base = k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("cvt.u64.u32 %s, %s", b.count, span)
		in := b.plane
		if planes != nil {
			v32 := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", v32, planes.v)
			in, _ = divide32(k, b.plane, v32, planes.magic, planes.shift)
		}
		k.Op("mad.lo.u32 %s, %s, %s, %s", row0, in, H, lo)
		k.Op("mul.wide.u32 %s, %s, %s", b.base, row0, b.W)
		pr := k.Reg(ptx.U32)
		k.Op("mad.lo.u32 %s, %s, %s, %s", pr, b.plane, OH, b.oh0)
		b.obase = k.Reg(ptx.U64)
		k.Op("mul.wide.u32 %s, %s, %s", b.obase, pr, b.OW)
		b.each(func(e ptx.Reg) { // stage rows [lo, hi) of the plane, in order
			i, v := k.Reg(ptx.U64), k.Reg(d.reg())
			k.Op("add.s64 %s, %s, %s", i, b.base, e)
			k.Op("ld.global.%s %s, [%s]", d.mem(), v, k.Addr(x, i, d.Size()))
			k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(b.sh, e, d.Size()), v)
		})
		k.Op("bar.sync 0")
		body(b)
		k.Op("bar.sync 0") // the band is read before the next is staged
	})
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
// turn (aligned on the band's first input element).
func (b *band) each(body func(e ptx.Reg)) { b.aligned(b.base, b.count, b.d.Size(), body) }

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

// windows runs body for each of the band's windows (j, the output's index
// in the band) with the window's first tap (ih0, iw0, s32) and the taps'
// index in the staged rows (at), a warp's windows aligned for outputs of
// the input's dtype.
func (b *band) windows(body func(j, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg)) {
	b.windowsOf(b.d.Size(), body)
}

// windowsOf is windows for outputs of size bytes.
func (b *band) windowsOf(size int, body func(j, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg)) {
	k := b.k
	outs, o32 := k.Reg(ptx.U64), k.Reg(ptx.U32)
	k.Op("mul.lo.u32 %s, %s, %s", o32, b.rows, b.OW)
	k.Op("cvt.u64.u32 %s, %s", outs, o32)
	at := func(ih, iw ptx.Reg) ptx.Reg {
		i, i64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("sub.s32 %s, %s, %s", i, ih, b.lo)
		k.Op("mad.lo.u32 %s, %s, %s, %s", i, i, b.W, iw)
		k.Op("cvt.u64.u32 %s, %s", i64, i)
		return i64
	}
	b.aligned(b.obase, outs, size, func(j ptx.Reg) {
		j32 := k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", j32, j)
		r, ow := poolDiv(k, j32, 4, 1) // by OW
		ih0, iw0 := k.Reg(ptx.S32), k.Reg(ptx.S32)
		k.Op("add.u32 %s, %s, %s", ih0, b.oh0, r)
		k.Op("mul.lo.s32 %s, %s, %s", ih0, ih0, poolField(k, 7))
		k.Op("sub.s32 %s, %s, %s", ih0, ih0, poolField(k, 9))
		k.Op("mul.lo.s32 %s, %s, %s", iw0, ow, poolField(k, 8))
		k.Op("sub.s32 %s, %s, %s", iw0, iw0, poolField(k, 10))
		body(j, ih0, iw0, at)
	})
}

// staged loads the staged element at idx in the dtype's compute type.
func (b *band) staged(sh, idx ptx.Reg) ptx.Reg {
	k, d := b.k, b.d
	raw := k.Reg(d.reg())
	k.Op("ld.shared.%s %s, [%s]", d.mem(), raw, k.Addr(sh, idx, d.Size()))
	return toCompute(k, d, raw)
}

// poolBandReduceKernel writes pool2d_<kind>_nchwband_<d>.
func poolBandReduceKernel(kind string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d", kind, "nchwband", string(d)))
	o, x, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("init")
	op := map[string]string{"sum": "add", "max": "max", "min": "min"}[kind]
	c := d.Compute() // a half type's taps in float32, the result rounded once
	init := toCompute(k, d, load(k, d, ip))
	newBand(k, d, x, func(b *band) {
		b.windows(func(j, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
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
			oi := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", oi, b.obase, j)
			store(k, d, k.Addr(o, oi, d.Size()), fromCompute(k, d, acc))
		})
	})
	return k
}

// poolBandSelectPutKernel writes pool2d_select_put_<ge|le>_nchwband_<d>.
func poolBandSelectPutKernel(d DType, ge bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_select_put", selName(ge), "nchwband", string(d)))
	o, x, src, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("src"), k.ParamPtr("init")
	init := load(k, d, ip)
	newBand(k, d, x, func(b *band) {
		put := k.Shared("grads", BandBytes, 16)
		b.each(func(e ptx.Reg) { k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(put, e, d.Size()), init) })
		k.Op("bar.sync 0")
		b.windows(func(j, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) {
			s := newSelection(k, d.Compute(), ge) // a half type's taps compared in float32
			eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
				next := k.Label("band_tap")
				k.Op("@%s bra %s", pad, next)
				s.consider(b.staged(b.sh, idx), idx)
				k.Place(next)
			})
			skip := k.Label("none_chosen")
			k.Op("@!%s bra %s", s.found, skip)
			oi := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", oi, b.obase, j)
			sum := binaryOp(k, "add", d.Compute(), toCompute(k, d, init), toCompute(k, d, load(k, d, k.Addr(src, oi, d.Size()))))
			k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(put, s.chosen, d.Size()), fromCompute(k, d, sum))
			k.Place(skip)
		})
		k.Op("bar.sync 0")
		b.each(func(e ptx.Reg) { // the band's rows of the result, in order
			i, v := k.Reg(ptx.U64), k.Reg(d.reg())
			k.Op("add.s64 %s, %s, %s", i, b.base, e)
			k.Op("ld.shared.%s %s, [%s]", d.mem(), v, k.Addr(put, e, d.Size()))
			store(k, d, k.Addr(o, i, d.Size()), v)
		})
	})
	return k
}
