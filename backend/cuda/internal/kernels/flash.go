package kernels

import (
	"fmt"
	"math"
	mbits "math/bits"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// FlashAttention's kernels (ops/attention.go's ScaledDotProductAttention
// and its backprop, float32, no mask tensor, query, key and value rows
// of one width FlashDims lists): the score matrix is never written. A
// block takes FlashBlock rows of one batch matrix, FlashSplit threads a
// row, each of them every FlashSplit-th key (or query); tiles of
// FlashBlock keys (or queries) and their values go through shared
// memory, read by the block's threads a row at a time (a broadcast), and
// each thread keeps its row, its running maximum and its sums in
// registers, combined with its row's other threads' by shuffles at the
// end. Scores are kept in base 2 (the scale times
// log2(e) folded into the thread's row) so that ex2 gives the
// exponentials. Tiles move between global and shared memory 16 bytes a
// thread, coalesced; a thread's own row goes through a padded shared
// tile (pitch dim+4: conflict-free vector reads).
//
//   - flash_fwd_f32_<dim> (o, lse, q, k, v, tq, tk, nb (a divisor
//     parameter: blocks per batch matrix), blocks, scale2, causal): per
//     query, the online softmax over the keys (the maximum so
//     far, the sum rescaled when it grows), the output row and the
//     log-sum-exp (natural log). Causal: a query's keys stop at its
//     position, and a block's key tiles at its last query.
//   - flash_bwd_q_f32_<dim> (dq, delta, q, k, v, o, do, lse, dlse, tq,
//     tk, nb, blocks, scale2, scale, causal): per query, δ = Σ
//     dO⊙O − dlse (written to delta for the next kernel), and dQ = scale ·
//     Σ_j dS_j·k_j with P recomputed from lse, dS = P⊙(dO·v_j − δ).
//   - flash_bwd_<dk|dv>_f32_<dim> (out, q, k, v, do, lse, delta, tq, tk,
//     nb (blocks of keys per batch matrix), blocks, scale2, scale,
//     causal): per key, over the tiles of queries that attend to it: dV = Σ_i P_i·dO_i, or dK = scale · Σ_i dS_i·q_i.
//
// Every sum runs in a fixed order (each thread's share in order, then the
// shuffles'), so results are the same from run to run (no atomics).

// FlashBlock is the rows a block of the flash kernels takes, and the
// rows of its tiles; FlashSplit threads take each row, neighbouring lanes
// of a warp, each every FlashSplit-th key (or query) of a tile, their
// partial results combined by shuffles at the end; FlashThreads is the
// block's threads.
const (
	FlashBlock   = 64
	FlashSplit   = 4
	FlashThreads = FlashBlock * FlashSplit
)

// FlashDims are the row widths the flash kernels are written for.
var FlashDims = []int{16, 32, 64}

func flashKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, dim := range FlashDims {
		for _, drop := range []bool{false, true} {
			out = append(out, flashForward(dim, drop), flashBackwardQ(dim, drop), flashBackwardKV(dim, "dk", drop), flashBackwardKV(dim, "dv", drop))
		}
	}
	return out
}

// flash is one flash kernel being written: its row width, its thread's
// index in the block, and the shared tiles.
type flash struct {
	k        *ptx.Kernel
	dim      int
	dropTwin bool        // a float32 kernel's _drop twin
	drop     *dropStream // a _drop twin's stream, once its parameters are declared
	tid      ptx.Reg     // u32, the thread's index in the block
	row      ptx.Reg     // u32, its row in the block's (tid / FlashSplit)
	row64    ptx.Reg     // the same, u64
	sub      ptx.Reg     // u32, its share of the row's keys (tid % FlashSplit)
	own      ptx.Reg     // the padded tile for the threads' own rows: FlashBlock x (dim+4)
	a, b     ptx.Reg     // two tiles of FlashBlock x dim (own lies over them)
	scalars  ptx.Reg     // two rows of FlashBlock float32: a tile's lse and δ (the dk/dv kernels)
}

func newFlash(name string, dim int) *flash {
	return &flash{k: ptx.NewKernel(name), dim: dim}
}

// newFlashF32 starts float32 kernel kind (flash_fwd, ...) for rows of
// dim, its _drop twin where drop.
func newFlashF32(kind string, dim int, drop bool) *flash {
	name := Name(kind, "f32", fmt.Sprint(dim))
	if drop {
		name = Name(name, "drop")
	}
	f := newFlash(name, dim)
	f.dropTwin = drop
	return f
}

// dropParams declares a float32 _drop twin's parameters, after the
// others.
func (f *flash) dropParams() {
	if f.dropTwin {
		f.drop = dropParams(f.k)
	}
}

// dropWeight multiplies the weight p (f32) of query i and key j (u64) of
// batch matrix bm by its dropout factor, in a float32 _drop twin.
func (f *flash) dropWeight(p, bm, tq, tk, i, j ptx.Reg) {
	if f.drop != nil {
		f.k.Op("mul.rn.f32 %s, %s, %s", p, p, f.drop.factor(f.k, bm, tq, tk, i, j))
	}
}

// start declares the shared tiles and reads the thread's index (after the
// parameters, which the kernel declares first).
func (f *flash) start() {
	k := f.k
	// The padded tile lies over the two others: the threads' own rows
	// move before and after the loops over tiles, a barrier between.
	tile := FlashBlock * f.dim * 4
	f.own = k.Shared("tiles", max(2*tile, FlashBlock*(f.dim+4)*4), 16)
	f.a, f.b = f.own, k.Reg(ptx.U64)
	k.Op("add.s64 %s, %s, %d", f.b, f.a, tile)
	f.scalars = k.Shared("scalars", 2*FlashBlock*4, 16)
	f.tid, f.row, f.row64, f.sub = k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U64), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%tid.x", f.tid)
	k.Op("shr.u32 %s, %s, %d", f.row, f.tid, mbits.TrailingZeros(FlashSplit))
	k.Op("and.b32 %s, %s, %d", f.sub, f.tid, FlashSplit-1)
	k.Op("cvt.u64.u32 %s, %s", f.row64, f.row)
}

// blocks runs body for each of the grid's blocks of rows: the batch
// matrix bm and the first row r0 (u64), over blocks in all, nb a batch
// matrix.
func (f *flash) blocks(blocks ptx.Reg, nb divisor, body func(bm, r0 ptx.Reg)) {
	k := f.k
	ctaid, nctaid, c64, n64 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u32 %s, %%ctaid.x", ctaid)
	k.Op("mov.u32 %s, %%nctaid.x", nctaid)
	k.Op("cvt.u64.u32 %s, %s", c64, ctaid)
	k.Op("cvt.u64.u32 %s, %s", n64, nctaid)
	k.Loop(c64, blocks, n64, func(blk ptx.Reg) {
		bm, rb := divmod(k, blk, nb)
		r0 := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %d", r0, rb, FlashBlock)
		body(bm, r0)
	})
}

// matrix is the address of batch matrix bm of a [batch, rows, dim]
// float32 tensor at base.
func (f *flash) matrix(base, bm, rows ptx.Reg, dim int) ptx.Reg {
	k := f.k
	off, a := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", off, bm, rows)
	k.Op("mul.lo.s64 %s, %s, %d", off, off, 4*dim)
	k.Op("add.s64 %s, %s, %s", a, base, off)
	return a
}

// sync is the block's barrier.
func (f *flash) sync() { f.k.Op("bar.sync 0") }

// move copies rows [r0, r0+FlashBlock) of a [n, dim] matrix at global
// address g to or from the shared tile sh (rows pitch floats apart)
// (moveTile).
func (f *flash) move(load bool, sh ptx.Reg, pitch int, g, r0, n ptx.Reg) {
	moveTile(f.k, f.tid, FlashThreads, f.dim/4, pitch/4, load, sh, g, r0, n)
}

// moveTile copies rows [r0, r0+FlashBlock) of a matrix of n rows at
// global address g to or from shared tile sh (tilePieces' pieces), 16
// bytes a thread a step, coalesced; loading, rows at or past n read as
// zeros, and storing, they are not written.
func moveTile(k *ptx.Kernel, tid ptx.Reg, threads, perRow, pitch int, load bool, sh, g, r0, n ptx.Reg) {
	tilePieces(k, tid, threads, perRow, pitch, sh, g, r0, n, func(in, ga, sa ptx.Reg) {
		v := [4]ptx.Reg{k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)}
		skip := k.Label("tile_row")
		if load {
			for _, r := range v {
				k.Op("mov.u32 %s, 0", r)
			}
			k.Op("@!%s bra %s", in, skip)
			k.Op("ld.global.v4.b32 {%s, %s, %s, %s}, [%s]", v[0], v[1], v[2], v[3], ga)
			k.Place(skip)
			k.Op("st.shared.v4.b32 [%s], {%s, %s, %s, %s}", sa, v[0], v[1], v[2], v[3])
			return
		}
		k.Op("@!%s bra %s", in, skip)
		k.Op("ld.shared.v4.b32 {%s, %s, %s, %s}, [%s]", v[0], v[1], v[2], v[3], sa)
		k.Op("st.global.v4.b32 [%s], {%s, %s, %s, %s}", ga, v[0], v[1], v[2], v[3])
		k.Place(skip)
	})
}

// tilePieces runs f for each of thread tid's 16-byte pieces of rows [r0,
// r0+FlashBlock) of a matrix of n rows at global address g (perRow pieces
// a row, a power of 2) and of shared tile sh (pitch pieces a row): a step
// of threads pieces, neighbouring threads neighbouring pieces. f gets
// whether the piece's row is below n, and its global and shared
// addresses.
func tilePieces(k *ptx.Kernel, tid ptx.Reg, threads, perRow, pitch int, sh, g, r0, n ptx.Reg, f func(in, ga, sa ptx.Reg)) {
	for s := 0; s*threads < FlashBlock*perRow; s++ {
		e, row, c := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("add.u32 %s, %s, %d", e, tid, threads*s)
		k.Op("shr.u32 %s, %s, %d", row, e, mbits.TrailingZeros(uint(perRow)))
		k.Op("and.b32 %s, %s, %d", c, e, perRow-1)
		grow, in := k.Reg(ptx.U64), k.Reg(ptx.Pred)
		k.Op("cvt.u64.u32 %s, %s", grow, row)
		k.Op("add.s64 %s, %s, %s", grow, grow, r0)
		k.Op("setp.lt.u64 %s, %s, %s", in, grow, n)
		ga, c64 := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("cvt.u64.u32 %s, %s", c64, c)
		k.Op("mad.lo.s64 %s, %s, %d, %s", ga, grow, perRow, c64)
		k.Op("mad.lo.s64 %s, %s, 16, %s", ga, ga, g)
		se, sa := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mad.lo.u32 %s, %s, %d, %s", se, row, pitch, c)
		k.Op("mul.wide.u32 %s, %s, 16", sa, se)
		k.Op("add.s64 %s, %s, %s", sa, sa, sh)
		f(in, ga, sa)
	}
}

// rowAddr is the shared address of row r (u32) of tile sh, pitch floats
// a row.
func (f *flash) rowAddr(sh ptx.Reg, pitch int, r ptx.Reg) ptx.Reg {
	k := f.k
	a := k.Reg(ptx.U64)
	k.Op("mul.wide.u32 %s, %s, %d", a, r, 4*pitch)
	k.Op("add.s64 %s, %s, %s", a, a, sh)
	return a
}

// readRow reads row r of tile sh (pitch floats a row) into registers,
// multiplied by scale where scale is not the zero Reg.
func (f *flash) readRow(sh ptx.Reg, pitch int, r, scale ptx.Reg) []ptx.Reg {
	k := f.k
	a := f.rowAddr(sh, pitch, r)
	out := make([]ptx.Reg, f.dim)
	for c := 0; c < f.dim; c += 4 {
		for i := range 4 {
			out[c+i] = k.Reg(ptx.F32)
		}
		k.Op("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", out[c], out[c+1], out[c+2], out[c+3], a, 4*c)
	}
	if scale != (ptx.Reg{}) {
		for _, x := range out {
			k.Op("mul.rn.f32 %s, %s, %s", x, x, scale)
		}
	}
	return out
}

// ownRow loads rows [r0, r0+FlashBlock) of the [n, dim] matrix at g
// through the padded tile and returns the thread's row (times scale,
// unless the zero Reg); the tile is free again when it returns.
func (f *flash) ownRow(g, r0, n, scale ptx.Reg) []ptx.Reg {
	f.move(true, f.own, f.dim+4, g, r0, n)
	f.sync()
	row := f.readRow(f.own, f.dim+4, f.row, scale)
	f.sync()
	return row
}

// storeOwn writes each row (rows r0 + f.row < n; its first thread's) to
// the [n, dim] matrix at g through the padded tile.
func (f *flash) storeOwn(row []ptx.Reg, g, r0, n ptx.Reg) {
	k := f.k
	a := f.rowAddr(f.own, f.dim+4, f.row)
	skip := k.Label("own_row_stored")
	f.unlessFirst(skip)
	for c := 0; c < f.dim; c += 4 {
		k.Op("st.shared.v4.f32 [%s+%d], {%s, %s, %s, %s}", a, 4*c, row[c], row[c+1], row[c+2], row[c+3])
	}
	k.Place(skip)
	f.sync()
	f.move(false, f.own, f.dim+4, g, r0, n)
	f.sync()
}

// unlessFirst branches to label unless the thread is its row's first.
func (f *flash) unlessFirst(label string) {
	p := f.k.Reg(ptx.Pred)
	f.k.Op("setp.ne.u32 %s, %s, 0", p, f.sub)
	f.k.Op("@%s bra %s", p, label)
}

// groupSum sets each of xs to its sum over the row's FlashSplit threads
// (a butterfly of shuffles: every one of them gets it).
func (f *flash) groupSum(xs ...ptx.Reg) {
	for off := 1; off < FlashSplit; off *= 2 {
		for _, x := range xs {
			f.k.Op("add.rn.f32 %s, %s, %s", x, x, shuffleXor(f.k, ptx.F32, x, off))
		}
	}
}

// groupMax is the maximum of x over the row's FlashSplit threads.
func (f *flash) groupMax(x ptx.Reg) ptx.Reg {
	m := f.k.Reg(ptx.F32)
	f.k.Op("mov.f32 %s, %s", m, x)
	for off := 1; off < FlashSplit; off *= 2 {
		f.k.Op("max.f32 %s, %s, %s", m, m, shuffleXor(f.k, ptx.F32, m, off))
	}
	return m
}

// dot is Σ x[c]·tile row r's c, read from shared memory 16 bytes at a
// time.
func (f *flash) dot(x []ptx.Reg, sh ptx.Reg, r ptx.Reg) ptx.Reg {
	k := f.k
	a := f.rowAddr(sh, f.dim, r)
	s := k.Reg(ptx.F32)
	k.Op("mov.f32 %s, 0f00000000", s)
	for c := 0; c < f.dim; c += 4 {
		v := [4]ptx.Reg{k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32)}
		k.Op("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", v[0], v[1], v[2], v[3], a, 4*c)
		for i, y := range v {
			k.Op("fma.rn.f32 %s, %s, %s, %s", s, x[c+i], y, s)
		}
	}
	return s
}

// axpy adds w times tile row r to acc.
func (f *flash) axpy(acc []ptx.Reg, w ptx.Reg, sh ptx.Reg, r ptx.Reg) {
	k := f.k
	a := f.rowAddr(sh, f.dim, r)
	for c := 0; c < f.dim; c += 4 {
		v := [4]ptx.Reg{k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32)}
		k.Op("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", v[0], v[1], v[2], v[3], a, 4*c)
		for i, y := range v {
			k.Op("fma.rn.f32 %s, %s, %s, %s", acc[c+i], w, y, acc[c+i])
		}
	}
}

// zeros returns dim float32 registers holding 0.
func (f *flash) zeros() []ptx.Reg {
	out := make([]ptx.Reg, f.dim)
	for i := range out {
		out[i] = f.k.Reg(ptx.F32)
		f.k.Op("mov.f32 %s, 0f00000000", out[i])
	}
	return out
}

// scaled multiplies each of xs by s in place.
func (f *flash) scaled(xs []ptx.Reg, s ptx.Reg) {
	for _, x := range xs {
		f.k.Op("mul.rn.f32 %s, %s, %s", x, x, s)
	}
}

// tiles runs body for each tile of FlashBlock rows from from (u64) up to
// end (u64): its first row t0 and its rows (u32, at most FlashBlock).
func (f *flash) tiles(from, end ptx.Reg, body func(t0, count ptx.Reg)) {
	k := f.k
	step := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, %d", step, FlashBlock)
	k.Loop(from, end, step, func(t0 ptx.Reg) {
		left, count := k.Reg(ptx.U64), k.Reg(ptx.U32)
		k.Op("sub.s64 %s, %s, %s", left, end, t0)
		k.Op("min.u64 %s, %s, %d", left, left, FlashBlock)
		k.Op("cvt.u32.u64 %s, %s", count, left)
		body(t0, count)
	})
}

// upTo runs body for j (u32) = from, from + FlashSplit, ... below n.
func (f *flash) upTo(from, n ptx.Reg, body func(j ptx.Reg)) {
	k := f.k
	j, p := k.Reg(ptx.U32), k.Reg(ptx.Pred)
	top, done := k.Label("row"), k.Label("rows_done")
	k.Op("mov.u32 %s, %s", j, from)
	k.Place(top)
	k.Op("setp.ge.u32 %s, %s, %s", p, j, n)
	k.Op("@%s bra %s", p, done)
	body(j)
	k.Op("add.u32 %s, %s, %d", j, j, FlashSplit)
	k.Op("bra.uni %s", top)
	k.Place(done)
}

// causalLimit is how many of a tile's count rows from t0 the thread's row
// i reaches when causal is set (rows t0 ... i, so 0 to count), count
// otherwise: the keys a query attends to.
func (f *flash) causalLimit(causal, i, t0, count ptx.Reg) ptx.Reg {
	k := f.k
	lim, reach := k.Reg(ptx.U32), k.Reg(ptx.S64)
	k.Op("mov.u32 %s, %s", lim, count)
	k.Op("sub.s64 %s, %s, %s", reach, i, t0)
	k.Op("add.s64 %s, %s, 1", reach, reach)
	k.Op("max.s64 %s, %s, 0", reach, reach)
	k.Op("min.s64 %s, %s, %d", reach, reach, FlashBlock)
	r32, p := k.Reg(ptx.U32), k.Reg(ptx.Pred)
	k.Op("cvt.u32.s64 %s, %s", r32, reach)
	k.Op("min.u32 %s, %s, %s", r32, r32, count)
	k.Op("setp.ne.u64 %s, %s, 0", p, causal)
	k.Op("selp.u32 %s, %s, %s, %s", lim, r32, lim, p)
	return lim
}

// causalFirst is the first of a tile's rows from t0 whose index reaches
// the thread's row j when causal is set (queries j, j+1, ... attend to
// key j), 0 otherwise.
func (f *flash) causalFirst(causal, j, t0 ptx.Reg) ptx.Reg {
	k := f.k
	first, d := k.Reg(ptx.U32), k.Reg(ptx.S64)
	k.Op("sub.s64 %s, %s, %s", d, j, t0)
	k.Op("max.s64 %s, %s, 0", d, d)
	k.Op("min.s64 %s, %s, %d", d, d, FlashBlock)
	k.Op("cvt.u32.s64 %s, %s", first, d)
	p := k.Reg(ptx.Pred)
	k.Op("setp.eq.u64 %s, %s, 0", p, causal)
	k.Op("selp.u32 %s, 0, %s, %s", first, first, p)
	return first
}

// causalEnd is where the tiles of keys end for a block of queries from
// q0: tk, or where causal is set, the block's last query + 1 if less.
func (f *flash) causalEnd(causal, q0, tk ptx.Reg) ptx.Reg {
	k := f.k
	end, last, p := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("add.s64 %s, %s, %d", last, q0, FlashBlock)
	k.Op("min.u64 %s, %s, %s", last, last, tk)
	k.Op("setp.ne.u64 %s, %s, 0", p, causal)
	k.Op("selp.u64 %s, %s, %s, %s", end, last, tk, p)
	return end
}

// causalStart is where the tiles of queries start for a block of keys
// from j0: 0, or j0 where causal is set.
func (f *flash) causalStart(causal, j0 ptx.Reg) ptx.Reg {
	k := f.k
	start, p := k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", p, causal)
	k.Op("selp.u64 %s, %s, 0, %s", start, j0, p)
	return start
}

// eachKey runs body for the thread's share of the keys j (its row in
// tile a, its value's in tile b) that query i of the block from q0
// attends to, in order: the tiles of keys (from the [tk, dim] matrices km
// and vm) loaded in turn by the block, up to causalEnd; each of the
// row's threads takes every FlashSplit-th key of a tile from its sub.
func (f *flash) eachKey(km, vm, tk, causal, q0, i ptx.Reg, body func(j, key ptx.Reg)) {
	k := f.k
	zero := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", zero)
	f.tiles(zero, f.causalEnd(causal, q0, tk), func(j0, count ptx.Reg) {
		f.move(true, f.a, f.dim, km, j0, tk)
		f.move(true, f.b, f.dim, vm, j0, tk)
		f.sync()
		f.upTo(f.sub, f.causalLimit(causal, i, j0, count), func(j ptx.Reg) {
			var key ptx.Reg // the key's index in the matrix, where a _drop twin needs it
			if f.dropTwin {
				j64 := k.Reg(ptx.U64)
				k.Op("cvt.u64.u32 %s, %s", j64, j)
				key = addU64(k, j0, j64)
			}
			body(j, key)
		})
		f.sync()
	})
}

// ex2 is 2^x.
func (f *flash) ex2(x ptx.Reg) ptx.Reg {
	r := f.k.Reg(ptx.F32)
	f.k.Op("ex2.approx.ftz.f32 %s, %s", r, x)
	return r
}

// scalarAt loads element i (u64) of a float32 vector at g.
func (f *flash) scalarAt(g, i ptx.Reg) ptx.Reg { return f.k.Load(ptx.F32, f.k.Addr(g, i, 4)) }

func flashForward(dim int, drop bool) *ptx.Kernel {
	f := newFlashF32("flash_fwd", dim, drop)
	k := f.k
	o, lse, q, kk, v := k.ParamPtr("o"), k.ParamPtr("lse"), k.ParamPtr("q"), k.ParamPtr("k"), k.ParamPtr("v")
	tq, tk, nb, blocks := k.Param("tq", ptx.U64), k.Param("tk", ptx.U64), paramDivisor(k, "nb"), k.Param("blocks", ptx.U64)
	scale2, causal := k.Param("scale2", ptx.F32), k.Param("causal", ptx.U64)
	f.dropParams()
	f.start()
	f.blocks(blocks, nb, func(bm, q0 ptx.Reg) {
		qm, km, vm, om := f.matrix(q, bm, tq, dim), f.matrix(kk, bm, tk, dim), f.matrix(v, bm, tk, dim), f.matrix(o, bm, tq, dim)
		i := addU64(k, q0, f.row64)
		qr := f.ownRow(qm, q0, tq, scale2)
		m, l := k.Reg(ptx.F32), k.Reg(ptx.F32)
		k.Op("mov.f32 %s, %s", m, ptx.Imm(ptx.F32, math.Inf(-1)))
		k.Op("mov.f32 %s, 0f00000000", l)
		acc := f.zeros()
		f.eachKey(km, vm, tk, causal, q0, i, func(j, key ptx.Reg) {
			s := f.dot(qr, f.a, j)
			// A larger maximum: the sums so far rescaled to it.
			grew, same := k.Reg(ptx.Pred), k.Label("max_kept")
			k.Op("setp.gt.f32 %s, %s, %s", grew, s, m)
			k.Op("@!%s bra %s", grew, same)
			d := k.Reg(ptx.F32)
			k.Op("sub.rn.f32 %s, %s, %s", d, m, s)
			corr := f.ex2(d)
			k.Op("mul.rn.f32 %s, %s, %s", l, l, corr)
			f.scaled(acc, corr)
			k.Op("mov.f32 %s, %s", m, s)
			k.Place(same)
			e := k.Reg(ptx.F32)
			k.Op("sub.rn.f32 %s, %s, %s", e, s, m)
			p := f.ex2(e)
			k.Op("add.rn.f32 %s, %s, %s", l, l, p) // the sum of the weights before their dropout
			f.dropWeight(p, bm, tq, tk, i, key)
			f.axpy(acc, p, f.b, j)
		})
		// The row's threads' sums, rescaled to their common maximum
		// (a thread that had no key has l = 0 and m = −∞: a factor 0).
		top := f.groupMax(m)
		d := k.Reg(ptx.F32)
		k.Op("sub.rn.f32 %s, %s, %s", d, m, top)
		corr := f.ex2(d)
		k.Op("mul.rn.f32 %s, %s, %s", l, l, corr)
		f.scaled(acc, corr)
		f.groupSum(append([]ptx.Reg{l}, acc...)...)
		k.Op("mov.f32 %s, %s", m, top)
		for _, x := range acc {
			k.Op("div.rn.f32 %s, %s, %s", x, x, l)
		}
		// lse = (m + log2 l)·ln 2.
		lg, in := k.Reg(ptx.F32), k.Reg(ptx.Pred)
		k.Op("lg2.approx.f32 %s, %s", lg, l)
		k.Op("add.rn.f32 %s, %s, %s", lg, lg, m)
		k.Op("mul.rn.f32 %s, %s, %s", lg, lg, ptx.Imm(ptx.F32, math.Ln2))
		k.Op("setp.lt.u64 %s, %s, %s", in, i, tq)
		skip := k.Label("lse_stored")
		k.Op("@!%s bra %s", in, skip)
		f.unlessFirst(skip)
		row := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", row, bm, tq, i)
		k.Store(ptx.F32, k.Addr(lse, row, 4), lg)
		k.Place(skip)
		f.storeOwn(acc, om, q0, tq)
	})
	return f.k
}

func flashBackwardQ(dim int, drop bool) *ptx.Kernel {
	f := newFlashF32("flash_bwd_q", dim, drop)
	k := f.k
	dq, delta := k.ParamPtr("dq"), k.ParamPtr("delta")
	q, kk, v, o, do := k.ParamPtr("q"), k.ParamPtr("k"), k.ParamPtr("v"), k.ParamPtr("o"), k.ParamPtr("do")
	lse, dlse := k.ParamPtr("lse"), k.ParamPtr("dlse")
	tq, tk, nb, blocks := k.Param("tq", ptx.U64), k.Param("tk", ptx.U64), paramDivisor(k, "nb"), k.Param("blocks", ptx.U64)
	scale2, scale, causal := k.Param("scale2", ptx.F32), k.Param("scale", ptx.F32), k.Param("causal", ptx.U64)
	f.dropParams()
	f.start()
	f.blocks(blocks, nb, func(bm, q0 ptx.Reg) {
		km, vm := f.matrix(kk, bm, tk, dim), f.matrix(v, bm, tk, dim)
		i := addU64(k, q0, f.row64)
		// δ = Σ dO⊙O − dlse; the row's lse in base 2 (rows past tq read
		// nothing: their lse is 0, their rows zeros).
		dor := f.ownRow(f.matrix(do, bm, tq, dim), q0, tq, ptx.Reg{})
		or := f.ownRow(f.matrix(o, bm, tq, dim), q0, tq, ptx.Reg{})
		dl, l2, in := k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.Pred)
		row := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", row, bm, tq, i)
		k.Op("mov.f32 %s, 0f00000000", dl)
		k.Op("mov.f32 %s, 0f00000000", l2)
		k.Op("setp.lt.u64 %s, %s, %s", in, i, tq)
		read := k.Label("row_read")
		k.Op("@!%s bra %s", in, read)
		k.Op("ld.global.f32 %s, [%s]", dl, k.Addr(dlse, row, 4))
		k.Op("ld.global.f32 %s, [%s]", l2, k.Addr(lse, row, 4))
		k.Op("mul.rn.f32 %s, %s, %s", l2, l2, ptx.Imm(ptx.F32, math.Log2E))
		k.Place(read)
		del := k.Reg(ptx.F32)
		k.Op("neg.f32 %s, %s", del, dl)
		for c := range dim {
			k.Op("fma.rn.f32 %s, %s, %s, %s", del, dor[c], or[c], del)
		}
		qr := f.ownRow(f.matrix(q, bm, tq, dim), q0, tq, scale2)
		acc := f.zeros()
		f.eachKey(km, vm, tk, causal, q0, i, func(j, key ptx.Reg) {
			s := f.dot(qr, f.a, j)
			k.Op("sub.rn.f32 %s, %s, %s", s, s, l2)
			p := f.ex2(s)
			dp := f.dot(dor, f.b, j)
			f.dropWeight(dp, bm, tq, tk, i, key) // the dropped weight's gradient
			k.Op("sub.rn.f32 %s, %s, %s", dp, dp, del)
			k.Op("mul.rn.f32 %s, %s, %s", dp, dp, p) // dS
			f.axpy(acc, dp, f.a, j)
		})
		f.groupSum(acc...)
		f.scaled(acc, scale)
		skip := k.Label("delta_stored")
		k.Op("@!%s bra %s", in, skip)
		f.unlessFirst(skip)
		k.Store(ptx.F32, k.Addr(delta, row, 4), del)
		k.Place(skip)
		f.storeOwn(acc, f.matrix(dq, bm, tq, dim), q0, tq)
	})
	return f.k
}

// flashBackwardKV writes flash_bwd_<which>_f32_<dim>[_drop], which "dk"
// or "dv".
func flashBackwardKV(dim int, which string, drop bool) *ptx.Kernel {
	f := newFlashF32(Name("flash_bwd", which), dim, drop)
	k := f.k
	out := k.ParamPtr("out")
	q, kk, v, do := k.ParamPtr("q"), k.ParamPtr("k"), k.ParamPtr("v"), k.ParamPtr("do")
	lse, delta := k.ParamPtr("lse"), k.ParamPtr("delta")
	tq, tk, nb, blocks := k.Param("tq", ptx.U64), k.Param("tk", ptx.U64), paramDivisor(k, "nb"), k.Param("blocks", ptx.U64)
	scale2, scale, causal := k.Param("scale2", ptx.F32), k.Param("scale", ptx.F32), k.Param("causal", ptx.U64)
	f.dropParams()
	f.start()
	lseT, deltaT := f.scalars, k.Reg(ptx.U64)
	k.Op("add.s64 %s, %s, %d", deltaT, lseT, 4*FlashBlock)
	f.blocks(blocks, nb, func(bm, j0 ptx.Reg) {
		qm, dom := f.matrix(q, bm, tq, dim), f.matrix(do, bm, tq, dim)
		j := addU64(k, j0, f.row64)
		kr := f.ownRow(f.matrix(kk, bm, tk, dim), j0, tk, scale2) // scores in base 2
		var vr []ptx.Reg
		if which == "dk" {
			vr = f.ownRow(f.matrix(v, bm, tk, dim), j0, tk, ptx.Reg{})
		}
		acc := f.zeros()
		f.tiles(f.causalStart(causal, j0), tq, func(i0, count ptx.Reg) {
			f.move(true, f.a, dim, qm, i0, tq)
			f.move(true, f.b, dim, dom, i0, tq)
			// The tile's lse (base 2) and δ, a thread each of the first
			// FlashBlock.
			tid64 := k.Reg(ptx.U64)
			k.Op("cvt.u64.u32 %s, %s", tid64, f.tid)
			ii, in, first := addU64(k, i0, tid64), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
			l2, dl := k.Reg(ptx.F32), k.Reg(ptx.F32)
			k.Op("mov.f32 %s, 0f00000000", l2)
			k.Op("mov.f32 %s, 0f00000000", dl)
			k.Op("setp.lt.u64 %s, %s, %s", in, ii, tq)
			k.Op("setp.lt.u32 %s, %s, %d", first, f.tid, FlashBlock)
			k.Op("and.pred %s, %s, %s", in, in, first)
			read, stored := k.Label("scalars_read"), k.Label("scalars_stored")
			k.Op("@!%s bra %s", in, read)
			row := k.Reg(ptx.U64)
			k.Op("mad.lo.s64 %s, %s, %s, %s", row, bm, tq, ii)
			k.Op("ld.global.f32 %s, [%s]", l2, k.Addr(lse, row, 4))
			k.Op("mul.rn.f32 %s, %s, %s", l2, l2, ptx.Imm(ptx.F32, math.Log2E))
			k.Op("ld.global.f32 %s, [%s]", dl, k.Addr(delta, row, 4))
			k.Place(read)
			k.Op("@!%s bra %s", first, stored)
			k.Op("st.shared.f32 [%s], %s", f.rowAddr(lseT, 1, f.tid), l2)
			k.Op("st.shared.f32 [%s], %s", f.rowAddr(deltaT, 1, f.tid), dl)
			k.Place(stored)
			f.sync()
			from := f.causalFirst(causal, j, i0)
			k.Op("add.u32 %s, %s, %s", from, from, f.sub)
			f.upTo(from, count, func(r ptx.Reg) {
				s, lr := f.dot(kr, f.a, r), k.Reg(ptx.F32)
				k.Op("ld.shared.f32 %s, [%s]", lr, f.rowAddr(lseT, 1, r))
				k.Op("sub.rn.f32 %s, %s, %s", s, s, lr)
				p := f.ex2(s)
				var query ptx.Reg // the tile's query r, in the matrix
				if f.dropTwin {
					r64 := k.Reg(ptx.U64)
					k.Op("cvt.u64.u32 %s, %s", r64, r)
					query = addU64(k, i0, r64)
				}
				if which == "dv" {
					f.dropWeight(p, bm, tq, tk, query, j)
					f.axpy(acc, p, f.b, r)
					return
				}
				dp, dr := f.dot(vr, f.b, r), k.Reg(ptx.F32)
				f.dropWeight(dp, bm, tq, tk, query, j)
				k.Op("ld.shared.f32 %s, [%s]", dr, f.rowAddr(deltaT, 1, r))
				k.Op("sub.rn.f32 %s, %s, %s", dp, dp, dr)
				k.Op("mul.rn.f32 %s, %s, %s", dp, dp, p) // dS
				f.axpy(acc, dp, f.a, r)
			})
			f.sync()
		})
		f.groupSum(acc...)
		if which == "dk" {
			f.scaled(acc, scale)
		}
		f.storeOwn(acc, f.matrix(out, bm, tk, dim), j0, tk)
	})
	return f.k
}
