package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Copy kernels move elements without looking at them:
//   - copy_b8, copy_b16, copy_b32, copy_b64 (dst, src, n, g): element i of the box
//     g.shape (row-major) goes from src[g.off1 + Σ c_d g.stride1[d]] to
//     dst[g.off0 + Σ c_d g.stride0[d]]; the device's strided Copy.
//   - transpose_b8, _b16, _b32, _b64 (dst, src, rows, cols,
//     dbatch, drow, sbatch, scol, doff, soff): for each batch z (grid z),
//     dst[doff + z dbatch + r drow + c] = src[soff + z sbatch + r + c scol]
//     over rows x cols: a copy whose source runs along the rows and whose
//     destination runs along the columns, as a transpose's does. Blocks of
//     TransposeTile x TransposeRows threads move TransposeTile² tiles
//     through shared memory, so that both the reads and the writes of a
//     warp are contiguous; the strided copy's warps would read one element
//     per sector.
//   - fill_b16, fill_b64 (dst, n, v): n 2- or 8-byte elements set to v
//     (memsets do 1 and 4 bytes).
//   - dyn_copy_<b8|b16|b32|b64>_<s32|s64> (dst, src, n, g, starts, dyn):
//     copy_<b>'s box, one operand's offset moved by start positions read
//     on the device (DynamicSlice's and DynamicUpdateSlice's, XLA's
//     clamping): Σ_d clamp(starts[d], 0, bound[d])·stride[d] over the
//     DynCopy layout of dyn, computed once a thread, added to the
//     destination's offset (side 0) or the source's (side 1). No read on
//     the host, so a recording holds it (a loop's step a position).
//   - add_s64_at (at, delta): at[0] += delta, one thread (a stack's
//     count, beside dyn_copy's pushes and pops).
//   - add_s64_at_limit (at, delta, limit, peak, over): add_s64_at, and
//     where the new count c passes limit, peak[0] = max(peak[0], c) and
//     the byte over[0] = 1 (a stack pushed past its buffer: dyn_copy's
//     clamp kept the copy inside it, the flag says the values are lost).

// The transpose's tile: TransposeTile² elements, moved by TransposeTile x
// TransposeRows threads.
const (
	TransposeTile = 32
	TransposeRows = 8
)

var copyTypes = []struct {
	name string
	t    ptx.Type
}{{"b8", ptx.U8}, {"b16", ptx.U16}, {"b32", ptx.U32}, {"b64", ptx.U64}}

func copyKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, ct := range copyTypes {
		k := ptx.NewKernel(Name("copy", ct.name))
		dst, src := k.ParamPtr("dst"), k.ParamPtr("src")
		n := k.Param("n", ptx.U64)
		g := k.ParamBytes("g", GeometrySize)
		k.GridStride(n, func(i ptx.Reg) {
			off := offsets(k, g, i, 2)
			v := k.Load(ct.t, k.Addr(src, off[1], ct.t.Size()))
			k.Store(ct.t, k.Addr(dst, off[0], ct.t.Size()), v)
		})
		out = append(out, k)
	}
	for _, ct := range copyTypes {
		out = append(out, transposeKernel(ct.name, ct.t))
		for _, idx := range []DType{S32, S64} {
			out = append(out, dynCopyKernel(ct.name, ct.t, idx))
		}
	}
	add := ptx.NewKernel(AddAt)
	at, delta := add.ParamPtr("at"), add.Param("delta", ptx.S64)
	v := add.Load(ptx.S64, at)
	add.Op("add.s64 %s, %s, %s", v, v, delta)
	add.Store(ptx.S64, at, v)
	out = append(out, add, addAtLimitKernel())
	for _, ct := range []struct {
		name  string
		t, pt ptx.Type // the element's and the value parameter's
	}{{"b16", ptx.U16, ptx.U32}, {"b64", ptx.U64, ptx.U64}} {
		k := ptx.NewKernel(Name("fill", ct.name))
		dst := k.ParamPtr("dst")
		n := k.Param("n", ptx.U64)
		v := k.Param("v", ct.pt)
		k.GridStride(n, func(i ptx.Reg) { k.Store(ct.t, k.Addr(dst, i, ct.t.Size()), v) })
		out = append(out, k)
	}
	return out
}

// AddAt is the kernel adding to an Int64 on the device; AddAtLimit adds
// and marks a count past a limit.
const (
	AddAt      = "add_s64_at"
	AddAtLimit = "add_s64_at_limit"
)

// addAtLimitKernel is add_s64_at_limit.
func addAtLimitKernel() *ptx.Kernel {
	k := ptx.NewKernel(AddAtLimit)
	at, delta := k.ParamPtr("at"), k.Param("delta", ptx.S64)
	limit := k.Param("limit", ptx.S64)
	peak, over := k.ParamPtr("peak"), k.ParamPtr("over")
	v := k.Load(ptx.S64, at)
	k.Op("add.s64 %s, %s, %s", v, v, delta)
	k.Store(ptx.S64, at, v)
	within := k.Reg(ptx.Pred)
	k.Op("setp.le.s64 %s, %s, %s", within, v, limit)
	done := k.Label("within")
	k.Op("@%s bra %s", within, done)
	p := k.Load(ptx.S64, peak)
	k.Op("max.s64 %s, %s, %s", p, p, v)
	k.Store(ptx.S64, peak, p)
	// A 32-bit register: st.u8 may store from a wider one, mov.u16 may not.
	one := k.Reg(ptx.U32)
	k.Op("mov.u32 %s, 1", one)
	k.Op("st.global.u8 [%s], %s", over, one)
	k.Place(done)
	return k
}

// The dyn parameter of dyn_copy: the rank, the side the starts move, and
// per dimension the largest start (the operand's size less the box's)
// and the moved operand's stride.
const (
	dynRank      = 0
	dynSide      = 8
	dynDims      = 16 // per dimension: bound u64, stride u64
	DynCopySize  = dynDims + 16*MaxRank
	DynCopyDst   = 0
	DynCopySrc   = 1
	dynCopyParam = "dyn"
)

// DynCopy fills dyn_copy's dyn parameter: the starts move the
// destination's offset (side DynCopyDst) or the source's (DynCopySrc),
// each clamped into [0, bounds[d]], times strides[d].
func DynCopy(side int, bounds, strides []int) []byte {
	if len(bounds) > MaxRank || len(strides) != len(bounds) {
		panic(fmt.Sprintf("kernels: DynCopy of rank %d with %d strides", len(bounds), len(strides)))
	}
	b := make([]byte, DynCopySize)
	binary.LittleEndian.PutUint64(b[dynRank:], uint64(len(bounds)))
	binary.LittleEndian.PutUint64(b[dynSide:], uint64(side))
	for d := range bounds {
		binary.LittleEndian.PutUint64(b[dynDims+16*d:], uint64(max(bounds[d], 0)))
		binary.LittleEndian.PutUint64(b[dynDims+16*d+8:], uint64(int64(strides[d])))
	}
	return b
}

// dynCopyKernel writes dyn_copy_<name>_<idx> (see the family's comment).
func dynCopyKernel(name string, t ptx.Type, idx DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("dyn_copy", name, string(idx)))
	dst, src := k.ParamPtr("dst"), k.ParamPtr("src")
	n := k.Param("n", ptx.U64)
	g := k.ParamBytes("g", GeometrySize)
	starts := k.ParamPtr("starts")
	k.ParamBytes(dynCopyParam, DynCopySize)
	// The moved offset, once: each dimension's start clamped, times its
	// stride.
	rank, dyn := k.LoadField(dynCopyParam, dynRank), k.Reg(ptx.S64)
	k.Op("mov.s64 %s, 0", dyn)
	done, p := k.Label("dyn"), k.Reg(ptx.Pred)
	for d := 0; d < MaxRank; d++ {
		k.Op("setp.le.u64 %s, %s, %d", p, rank, d)
		k.Op("@%s bra %s", p, done)
		v := k.Reg(ptx.S64)
		if idx == S32 {
			w := k.Reg(ptx.S32)
			k.Op("ld.global.s32 %s, [%s+%d]", w, starts, 4*d)
			k.Op("cvt.s64.s32 %s, %s", v, w)
		} else {
			k.Op("ld.global.s64 %s, [%s+%d]", v, starts, 8*d)
		}
		k.Op("max.s64 %s, %s, 0", v, v)
		k.Op("min.s64 %s, %s, %s", v, v, k.LoadField(dynCopyParam, dynDims+16*d))
		k.Op("mad.lo.s64 %s, %s, %s, %s", dyn, v, k.LoadField(dynCopyParam, dynDims+16*d+8), dyn)
	}
	k.Place(done)
	side := k.LoadField(dynCopyParam, dynSide)
	toDst, toSrc := k.Reg(ptx.S64), k.Reg(ptx.S64)
	k.Op("setp.eq.u64 %s, %s, %d", p, side, DynCopyDst)
	k.Op("selp.b64 %s, %s, 0, %s", toDst, dyn, p)
	k.Op("selp.b64 %s, 0, %s, %s", toSrc, dyn, p)
	k.GridStride(n, func(i ptx.Reg) {
		off := offsets(k, g, i, 2)
		k.Op("add.s64 %s, %s, %s", off[0], off[0], toDst)
		k.Op("add.s64 %s, %s, %s", off[1], off[1], toSrc)
		v := k.Load(t, k.Addr(src, off[1], t.Size()))
		k.Store(t, k.Addr(dst, off[0], t.Size()), v)
	})
	return k
}

// transposeKernel writes transpose_<name> for elements of type t.
func transposeKernel(name string, t ptx.Type) *ptx.Kernel {
	k := ptx.NewKernel(Name("transpose", name))
	dst, src := k.ParamPtr("dst"), k.ParamPtr("src")
	rows, cols := k.Param("rows", ptx.U32), k.Param("cols", ptx.U32)
	dbatch, drow := k.Param("dbatch", ptx.U64), k.Param("drow", ptx.U64)
	sbatch, scol := k.Param("sbatch", ptx.U64), k.Param("scol", ptx.U64)
	doff, soff := k.Param("doff", ptx.U64), k.Param("soff", ptx.U64)
	const pitch = TransposeTile + 1 // a padded tile row: the column reads hit 32 banks
	size := t.Size()
	tile := k.Shared("tile", TransposeTile*pitch*size, max(size, 4))
	tx, ty, bx, by, bz := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	for _, r := range []struct {
		reg ptx.Reg
		sp  string
	}{{tx, "%tid.x"}, {ty, "%tid.y"}, {bx, "%ctaid.x"}, {by, "%ctaid.y"}, {bz, "%ctaid.z"}} {
		k.Op("mov.u32 %s, %s", r.reg, r.sp)
	}
	// The batch's element offsets in both tensors.
	z := k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", z, bz)
	k.Op("mad.lo.s64 %s, %s, %s, %s", doff, z, dbatch, doff)
	k.Op("mad.lo.s64 %s, %s, %s, %s", soff, z, sbatch, soff)
	r0, c0 := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("shl.b32 %s, %s, 5", r0, by)
	k.Op("shl.b32 %s, %s, 5", c0, bx)
	p, q := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	// shared returns the address of tile[i][j].
	shared := func(i, j ptx.Reg) ptx.Reg {
		e, a := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("mad.lo.u32 %s, %s, %d, %s", e, i, pitch, j)
		k.Op("mul.wide.u32 %s, %s, %d", a, e, size)
		k.Op("add.s64 %s, %s, %s", a, a, tile)
		return a
	}
	// pass runs body for the tile's elements of thread (tx, ty) within the
	// bounds: fixed coordinate f0+tx (< flimit), varying v0+ty+8i (<
	// vlimit); body gets ty+8i and the element's offset base + v·stride +
	// f (f the contiguous direction across the warp).
	pass := func(f0, flimit, v0, vlimit, stride, base ptx.Reg, body func(j, off ptx.Reg)) {
		f, f64 := k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("add.u32 %s, %s, %s", f, f0, tx)
		k.Op("setp.lt.u32 %s, %s, %s", p, f, flimit)
		k.Op("cvt.u64.u32 %s, %s", f64, f)
		for i := 0; i < TransposeTile/TransposeRows; i++ {
			j, v := k.Reg(ptx.U32), k.Reg(ptx.U32)
			k.Op("add.u32 %s, %s, %d", j, ty, TransposeRows*i)
			k.Op("add.u32 %s, %s, %s", v, v0, j)
			k.Op("setp.lt.u32 %s, %s, %s", q, v, vlimit)
			k.Op("and.pred %s, %s, %s", q, q, p)
			skip := k.Label("tile")
			k.Op("@!%s bra %s", q, skip)
			off, v64 := k.Reg(ptx.U64), k.Reg(ptx.U64)
			k.Op("cvt.u64.u32 %s, %s", v64, v)
			k.Op("mad.lo.s64 %s, %s, %s, %s", off, v64, stride, base)
			k.Op("add.s64 %s, %s, %s", off, off, f64)
			body(j, off)
			k.Place(skip)
		}
	}
	// Read: thread (tx, ty) takes row r0+tx of columns c0+ty+8i (the
	// source runs along the rows) into tile[ty+8i][tx].
	pass(r0, rows, c0, cols, scol, soff, func(j, off ptx.Reg) {
		k.Op("st.shared.%s [%s], %s", t, shared(j, tx), k.Load(t, k.Addr(src, off, size)))
	})
	k.Op("bar.sync 0")
	// Write: thread (tx, ty) writes column c0+tx of rows r0+ty+8i (the
	// destination runs along the columns) from tile[tx][ty+8i].
	pass(c0, cols, r0, rows, drow, doff, func(j, off ptx.Reg) {
		v := k.Reg(t)
		k.Op("ld.shared.%s %s, [%s]", t, v, shared(tx, j))
		k.Store(t, k.Addr(dst, off, size), v)
	})
	return k
}
