package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// The NCHW kernels for 2x2 windows at a stride of 2 on images of even
// height and width without padding (PoolQuads): an output row's windows
// cover two input rows that lie side by side in memory, and so do the
// next output row's, image after image and channel after channel. The
// input is then a sequence of "row pairs" of 2W elements, each giving W/2
// outputs. A block stages a chunk of whole row pairs in shared memory,
// read with 16-byte loads that fill every sector, and its threads compute
// the chunk's windows from there, writing the outputs (or, for
// select_put, the chunk's gradient, staged too) in order:
//
//   - pool2d_<sum|max|min>_nchw2x2_<dtype> (out, x, init, rows, w, per,
//     half): rows row pairs of w elements a row, per of them a chunk,
//     half the divisor w/2 (value, magic, shift: divisorArg's).
//   - pool2d_select_put_<ge|le>_nchw2x2_<dtype> (out, x, src, init,
//     rows, w, per, half): pool2d_select_put's for these windows.
//
// The dtypes are the floats and the half types (taps compared and summed
// in float32, the result rounded once). The taps are taken in the
// window's order (its first row, then its second), as the other pooling
// kernels take them: the results are theirs to the bit.

// QuadChunkBytes is the shared memory a block stages input in (and, for
// select_put, the gradient it writes): a chunk holds as many whole row
// pairs as fit.
const QuadChunkBytes = 8192

// PoolQuads reports whether the 2x2 kernels (pool2d_*_nchw2x2) take p
// of dtype d: NCHW, 2x2 windows at a stride of 2, no padding, an even
// height and width (a multiple of 4 for the half types: a row pair of
// whole 16-byte vectors), and a row pair that fits a chunk.
func PoolQuads(p PoolDims, d DType) bool {
	pair := 2 * p.W * d.Size() // a row pair's bytes
	return slices.Contains(quadTypes, d) && p.KH == 2 && p.KW == 2 && p.SH == 2 && p.SW == 2 && p.PH == 0 && p.PW == 0 &&
		p.H%2 == 0 && p.W%2 == 0 && p.W > 0 && 2*p.OH == p.H && 2*p.OW == p.W && pair%16 == 0 && pair <= QuadChunkBytes
}

// quadTypes are the dtypes the 2x2 kernels take.
var quadTypes = []DType{F32, F64, BF16, F16}

// QuadsPerChunk is the row pairs of width w a chunk holds for dtype d:
// as many as fit, down to a multiple that starts every chunk's outputs
// on a 32-byte sector (its input then starts on one too), and its
// windows' selections (a byte each: pool2d_argmax, pool2d_unpool_put),
// where that leaves any.
func QuadsPerChunk(w int, d DType) int {
	per := QuadChunkBytes / (2 * w * d.Size())
	step := 32 / gcd(32, w/2) // a row pair's windows: their bytes, and so their outputs'
	if per >= step {
		per -= per % step
	}
	return per
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// quads is a 2x2 kernel's frame: its parameters and the block's chunk
// loop.
type quads struct {
	k              *ptx.Kernel
	d              DType
	rows, w, per   ptx.Reg // u64
	half           divisor
	tid, ntid      ptx.Reg // u64
	s0, count, out ptx.Reg // the chunk's first row pair, its row pairs, its windows (u64)
}

func newQuads(k *ptx.Kernel, d DType) *quads {
	q := &quads{k: k, d: d, rows: k.Param("rows", ptx.U64), w: k.Param("w", ptx.U64), per: k.Param("per", ptx.U64)}
	q.half = paramDivisor(k, "half")
	t32, n32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%tid.x", t32)
	k.Op("mov.u32 %s, %%ntid.x", n32)
	q.tid, q.ntid = k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", q.tid, t32)
	k.Op("cvt.u64.u32 %s, %s", q.ntid, n32)
	return q
}

// chunks runs body for each chunk of the block's (chunk ctaid, then a
// grid's stride on), with s0, count and out set.
func (q *quads) chunks(body func()) {
	k := q.k
	c32, g32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%ctaid.x", c32)
	k.Op("mov.u32 %s, %%nctaid.x", g32)
	first, step := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", first, c32)
	k.Op("mul.lo.s64 %s, %s, %s", first, first, q.per)
	k.Op("cvt.u64.u32 %s, %s", step, g32)
	k.Op("mul.lo.s64 %s, %s, %s", step, step, q.per)
	k.Loop(first, q.rows, step, func(s0 ptx.Reg) {
		q.s0, q.count, q.out = s0, k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("sub.s64 %s, %s, %s", q.count, q.rows, s0)
		k.Op("min.u64 %s, %s, %s", q.count, q.count, q.per)
		k.Op("mul.lo.s64 %s, %s, %s", q.out, q.count, q.half.v)
		body()
	})
}

// move copies the chunk's bytes (its row pairs of d) between global
// memory at g (the chunk's row pair s0 on) and shared memory at sh,
// sixteen bytes a thread at a time: in (global to shared) or out.
func (q *quads) move(g, sh ptx.Reg, in bool) {
	k := q.k
	vecs, base := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", vecs, q.count, q.w)
	k.Op("mul.lo.s64 %s, %s, %d", vecs, vecs, 2*q.d.Size()/4) // 4-byte words, four a vector
	k.Op("shr.u64 %s, %s, 2", vecs, vecs)
	k.Op("mul.lo.s64 %s, %s, %s", base, q.s0, q.w)
	k.Op("mul.lo.s64 %s, %s, %d", base, base, 2*q.d.Size())
	k.Op("add.s64 %s, %s, %s", base, base, g)
	k.Loop(q.tid, vecs, q.ntid, func(v ptx.Reg) {
		off, ga, sa := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("shl.b64 %s, %s, 4", off, v)
		k.Op("add.s64 %s, %s, %s", ga, base, off)
		k.Op("add.s64 %s, %s, %s", sa, sh, off)
		r := [4]ptx.Reg{k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32)}
		from, to := "global", "shared"
		src, dst := ga, sa
		if !in {
			from, to, src, dst = "shared", "global", sa, ga
		}
		k.Op("ld.%s.v4.f32 {%s, %s, %s, %s}, [%s]", from, r[0], r[1], r[2], r[3], src)
		k.Op("st.%s.v4.f32 [%s], {%s, %s, %s, %s}", to, dst, r[0], r[1], r[2], r[3])
	})
	k.Op("bar.sync 0")
}

// windows runs body for each of the chunk's windows (j, its index in the
// chunk) given its first tap's element in the chunk (off: the window's
// top left; off+1 beside it, off+w and off+w+1 below) and its index among
// the outputs (o).
func (q *quads) windows(body func(off, o ptx.Reg)) {
	k := q.k
	k.Loop(q.tid, q.out, q.ntid, func(j ptx.Reg) {
		r, c := divmod(k, j, q.half)
		off, o := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", off, r, q.w)
		k.Op("add.s64 %s, %s, %s", off, off, c)
		k.Op("shl.b64 %s, %s, 1", off, off) // 2(r·w + c): the pair's row is 2r
		k.Op("mad.lo.s64 %s, %s, %s, %s", o, q.s0, q.half.v, j)
		body(off, o)
	})
}

// pair loads the pair of elements at element off of shared memory sh,
// in the dtype's compute type.
func (q *quads) pair(sh, off ptx.Reg) (a, b ptx.Reg) {
	k, d := q.k, q.d
	a, b = k.Reg(d.reg()), k.Reg(d.reg())
	at := k.Addr(sh, off, d.Size())
	if d.Half() {
		k.Op("ld.shared.%s %s, [%s]", d.mem(), a, at)
		k.Op("ld.shared.%s %s, [%s+%d]", d.mem(), b, at, d.Size())
		return toCompute(k, d, a), toCompute(k, d, b)
	}
	k.Op("ld.shared.v2.%s {%s, %s}, [%s]", d.mem(), a, b, at)
	return a, b
}

// putPair stores a pair of elements (of the dtype, as stored) at element
// off of shared memory sh.
func (q *quads) putPair(sh, off, a, b ptx.Reg) {
	k, d := q.k, q.d
	at := k.Addr(sh, off, d.Size())
	if d.Half() {
		k.Op("st.shared.%s [%s], %s", d.mem(), at, a)
		k.Op("st.shared.%s [%s+%d], %s", d.mem(), at, d.Size(), b)
		return
	}
	k.Op("st.shared.v2.%s [%s], {%s, %s}", d.mem(), at, a, b)
}

// below is off + w.
func (q *quads) below(off ptx.Reg) ptx.Reg {
	r := q.k.Reg(ptx.U64)
	q.k.Op("add.s64 %s, %s, %s", r, off, q.w)
	return r
}

// poolQuadsReduceKernel writes pool2d_<kind>_nchw2x2_<d>.
func poolQuadsReduceKernel(kind string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d", kind, "nchw2x2", string(d)))
	o, x, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("init")
	q := newQuads(k, d)
	sh := k.Shared("chunk", QuadChunkBytes, 16)
	op := map[string]string{"sum": "add", "max": "max", "min": "min"}[kind]
	c := d.Compute() // a half type's taps in float32, the result rounded once
	init := toCompute(k, d, load(k, d, ip))
	q.chunks(func() {
		q.move(x, sh, true)
		q.windows(func(off, oi ptx.Reg) {
			a, b := q.pair(sh, off)
			e, f := q.pair(sh, q.below(off))
			acc := init
			for _, v := range []ptx.Reg{a, b, e, f} {
				acc = binaryOp(k, op, c, acc, v)
			}
			store(k, d, k.Addr(o, oi, d.Size()), fromCompute(k, d, acc))
		})
		k.Op("bar.sync 0") // the chunk is read before the next is staged
	})
	return k
}

// poolQuadsSelectPutKernel writes pool2d_select_put_<ge|le>_nchw2x2_<d>:
// each window's selection from the staged input, its block of the
// gradient staged beside it, then the chunk's gradient written in order.
func poolQuadsSelectPutKernel(d DType, ge bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("pool2d_select_put", selName(ge), "nchw2x2", string(d)))
	o, x, src, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("src"), k.ParamPtr("init")
	q := newQuads(k, d)
	sh, put := k.Shared("chunk", QuadChunkBytes, 16), k.Shared("grads", QuadChunkBytes, 16)
	init := load(k, d, ip)
	q.chunks(func() {
		q.move(x, sh, true)
		q.windows(func(off, oi ptx.Reg) {
			under := q.below(off)
			s := newSelection(k, d.Compute(), ge) // a half type's taps compared in float32
			for _, row := range []ptx.Reg{off, under} {
				a, b := q.pair(sh, row)
				next := k.Reg(ptx.U64)
				k.Op("add.s64 %s, %s, 1", next, row)
				s.consider(a, row)
				s.consider(b, next)
			}
			v, skip := k.Reg(d.reg()), k.Label("none_chosen")
			k.Op("mov.%s %s, %s", bits(d.reg()), v, init)
			k.Op("@!%s bra %s", s.found, skip)
			sum := binaryOp(k, "add", d.Compute(), toCompute(k, d, init), toCompute(k, d, load(k, d, k.Addr(src, oi, d.Size()))))
			k.Op("mov.%s %s, %s", bits(d.reg()), v, fromCompute(k, d, sum)) // a half type's sum rounded once
			k.Place(skip)
			for _, row := range []ptx.Reg{off, under} {
				vs := [2]ptx.Reg{k.Reg(d.reg()), k.Reg(d.reg())}
				for j := range vs {
					at := row
					if j == 1 {
						at = k.Reg(ptx.U64)
						k.Op("add.s64 %s, %s, 1", at, row)
					}
					here := k.Reg(ptx.Pred)
					k.Op("setp.eq.u64 %s, %s, %s", here, at, s.chosen)
					k.Op("and.pred %s, %s, %s", here, here, s.found)
					k.Op("selp.%s %s, %s, %s, %s", d.reg(), vs[j], v, init, here)
				}
				q.putPair(put, row, vs[0], vs[1])
			}
		})
		k.Op("bar.sync 0")
		q.move(o, put, false) // ends with the barrier the next chunk's staging needs
	})
	return k
}
