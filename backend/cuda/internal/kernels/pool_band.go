package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// The NCHW pooling forward for windows neither the 2x2 kernels nor the
// pair kernels take (3x3 windows at a stride of 2, say): a block takes a band of an
// image plane's output rows at a time, stages the input rows the band's
// windows read (contiguous in the plane) in shared memory, read in order,
// and computes the band's windows from there, writing its outputs in
// order; a tap on padding counts as *init, as in the other kernels:
//
//   - pool2d_<sum|max|min>_nchwband_<dtype> (out, x, init, pg, chunks,
//     cpp, per): per output rows a band, cpp bands a plane (the divisor:
//     value, magic, shift), chunks bands in all; pg is PoolGeometry.

// PoolBand reports whether the band kernels take p of dtype d: NCHW
// windows, the rows one window reads fitting a band's shared memory.
func PoolBand(p PoolDims, d DType) bool {
	return slices.Contains(quadTypes, d) && p.KH*p.W*d.Size() <= QuadChunkBytes && p.OH > 0 && p.OW > 0
}

// BandRows is the output rows a band of p holds for dtype d: as many as
// the input rows their windows read fit in shared memory.
func BandRows(p PoolDims, d DType) int {
	rows := QuadChunkBytes / (p.W * d.Size()) // input rows that fit
	return min((rows-p.KH)/p.SH+1, p.OH)
}

// poolBandReduceKernel writes pool2d_<kind>_nchwband_<d>.
func poolBandReduceKernel(kind string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d", kind, "nchwband", string(d)))
	o, x, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("init")
	k.ParamBytes("pg", PoolGeomLen)
	chunks := k.Param("chunks", ptx.U64)
	cpp := paramDivisor(k, "cpp")
	per := k.Param("per", ptx.U64)
	sh := k.Shared("band", QuadChunkBytes, 16)
	op := map[string]string{"sum": "add", "max": "max", "min": "min"}[kind]
	c := d.Compute() // a half type's taps in float32, the result rounded once
	init := toCompute(k, d, load(k, d, ip))
	H, W, OH, OW := poolField(k, 1), poolField(k, 2), poolField(k, 3), poolField(k, 4)
	SH, PH, KH := poolField(k, 7), poolField(k, 9), poolField(k, 5)
	t32, n32, c32, g32 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%tid.x", t32)
	k.Op("mov.u32 %s, %%ntid.x", n32)
	k.Op("mov.u32 %s, %%ctaid.x", c32)
	k.Op("mov.u32 %s, %%nctaid.x", g32)
	tid, ntid, first, step := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	for _, p := range [][2]ptx.Reg{{tid, t32}, {ntid, n32}, {first, c32}, {step, g32}} {
		k.Op("cvt.u64.u32 %s, %s", p[0], p[1])
	}
	k.Loop(first, chunks, step, func(ch ptx.Reg) {
		plane64, band64 := divmod(k, ch, cpp)
		plane, band, per32 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("cvt.u32.u64 %s, %s", plane, plane64)
		k.Op("cvt.u32.u64 %s, %s", band, band64)
		k.Op("cvt.u32.u64 %s, %s", per32, per)
		// The band's output rows [oh0, oh0+rows) and the input rows
		// [lo, hi) their windows read.
		oh0, rows := k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("mul.lo.u32 %s, %s, %s", oh0, band, per32)
		k.Op("sub.u32 %s, %s, %s", rows, OH, oh0)
		k.Op("min.u32 %s, %s, %s", rows, rows, per32)
		lo, hi := k.Reg(ptx.S32), k.Reg(ptx.S32)
		k.Op("mul.lo.s32 %s, %s, %s", lo, oh0, SH)
		k.Op("sub.s32 %s, %s, %s", lo, lo, PH)
		k.Op("add.s32 %s, %s, %s", hi, oh0, rows)
		k.Op("sub.s32 %s, %s, 1", hi, hi)
		k.Op("mad.lo.s32 %s, %s, %s, %s", hi, hi, SH, KH)
		k.Op("sub.s32 %s, %s, %s", hi, hi, PH)
		k.Op("max.s32 %s, %s, 0", lo, lo)
		k.Op("min.s32 %s, %s, %s", hi, hi, H)
		k.Op("max.s32 %s, %s, %s", hi, hi, lo)
		// Stage rows [lo, hi) of the plane, element by element in order.
		count, base := k.Reg(ptx.U64), k.Reg(ptx.U64)
		span := k.Reg(ptx.U32)
		k.Op("sub.s32 %s, %s, %s", span, hi, lo)
		k.Op("mul.lo.u32 %s, %s, %s", span, span, W)
		k.Op("cvt.u64.u32 %s, %s", count, span)
		row0 := k.Reg(ptx.U32)
		k.Op("mad.lo.u32 %s, %s, %s, %s", row0, plane, H, lo)
		k.Op("mul.wide.u32 %s, %s, %s", base, row0, W)
		k.Loop(tid, count, ntid, func(e ptx.Reg) {
			i := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", i, base, e)
			v := k.Reg(d.reg())
			k.Op("ld.global.%s %s, [%s]", d.mem(), v, k.Addr(x, i, d.Size()))
			k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(sh, e, d.Size()), v)
		})
		k.Op("bar.sync 0")
		// The band's windows, in the outputs' order.
		outs, obase := k.Reg(ptx.U64), k.Reg(ptx.U64)
		o32 := k.Reg(ptx.U32)
		k.Op("mul.lo.u32 %s, %s, %s", o32, rows, OW)
		k.Op("cvt.u64.u32 %s, %s", outs, o32)
		pr := k.Reg(ptx.U32)
		k.Op("mad.lo.u32 %s, %s, %s, %s", pr, plane, OH, oh0)
		k.Op("mul.wide.u32 %s, %s, %s", obase, pr, OW)
		at := func(ih, iw ptx.Reg) ptx.Reg { // the tap's element in the staged rows
			i, i64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
			k.Op("sub.s32 %s, %s, %s", i, ih, lo)
			k.Op("mad.lo.u32 %s, %s, %s, %s", i, i, W, iw)
			k.Op("cvt.u64.u32 %s, %s", i64, i)
			return i64
		}
		k.Loop(tid, outs, ntid, func(j ptx.Reg) {
			j32 := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", j32, j)
			r, ow := poolDiv(k, j32, 4, 1) // by OW
			ih0, iw0 := k.Reg(ptx.S32), k.Reg(ptx.S32)
			k.Op("add.u32 %s, %s, %s", ih0, oh0, r)
			k.Op("mul.lo.s32 %s, %s, %s", ih0, ih0, SH)
			k.Op("sub.s32 %s, %s, %s", ih0, ih0, PH)
			k.Op("mul.lo.s32 %s, %s, %s", iw0, ow, poolField(k, 8))
			k.Op("sub.s32 %s, %s, %s", iw0, iw0, poolField(k, 10))
			acc := k.Reg(c.reg())
			k.Op("mov.%s %s, %s", bits(c.reg()), acc, init)
			eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
				v := k.Reg(c.reg())
				k.Op("mov.%s %s, %s", bits(c.reg()), v, init)
				skip := k.Label("band_tap")
				k.Op("@%s bra %s", pad, skip)
				raw := k.Reg(d.reg())
				k.Op("ld.shared.%s %s, [%s]", d.mem(), raw, k.Addr(sh, idx, d.Size()))
				k.Op("mov.%s %s, %s", bits(c.reg()), v, toCompute(k, d, raw))
				k.Place(skip)
				k.Op("mov.%s %s, %s", bits(c.reg()), acc, binaryOp(k, op, c, acc, v))
			})
			oi := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", oi, obase, j)
			store(k, d, k.Addr(o, oi, d.Size()), fromCompute(k, d, acc))
		})
		k.Op("bar.sync 0") // the band is read before the next is staged
	})
	return k
}
