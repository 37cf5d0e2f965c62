package kernels

import (
	"math"
	mbits "math/bits"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Reduce kernels fold x viewed as [outer, mid, inner] over mid (the
// backend makes the reduced dimensions one block first), deterministically:
// the order of every fold is fixed by the shapes and the block size, never
// by scheduling. A long mid is folded in parts, chunk elements each: the
// kernels write [outer, parts, inner] partial results, which the backend
// folds again (ReduceParts), so that a whole-tensor sum fills the GPU
// instead of one multiprocessor.
//
//   - reduce_rows_<kind>_<dtype> (out, x, rows, mid, chunk, parts, count),
//     for inner = 1: a block per (row, part) (grid-stride over rows·parts),
//     each of its ReduceBlock threads folds the elements t, t+ReduceBlock,
//     ... of its part of the row, then a tree in shared memory combines
//     the threads' partials.
//   - reduce_cols_<kind>_<dtype> (out, x, n, mid, chunk, parts, inner,
//     count): a thread per output element (n = outer·parts·inner) folds
//     its part of its column in order.
//   - reduce_colsb_<kind>_<dtype> (out, x, groups, mid, inner, gpr,
//     count): a block per group of 32 neighbouring columns of one outer
//     index (gpr groups an outer index: inner over 32, rounded up), for
//     folds of at most ReduceColBlockRows: each warp's lanes fold rows
//     warp, warp+8, ... of their columns (a row's 32 columns one 128-byte
//     load of the warp), and the first warp adds the eight warps'
//     partials in order (a lane folds at most 16 rows, so that the
//     launch has a thread for every 16 elements). A longer fold goes in
//     cols passes first, the first of them cut for about
//     ReduceColThreads threads: the bias gradient of 32 channels over 128
//     images of 28x28 (100352 rows) takes three launches, where chunks of
//     ReduceColChunk took five.
//
// Kinds: sum, mean (sum / count: NaN for count = 0), max, min (NaN
// propagates, as the CPU's), prod. Integers wrap as the CPU's do. parts
// and inner are divisor parameters (Divisor).

// ReduceParts returns how a fold of mid elements is split: into parts of
// chunk elements (the last shorter), parts = 1 where mid is at most
// limit. It depends on the shapes alone, so the order of the sums does
// too.
func ReduceParts(mid, limit int) (chunk, parts int) {
	if mid <= limit {
		return mid, 1
	}
	return limit, (mid + limit - 1) / limit
}

// The parts' sizes: a row part gives each of a block's threads 16
// elements; a column part is folded by one thread.
const (
	ReduceRowChunk = 16 * ReduceBlock
	ReduceColChunk = 16
)

// ReduceBlock is the threads per block of the row kernels (a power of 2).
const ReduceBlock = 256

// ReduceColBlockRows is the longest fold reduce_colsb takes: each of a
// block's eight warps folds at most 16 rows. ReduceColThreads is the
// threads a first cols pass aims at.
const (
	ReduceColBlockRows = 128
	ReduceColThreads   = 65536
)

// ReduceKinds lists the reductions per dtype (mean is for floats).
func ReduceKinds(d DType) []string {
	if d.float() {
		return []string{"sum", "mean", "max", "min", "prod"}
	}
	return []string{"sum", "max", "min", "prod"}
}

func reduceKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range Numeric {
		for _, kind := range ReduceKinds(d) {
			out = append(out, reduceRows(kind, d, d), reduceCols(kind, d, d), reduceColsBlock(kind, d, d))
		}
	}
	// The half types fold in float32: a single pass from the half type
	// to it, and for longer folds a first pass into float32 partials and
	// a last from float32 partials (ReduceIO names them).
	for _, d := range Halves {
		for _, kind := range ReduceKinds(F32) {
			for _, io := range [][2]DType{{d, d}, {d, F32}, {F32, d}} {
				out = append(out, reduceRows(kind, io[0], io[1]), reduceCols(kind, io[0], io[1]), reduceColsBlock(kind, io[0], io[1]))
			}
		}
	}
	return out
}

// ReduceIO is the name's suffix of the reduce kernels reading in and
// writing out: the dtype, or both where they differ.
func ReduceIO(in, out DType) string {
	if in == out {
		return string(in)
	}
	return Name(string(in), string(out))
}

// reduceInit is the identity of kind in d, as an immediate.
func reduceInit(kind string, d DType) string {
	switch {
	case kind == "prod":
		return ptx.Imm(d.reg(), 1)
	case kind == "max" && d.float():
		return ptx.Imm(d.reg(), math.Inf(-1))
	case kind == "min" && d.float():
		return ptx.Imm(d.reg(), math.Inf(1))
	case kind == "max":
		return map[DType]string{S32: "-2147483648", S64: "-9223372036854775808", U8: "0"}[d]
	case kind == "min":
		return map[DType]string{S32: "2147483647", S64: "9223372036854775807", U8: "255"}[d]
	}
	return ptx.Imm(d.reg(), 0)
}

// reduceCombine folds y into acc (a fresh register).
func reduceCombine(k *ptx.Kernel, kind string, d DType, acc, y ptx.Reg) ptx.Reg {
	op := map[string]string{"sum": "add", "mean": "add", "max": "max", "min": "min", "prod": "mul"}[kind]
	return binaryOp(k, op, d, acc, y)
}

// reduceFinish divides a mean by count (a u64 register).
func reduceFinish(k *ptx.Kernel, kind string, d DType, acc, count ptx.Reg) ptx.Reg {
	if kind != "mean" {
		return acc
	}
	t := d.reg()
	n, r := k.Reg(t), k.Reg(t)
	k.Op("cvt.rn.%s.u64 %s, %s", t, n, count)
	k.Op("div.rn.%s %s, %s, %s", t, r, acc, n)
	return r
}

// mov copies src into the register dst of d.
func mov(k *ptx.Kernel, d DType, dst ptx.Reg, src any) {
	k.Op("mov.%s %s, %v", d.reg(), dst, src)
}

// part returns where part c of a fold of mid elements in chunks starts
// (c·chunk) and how many elements it has (u64).
func part(k *ptx.Kernel, c, mid, chunk ptx.Reg) (start, n ptx.Reg) {
	return chunkOf(k, ptx.U64, c, chunk, mid)
}

// chunkOf returns where chunk i of per positions starts (i·per) and how
// many positions it has (per, or what is left of total), in registers of
// type t (ptx.U32 or ptx.U64) as its operands are.
func chunkOf(k *ptx.Kernel, t ptx.Type, i, per, total ptx.Reg) (first, n ptx.Reg) {
	first, n = k.Reg(t), k.Reg(t)
	k.Op("mul.lo.%s %s, %s, %s", t, first, i, per)
	k.Op("sub.%s %s, %s, %s", t, n, total, first)
	k.Op("min.%s %s, %s, %s", t, n, n, per)
	return first, n
}

// reduceRows writes reduce_rows_<kind>_<ReduceIO(in, out)>: it reads in,
// folds in in's compute dtype and writes out (rounded once, for a half
// out).
func reduceRows(kind string, in, out DType) *ptx.Kernel {
	d := in.Compute()
	k := ptx.NewKernel(Name("reduce_rows", kind, ReduceIO(in, out)))
	o, x := k.ParamPtr("out"), k.ParamPtr("x")
	rows, mid, chunk := k.Param("rows", ptx.U64), k.Param("mid", ptx.U64), k.Param("chunk", ptx.U64)
	parts, count := paramDivisor(k, "parts"), k.Param("count", ptx.U64)
	b := newBlockRows(k, d.reg().Size())
	b.eachRow(rows, func(vrow ptx.Reg) {
		row, c := divmod(k, vrow, parts)
		start, n := part(k, c, mid, chunk)
		base := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", base, row, mid, start)
		acc := k.Reg(d.reg())
		mov(k, d, acc, reduceInit(kind, d))
		b.eachElem(n, func(j ptx.Reg) {
			at := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", at, base, j)
			mov(k, d, acc, reduceCombine(k, kind, d, acc, toCompute(k, in, load(k, in, k.Addr(x, at, in.Size())))))
		})
		r := b.tree(d.reg(), acc, func(a, c ptx.Reg) ptx.Reg { return reduceCombine(k, kind, d, a, c) })
		b.first(func() {
			store(k, out, k.Addr(o, vrow, out.Size()), fromCompute(k, out, reduceFinish(k, kind, d, r, count)))
		})
	})
	return k
}

// blockRows writes kernels that give a block to each row: a grid-stride
// loop over rows, a block-stride loop over a row's elements, and a tree
// across the block in shared memory.
type blockRows struct {
	k              *ptx.Kernel
	tid, ntid, sh  ptx.Reg // sh: ReduceBlock slots of slot bytes
	row, rowStride ptx.Reg
	// warps, where the kernel's rows may be a warp's (newRowGroups):
	// true where they are, and tree then ends with the warp's butterfly.
	warps *ptx.Reg
}

func newBlockRows(k *ptx.Kernel, slot int) *blockRows {
	b := &blockRows{k: k, sh: k.Shared("partials", ReduceBlock*slot, slot)}
	regs := make([]ptx.Reg, 4)
	for i, sr := range []string{"tid", "ntid", "ctaid", "nctaid"} {
		r32 := k.Reg(ptx.U32)
		k.Op("mov.u32 %s, %%%s.x", r32, sr)
		regs[i] = k.Reg(ptx.U64)
		k.Op("cvt.u64.u32 %s, %s", regs[i], r32)
	}
	b.tid, b.ntid, b.row, b.rowStride = regs[0], regs[1], regs[2], regs[3]
	return b
}

// The row kernels of newRowGroups give a warp to each row of at most
// RowGroupMax elements where there are RowGroupRows rows or more (a
// warp's 32 threads a row keep 32768 threads busy then); fewer or longer
// rows take a block each, their elements spread over more threads.
const (
	RowGroupMax  = 1024
	RowGroupRows = 1024
)

// RowGroupShift is the groupShift argument of a newRowGroups kernel over
// rows rows of n elements: log2 of the threads a row (5, a warp:
// ReduceBlock/32 rows a block; or log2 ReduceBlock, the block).
func RowGroupShift(rows, n int) int {
	if n <= RowGroupMax && rows >= RowGroupRows {
		return 5
	}
	return mbits.TrailingZeros(ReduceBlock)
}

// newRowGroups is newBlockRows for kernels whose rows may be short (a
// norm's features, a softmax's classes, a query's keys): a parameter after
// the kernel's own, groupShift (RowGroupShift), gives each row 1 <<
// groupShift threads: a warp, whose tree is its butterfly alone (no
// shared memory, no barrier), or the block. A row of a few hundred
// elements spread over a block left each thread one or two of them and
// the block's two barriers a reduction. Every thread of a group takes the
// same rows, so a warp's shuffles find all of its lanes.
func newRowGroups(k *ptx.Kernel, slot int) *blockRows {
	shift := k.Param("groupShift", ptx.U64)
	b := newBlockRows(k, slot)
	s32, group, in, per := k.Reg(ptx.U32), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u32.u64 %s, %s", s32, shift)
	k.Op("mov.u64 %s, 1", group)
	k.Op("shl.b64 %s, %s, %s", group, group, s32)
	k.Op("shr.u64 %s, %s, %s", in, b.tid, s32)   // the block's row of this thread
	k.Op("shr.u64 %s, %s, %s", per, b.ntid, s32) // rows a block
	lane, row, stride := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("sub.s64 %s, %s, 1", lane, group)
	k.Op("and.b64 %s, %s, %s", lane, b.tid, lane)
	k.Op("mad.lo.s64 %s, %s, %s, %s", row, b.row, per, in)
	k.Op("mul.lo.s64 %s, %s, %s", stride, b.rowStride, per)
	warps := k.Reg(ptx.Pred)
	k.Op("setp.lt.u64 %s, %s, %s", warps, group, b.ntid)
	b.tid, b.ntid, b.row, b.rowStride, b.warps = lane, group, row, stride, &warps
	return b
}

// eachRow runs body for the rows of this block (uniform across it).
func (b *blockRows) eachRow(rows ptx.Reg, body func(row ptx.Reg)) {
	b.k.Loop(b.row, rows, b.rowStride, body)
}

// eachElem runs body for this thread's elements of a row of n.
func (b *blockRows) eachElem(n ptx.Reg, body func(j ptx.Reg)) { b.k.Loop(b.tid, n, b.ntid, body) }

// tree combines every thread's v (of type t) and returns the result in
// every thread; its last barrier frees the slots for reuse. A warp
// combines its lanes' values by shuffles (a butterfly: lane i with lane i
// xor 16, 8, 4, 2, 1), its lane 0 leaves the warp's result in shared
// memory, and the first warp combines the blocks' warps the same way: no
// barrier but the two around the warps' results, and the order fixed, as
// before, by the block size alone. Blocks are ReduceBlock threads.
func (b *blockRows) tree(t ptx.Type, v ptx.Reg, combine func(a, c ptx.Reg) ptx.Reg) ptx.Reg {
	const warps = ReduceBlock / 32
	k, size := b.k, t.Size()
	v = warpCombine(k, t, v, 32, combine)
	var r ptx.Reg
	var rowsOfWarps string
	if b.warps != nil { // a warp's row is combined: every lane holds it
		r, rowsOfWarps = k.Reg(t), k.Label("row_of_a_warp")
		k.Op("mov.%s %s, %s", t, r, v)
		k.Op("@%s bra %s", *b.warps, rowsOfWarps)
	}
	lane, warp, p := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("and.b64 %s, %s, 31", lane, b.tid)
	k.Op("shr.u64 %s, %s, 5", warp, b.tid)
	slot := k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, %d, %s", slot, warp, size, b.sh)
	skip := k.Label("warp_result")
	k.Op("setp.ne.u64 %s, %s, 0", p, lane)
	k.Op("@%s bra %s", p, skip)
	k.Op("st.shared.%s [%s], %s", t, slot, v)
	k.Place(skip)
	k.Op("bar.sync 0")
	// The first warp: lane i (< warps) takes warp i's result; the other
	// lanes take any result (they combine only among themselves: the
	// butterfly's offsets stay below warps).
	others := k.Label("others")
	k.Op("setp.ne.u64 %s, %s, 0", p, warp)
	k.Op("@%s bra %s", p, others)
	from, w := k.Reg(ptx.U64), k.Reg(t)
	k.Op("and.b64 %s, %s, %d", from, lane, warps-1)
	k.Op("mad.lo.s64 %s, %s, %d, %s", from, from, size, b.sh)
	k.Op("ld.shared.%s %s, [%s]", t, w, from)
	w = warpCombine(k, t, w, warps, combine)
	k.Op("bar.sync 0") // every read of the warps' results is done
	done := k.Label("combined")
	k.Op("setp.ne.u64 %s, %s, 0", p, lane)
	k.Op("@%s bra %s", p, done)
	k.Op("st.shared.%s [%s], %s", t, b.sh, w)
	k.Op("bra.uni %s", done)
	k.Place(others)
	k.Op("bar.sync 0")
	k.Place(done)
	k.Op("bar.sync 0")
	if b.warps == nil {
		r = k.Reg(t)
	}
	k.Op("ld.shared.%s %s, [%s]", t, r, b.sh)
	k.Op("bar.sync 0")
	if b.warps != nil {
		k.Place(rowsOfWarps)
	}
	return r
}

// warpCombine combines v across groups of width lanes (a power of two up
// to 32) by a shuffle butterfly, offsets width/2 down to 1: every lane of
// a group ends with the group's result, combined in the same order in
// every lane.
func warpCombine(k *ptx.Kernel, t ptx.Type, v ptx.Reg, width int, combine func(a, c ptx.Reg) ptx.Reg) ptx.Reg {
	for off := width / 2; off >= 1; off /= 2 {
		v = combine(v, shuffleXor(k, t, v, off))
	}
	return v
}

// shuffleXor is v from lane (this lane xor off) of the warp: one
// shfl.sync for 32-bit types, two for 64-bit ones (the halves).
func shuffleXor(k *ptx.Kernel, t ptx.Type, v ptx.Reg, off int) ptx.Reg {
	if t.Size() == 4 {
		r := k.Reg(t)
		k.Op("shfl.sync.bfly.b32 %s, %s, %d, 31, 0xffffffff", r, v, off)
		return r
	}
	bits := v
	if t == ptx.F64 {
		bits = k.Reg(ptx.U64)
		k.Op("mov.b64 %s, %s", bits, v)
	}
	lo, hi, hi64 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U64)
	k.Op("cvt.u32.u64 %s, %s", lo, bits)
	k.Op("shr.u64 %s, %s, 32", hi64, bits)
	k.Op("cvt.u32.u64 %s, %s", hi, hi64)
	k.Op("shfl.sync.bfly.b32 %s, %s, %d, 31, 0xffffffff", lo, lo, off)
	k.Op("shfl.sync.bfly.b32 %s, %s, %d, 31, 0xffffffff", hi, hi, off)
	got, lo64 := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", got, hi)
	k.Op("shl.b64 %s, %s, 32", got, got)
	k.Op("cvt.u64.u32 %s, %s", lo64, lo)
	k.Op("or.b64 %s, %s, %s", got, got, lo64)
	if t != ptx.F64 {
		return got
	}
	r := k.Reg(t)
	k.Op("mov.b64 %s, %s", r, got)
	return r
}

// first runs body in thread 0 only.
func (b *blockRows) first(body func()) {
	k := b.k
	p, skip := k.Reg(ptx.Pred), k.Label("first")
	k.Op("setp.ne.u64 %s, %s, 0", p, b.tid)
	k.Op("@%s bra %s", p, skip)
	body()
	k.Place(skip)
}

// reduceCols is reduceRows for folds along a dimension other than the
// last.
func reduceCols(kind string, from, to DType) *ptx.Kernel {
	d := from.Compute()
	k := ptx.NewKernel(Name("reduce_cols", kind, ReduceIO(from, to)))
	o, x := k.ParamPtr("out"), k.ParamPtr("x")
	n, mid, chunk := k.Param("n", ptx.U64), k.Param("mid", ptx.U64), k.Param("chunk", ptx.U64)
	parts, innerD, count := paramDivisor(k, "parts"), paramDivisor(k, "inner"), k.Param("count", ptx.U64)
	inner := innerD.v
	k.GridStride(n, func(i ptx.Reg) {
		at := k.Reg(ptx.U64)
		q, in := divmod(k, i, innerD)
		outer, c := divmod(k, q, parts)
		start, cnt := part(k, c, mid, chunk)
		k.Op("mad.lo.s64 %s, %s, %s, %s", at, outer, mid, start)
		k.Op("mad.lo.s64 %s, %s, %s, %s", at, at, inner, in) // (outer·mid + start)·inner + in
		acc := k.Reg(d.reg())
		mov(k, d, acc, reduceInit(kind, d))
		m := k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 0", m)
		p := k.Reg(ptx.Pred)
		loop, done := k.Label("col"), k.Label("col_done")
		k.Place(loop)
		k.Op("setp.ge.u64 %s, %s, %s", p, m, cnt)
		k.Op("@%s bra %s", p, done)
		mov(k, d, acc, reduceCombine(k, kind, d, acc, toCompute(k, from, load(k, from, k.Addr(x, at, from.Size())))))
		k.Op("add.s64 %s, %s, %s", at, at, inner)
		k.Op("add.s64 %s, %s, 1", m, m)
		k.Op("bra.uni %s", loop)
		k.Place(done)
		store(k, to, k.Addr(o, i, to.Size()), fromCompute(k, to, reduceFinish(k, kind, d, acc, count)))
	})
	return k
}

// reduceColsBlock writes reduce_colsb_<kind>_<ReduceIO(from, to)>.
func reduceColsBlock(kind string, from, to DType) *ptx.Kernel {
	const warps = ReduceBlock / 32
	d := from.Compute()
	t := d.reg()
	k := ptx.NewKernel(Name("reduce_colsb", kind, ReduceIO(from, to)))
	o, x := k.ParamPtr("out"), k.ParamPtr("x")
	groups, mid, inner := k.Param("groups", ptx.U64), k.Param("mid", ptx.U64), k.Param("inner", ptx.U64)
	gpr, count := paramDivisor(k, "gpr"), k.Param("count", ptx.U64)
	b := newBlockRows(k, t.Size()) // ReduceBlock slots: [warps][32]
	lane, warp, step := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("and.b64 %s, %s, 31", lane, b.tid)
	k.Op("shr.u64 %s, %s, 5", warp, b.tid)
	k.Op("mov.u64 %s, %d", step, warps)
	slot := k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, %d, %s", slot, b.tid, t.Size(), b.sh) // [warp][lane]
	b.eachRow(groups, func(g ptx.Reg) {
		outer, gi := divmod(k, g, gpr)
		col, valid := k.Reg(ptx.U64), k.Reg(ptx.Pred)
		k.Op("mad.lo.s64 %s, %s, 32, %s", col, gi, lane)
		k.Op("setp.lt.u64 %s, %s, %s", valid, col, inner)
		acc := k.Reg(t)
		mov(k, d, acc, reduceInit(kind, d))
		skip := k.Label("colsb_lane")
		k.Op("@!%s bra %s", valid, skip)
		base := k.Reg(ptx.U64) // x index of (outer, 0, col)
		k.Op("mul.lo.s64 %s, %s, %s", base, outer, mid)
		k.Op("mul.lo.s64 %s, %s, %s", base, base, inner)
		k.Op("add.s64 %s, %s, %s", base, base, col)
		k.Loop(warp, mid, step, func(m ptx.Reg) {
			at := k.Reg(ptx.U64)
			k.Op("mad.lo.s64 %s, %s, %s, %s", at, m, inner, base)
			mov(k, d, acc, reduceCombine(k, kind, d, acc, toCompute(k, from, load(k, from, k.Addr(x, at, from.Size())))))
		})
		k.Place(skip)
		k.Op("st.shared.%s [%s], %s", t, slot, acc)
		k.Op("bar.sync 0")
		p, done := k.Reg(ptx.Pred), k.Label("colsb_done")
		k.Op("setp.ne.u64 %s, %s, 0", p, warp)
		k.Op("@%s bra %s", p, done)
		k.Op("@!%s bra %s", valid, done)
		r := k.Reg(t)
		k.Op("ld.shared.%s %s, [%s]", t, r, slot)
		for w := 1; w < warps; w++ {
			v := k.Reg(t)
			k.Op("ld.shared.%s %s, [%s+%d]", t, v, slot, w*32*t.Size())
			mov(k, d, r, reduceCombine(k, kind, d, r, v))
		}
		at := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", at, outer, inner, col)
		store(k, to, k.Addr(o, at, to.Size()), fromCompute(k, to, reduceFinish(k, kind, d, r, count)))
		k.Place(done)
		k.Op("bar.sync 0") // the slots are read before the next group's
	})
	return k
}
