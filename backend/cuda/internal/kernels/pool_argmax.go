package kernels

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Max pooling that keeps its choices (ops.MaxPool2DWithArgmax) and their
// use (ops.MaxUnpool2D and its gradient), so that the gradient of max
// pooling reads a byte a window where it would search each window of the
// input again:
//
//   - pool2d_argmax_<layout>_<dtype> (out, sel, x, ...): each window's
//     first largest tap, a NaN winning over numbers, as pool2d_select_ge's
//     byte in sel (PoolSelectNone where every tap is on padding), and its
//     value in out (-Inf, or the integer dtype's least, where none);
//     layouts nhwc and nchw (a thread a window: n, pg), nchwband and
//     nchwtile (the band kernels' parameters), nchw2x2 (the 2x2 kernels',
//     pool_quads.go).
//   - pool2d_unpool_put_<layout>_<dtype> (out, sel, src, ...): MaxUnpool2D
//     over windows that do not overlap, each window writing its block (src
//     at its selection, zero elsewhere; the elements in no window are the
//     caller's to fill); the argmax kernels' layouts and parameters, the
//     band kernels' blocks staged in shared memory and written in order.
//   - MaxUnpool2D over overlapping windows is pool2d_select_scatter
//     (pool_scatter.go) with a zero init: its nhwc, nchwband and nchwtile
//     kernels, and pool2d_select_scatter_nchw_<dtype> for the rest.
//   - pool2d_unpool_gather_<nhwc|nchw>_<dtype> (out, sel, g, n, pg): each
//     window's element of g at its selection, zero where PoolSelectNone
//     (MaxUnpool2D's gradient; a thread a window).

// poolArgmaxKernel writes pool2d_argmax_<layout>_<d>, layout nhwc, nchw,
// nchwband or nchwtile.
func poolArgmaxKernel(d DType, layout string) *ptx.Kernel {
	return poolChooseKernel(Name("pool2d_argmax", layout, string(d)), d, true, layout, true)
}

// poolQuadsArgmaxKernel writes pool2d_argmax_nchw2x2_<d>: the chunk
// staged as pool2d_max_nchw2x2 stages it, each window's taps compared in
// order.
func poolQuadsArgmaxKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_argmax", "nchw2x2", string(d)))
	o, sel, x := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("x")
	q := newQuads(k, d)
	sh := k.Shared("chunk", QuadChunkBytes, 16)
	var taps [4]ptx.Reg // the taps' numbers, as the selection takes them
	for t := range taps {
		taps[t] = k.Reg(ptx.U64)
		k.Op("mov.u64 %s, %d", taps[t], t)
	}
	q.chunks(func() {
		q.move(x, sh, true)
		q.windows(func(off, oi ptx.Reg) {
			s := newSelection(k, d.Compute(), true) // a half type's taps compared in float32
			for r, row := range []ptx.Reg{off, q.below(off)} {
				a, b := q.pair(sh, row)
				s.consider(a, taps[2*r])
				s.consider(b, taps[2*r+1])
			}
			chosen := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", chosen, s.chosen)
			store(k, U8, k.Addr(sel, oi, 1), chosen)
			store(k, d, k.Addr(o, oi, d.Size()), fromCompute(k, d, s.best))
		})
		k.Op("bar.sync 0") // the chunk is read before the next is staged
	})
	return k
}

// poolUnpoolGatherKernel writes pool2d_unpool_gather_<nhwc|nchw>_<d>.
func poolUnpoolGatherKernel(d DType, nhwc bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_unpool_gather", LayoutName(nhwc), string(d)))
	o, sel, g := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("g")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	poolLoop(k, n, func(o64, oi ptx.Reg) {
		ih0, iw0, at := poolWindow(k, nhwc, oi)
		chosen, v, tap := load(k, U8, k.Addr(sel, o64, 1)), k.Reg(d.reg()), k.Reg(ptx.U32)
		k.Op("mov.%s %s, %s", bits(d.reg()), v, ptx.Imm(d.reg(), 0))
		k.Op("mov.u32 %s, 0", tap)
		eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) { // a tap on padding gathers nothing, chosen or not
			here, next := k.Reg(ptx.Pred), k.Label("not_chosen")
			k.Op("setp.ne.u32 %s, %s, %s", here, tap, chosen)
			k.Op("or.pred %s, %s, %s", here, here, pad)
			k.Op("@%s bra %s", here, next)
			k.Op("ld.global.%s %s, [%s]", d.mem(), v, k.Addr(g, idx, d.Size()))
			k.Place(next)
			k.Op("add.u32 %s, %s, 1", tap, tap)
		})
		store(k, d, k.Addr(o, o64, d.Size()), v)
	})
	return k
}

// poolUnpoolPutKernel writes pool2d_unpool_put_<nhwc|nchw>_<d>: a thread a
// window.
func poolUnpoolPutKernel(d DType, nhwc bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_unpool_put", LayoutName(nhwc), string(d)))
	o, sel, src := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("src")
	n := k.Param("n", ptx.U64)
	k.ParamBytes("pg", PoolGeomLen)
	poolLoop(k, n, func(o64, oi ptx.Reg) {
		ih0, iw0, at := poolWindow(k, nhwc, oi)
		put := unpoolTaps(k, d, load(k, U8, k.Addr(sel, o64, 1)), load(k, d, k.Addr(src, o64, d.Size())))
		eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
			v, next := put(), k.Label("put_next") // every tap numbered, padding too
			k.Op("@%s bra %s", pad, next)
			store(k, d, k.Addr(o, idx, d.Size()), v)
			k.Place(next)
		})
	})
	return k
}

// unpoolTaps returns the function that gives a window's taps in order,
// padding included, their values in an unpooled block: v at the tap
// numbered chosen (u32), zero elsewhere.
func unpoolTaps(k *ptx.Kernel, d DType, chosen, v ptx.Reg) func() ptx.Reg {
	tap, zero := k.Reg(ptx.U32), k.Reg(d.reg())
	k.Op("mov.u32 %s, 0", tap)
	k.Op("mov.%s %s, %s", bits(d.reg()), zero, ptx.Imm(d.reg(), 0))
	return func() ptx.Reg {
		here, w := k.Reg(ptx.Pred), k.Reg(d.reg())
		k.Op("setp.eq.u32 %s, %s, %s", here, tap, chosen)
		k.Op("selp.%s %s, %s, %s, %s", d.reg(), w, v, zero, here)
		k.Op("add.u32 %s, %s, 1", tap, tap)
		return w
	}
}

// poolBandUnpoolPutKernel writes pool2d_unpool_put_<nchwband|nchwtile>_<d>:
// the band's block of the result staged (zeros, then each window's value
// at its selection) and written in order.
func poolBandUnpoolPutKernel(d DType, tiled bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_unpool_put", bandLayout(tiled), string(d)))
	out, sel, src := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("src")
	newBand(k, d, ptx.Reg{}, tiled, func(b *band) {
		put := k.Shared("grads", BandBytes, 16)
		zero := k.Reg(d.reg())
		k.Op("mov.%s %s, %s", bits(d.reg()), zero, ptx.Imm(d.reg(), 0))
		b.each(func(e, _ ptx.Reg) { k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(put, e, d.Size()), zero) })
		k.Op("bar.sync 0")
		b.windowsOf(1, func(_, o, ih0, iw0 ptx.Reg, at func(ih, iw ptx.Reg) ptx.Reg) { // turns aligned for the selections' bytes
			chosen, v := load(k, U8, k.Addr(sel, o, 1)), load(k, d, k.Addr(src, o, d.Size()))
			tap := k.Reg(ptx.U32)
			k.Op("mov.u32 %s, 0", tap)
			eachPoolTap(k, ih0, iw0, at, func(pad, idx ptx.Reg) {
				next, miss := k.Label("band_put"), k.Reg(ptx.Pred)
				k.Op("setp.ne.u32 %s, %s, %s", miss, tap, chosen) // padding is never chosen
				k.Op("@%s bra %s", miss, next)
				k.Op("st.shared.%s [%s], %s", d.mem(), k.Addr(put, idx, d.Size()), v)
				k.Place(next)
				k.Op("add.u32 %s, %s, 1", tap, tap)
			})
		})
		b.writeStaged(put, out)
	})
	return k
}

// poolQuadsUnpoolPutKernel writes pool2d_unpool_put_nchw2x2_<d>: each
// window's block staged beside the others', then the chunk's result
// written in order.
func poolQuadsUnpoolPutKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_unpool_put", "nchw2x2", string(d)))
	o, sel, src := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("src")
	q := newQuads(k, d)
	put := k.Shared("grads", QuadChunkBytes, 16)
	q.chunks(func() {
		q.windows(func(off, oi ptx.Reg) {
			next := unpoolTaps(k, d, load(k, U8, k.Addr(sel, oi, 1)), load(k, d, k.Addr(src, oi, d.Size())))
			for _, row := range []ptx.Reg{off, q.below(off)} {
				a := next()
				q.putPair(put, row, a, next())
			}
		})
		k.Op("bar.sync 0")
		q.move(o, put, false) // ends with the barrier the next chunk's staging needs
	})
	return k
}
