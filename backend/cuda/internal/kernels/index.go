package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// Index kernels move slices by integer indices along one axis, with x
// viewed as [outer, n, inner] and the indices (idx, J of them, s32 or s64)
// picking along n. They check each index on the device (checkedIndex): a
// bad one gathers zero or updates nothing, and its position goes to the
// check slot err, which the backend reads at the next synchronisation.
//
//   - gather_<width>_<index dtype> (out, params, idx, err, outer, n, J,
//     inner): a thread per output element of [outer, J, inner].
//   - scatter_<width>_<index dtype> and scatter_add_<dtype>_<index dtype>
//     (out, idx, upd, err, outer, n, J, inner), out holding base already: a
//     thread per (outer, inner) column walks j = 0..J-1 in order, so a
//     repeated index takes the last update (scatter) or sums in order
//     (scatter_add), the same on every run, with no atomics.
//   - scatter_add_sorted_<dtype>_<index dtype> (out, perm, idx, upd, err,
//     outer, n, J, inner, per): the same sums where the columns are few
//     and J long (an embedding's gradient: a column a thread walked every
//     token, a chain of loads and stores through memory, 384 threads for
//     16384 tokens): perm, idx's stable sorting permutation (s64), makes
//     each run of equal indices a segment, and a thread per (outer, q,
//     inner) where q starts a segment sums that segment's updates in a
//     register, in perm's order (their positions' order), onto out: the
//     serial kernel's sums bit for bit.
//
// Widths are b8, b32 and b64, the element sizes moved without looking at
// them.

func indexKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, id := range []DType{S32, S64} {
		for _, ct := range copyTypes {
			out = append(out, gatherKernel(ct.name, ct.t, id), scatterKernel("scatter", ct.name, id, func(k *ptx.Kernel, old, upd ptx.Reg) ptx.Reg {
				return upd
			}, ct.t))
		}
		for _, d := range Numeric {
			out = append(out, scatterKernel("scatter_add", string(d), id, func(k *ptx.Kernel, old, upd ptx.Reg) ptx.Reg {
				return binaryOp(k, "add", d, old, upd)
			}, d.reg()), scatterAddSortedKernel(d, id))
		}
	}
	return out
}

// indexAt loads index j (of dtype id) as a 64-bit register.
func indexAt(k *ptx.Kernel, idx ptx.Reg, id DType, j ptx.Reg) ptx.Reg {
	v := load(k, id, k.Addr(idx, j, id.Size()))
	if id == S64 {
		return v
	}
	w := k.Reg(ptx.S64)
	k.Op("cvt.s64.s32 %s, %s", w, v)
	return w
}

// checkedIndex loads index j (dtype id) as a 64-bit register and checks
// it against bound: outside [0, bound) it leaves j in the check slot at
// errSlot where j is less than what the slot holds (atom.min: the slot
// ends with the first bad position, whatever the threads' order), and
// bad is set so that the caller skips the access. The backend reports the
// slot's position at the next synchronisation (checks.go).
func checkedIndex(k *ptx.Kernel, idx ptx.Reg, id DType, j, bound, errSlot ptx.Reg) (v, bad ptx.Reg) {
	v, bad = indexAt(k, idx, id, j), k.Reg(ptx.Pred)
	k.Op("setp.ge.u64 %s, %s, %s", bad, v, bound) // a negative index is a large unsigned one
	ok := k.Label("index_ok")
	k.Op("@!%s bra %s", bad, ok)
	old := k.Reg(ptx.U64)
	k.Op("atom.global.min.u64 %s, [%s], %s", old, errSlot, j)
	k.Place(ok)
	return v, bad
}

// slot is (o·rows + r)·inner + b.
func slot(k *ptx.Kernel, o, rows, r, inner, b ptx.Reg) ptx.Reg {
	a := k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, %s, %s", a, o, rows, r)
	k.Op("mad.lo.s64 %s, %s, %s, %s", a, a, inner, b)
	return a
}

func gatherKernel(width string, t ptx.Type, id DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("gather", width, string(id)))
	o, p, idx, errSlot := k.ParamPtr("out"), k.ParamPtr("params"), k.ParamPtr("idx"), k.ParamPtr("err")
	outer, n, nj, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("J", ptx.U64), paramDivisor(k, "inner")
	cells(k, outer, nj, inner, func(e, oi, j, b ptx.Reg) {
		v, bad := checkedIndex(k, idx, id, j, n, errSlot)
		val := k.Reg(t)
		k.Op("mov.%s %s, 0", bits(t), val) // a bad index gathers zero
		skip := k.Label("gathered")
		k.Op("@%s bra %s", bad, skip)
		k.Op("ld.global.%s %s, [%s]", t, val, k.Addr(p, slot(k, oi, n, v, inner.v, b), t.Size()))
		k.Place(skip)
		k.Store(t, k.Addr(o, e, t.Size()), val)
	})
	return k
}

// scatterKernel writes combine(out, update) at each index, in order; t is
// the register and memory type of the elements (u32 registers for bytes,
// stored as their low byte).
func scatterKernel(kind, elem string, id DType, combine func(k *ptx.Kernel, old, upd ptx.Reg) ptx.Reg, t ptx.Type) *ptx.Kernel {
	k := ptx.NewKernel(Name(kind, elem, string(id)))
	o, idx, u, errSlot := k.ParamPtr("out"), k.ParamPtr("idx"), k.ParamPtr("upd"), k.ParamPtr("err")
	outer, n, nj, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("J", ptx.U64), paramDivisor(k, "inner")
	mem := t
	if elem == "b8" || elem == string(U8) {
		mem = ptx.U8
	}
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		upTo(k, nj, func(j ptx.Reg) {
			v, bad := checkedIndex(k, idx, id, j, n, errSlot)
			skip := k.Label("scattered")
			k.Op("@%s bra %s", bad, skip) // a bad index updates nothing
			dst := k.Addr(o, slot(k, oi, n, v, inner.v, b), mem.Size())
			upd := k.Reg(t)
			k.Op("ld.global.%s %s, [%s]", mem, upd, k.Addr(u, slot(k, oi, nj, j, inner.v, b), mem.Size()))
			old := k.Reg(t)
			k.Op("ld.global.%s %s, [%s]", mem, old, dst)
			k.Op("st.global.%s [%s], %s", mem, dst, combine(k, old, upd))
			k.Place(skip)
		})
	})
	return k
}

func scatterAddSortedKernel(d, id DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("scatter_add_sorted", string(d), string(id)))
	o, perm, idx, u, errSlot := k.ParamPtr("out"), k.ParamPtr("perm"), k.ParamPtr("idx"), k.ParamPtr("upd"), k.ParamPtr("err")
	outer, n, nj, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("J", ptx.U64), paramDivisor(k, "inner")
	cells(k, outer, nj, inner, func(_, oi, q, b ptx.Reg) {
		done := k.Label("segment_done")
		p := load(k, S64, k.Addr(perm, q, 8))
		start, first := k.Label("segment_start"), k.Reg(ptx.Pred)
		k.Op("setp.eq.u64 %s, %s, 0", first, q)
		k.Op("@%s bra %s", first, start)
		before := k.Reg(ptx.U64)
		k.Op("sub.s64 %s, %s, 1", before, q)
		same := k.Reg(ptx.Pred)
		k.Op("setp.eq.s64 %s, %s, %s", same, indexAt(k, idx, id, load(k, S64, k.Addr(perm, before, 8))), indexAt(k, idx, id, p))
		k.Op("@%s bra %s", same, done) // inside a segment: its start's thread sums it
		k.Place(start)
		// The segment's first position is its smallest (a stable sort):
		// a bad index leaves it in the check slot, as the serial kernel
		// leaves the first bad position.
		v, bad := checkedIndex(k, idx, id, p, n, errSlot)
		k.Op("@%s bra %s", bad, done)
		dst := k.Addr(o, slot(k, oi, n, v, inner.v, b), d.mem().Size())
		acc := load(k, d, dst)
		r, end := k.Reg(ptx.U64), k.Reg(ptx.Pred)
		k.Op("mov.u64 %s, %s", r, q)
		top, stored := k.Label("segment_sum"), k.Label("segment_store")
		k.Place(top)
		k.Op("setp.ge.u64 %s, %s, %s", end, r, nj)
		k.Op("@%s bra %s", end, stored)
		pr := load(k, S64, k.Addr(perm, r, 8))
		k.Op("setp.ne.s64 %s, %s, %s", end, indexAt(k, idx, id, pr), v)
		k.Op("@%s bra %s", end, stored)
		sum := binaryOp(k, "add", d, acc, load(k, d, k.Addr(u, slot(k, oi, nj, pr, inner.v, b), d.mem().Size())))
		k.Op("mov.%s %s, %s", bits(d.reg()), acc, sum)
		k.Op("add.s64 %s, %s, 1", r, r)
		k.Op("bra.uni %s", top)
		k.Place(stored)
		store(k, d, dst, acc)
		k.Place(done)
	})
	return k
}
