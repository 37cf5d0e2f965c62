package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// Index kernels move slices by integer indices along one axis, with x
// viewed as [outer, n, inner] and the indices (idx, J of them, s32 or s64,
// checked by the backend beforehand) picking along n:
//
//   - gather_<width>_<index dtype> (out, params, idx, outer, n, J, inner):
//     a thread per output element of [outer, J, inner].
//   - scatter_<width>_<index dtype> and scatter_add_<dtype>_<index dtype>
//     (out, idx, upd, outer, n, J, inner), out holding base already: a
//     thread per (outer, inner) column walks j = 0..J-1 in order, so a
//     repeated index takes the last update (scatter) or sums in order
//     (scatter_add), the same on every run, with no atomics.
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
			}, d.reg()))
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

// slot is (o·rows + r)·inner + b.
func slot(k *ptx.Kernel, o, rows, r, inner, b ptx.Reg) ptx.Reg {
	a := k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, %s, %s", a, o, rows, r)
	k.Op("mad.lo.s64 %s, %s, %s, %s", a, a, inner, b)
	return a
}

func gatherKernel(width string, t ptx.Type, id DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("gather", width, string(id)))
	o, p, idx := k.ParamPtr("out"), k.ParamPtr("params"), k.ParamPtr("idx")
	outer, n, nj, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("J", ptx.U64), paramDivisor(k, "inner")
	cells(k, outer, nj, inner, func(e, oi, j, b ptx.Reg) {
		src := slot(k, oi, n, indexAt(k, idx, id, j), inner.v, b)
		k.Store(t, k.Addr(o, e, t.Size()), k.Load(t, k.Addr(p, src, t.Size())))
	})
	return k
}

// scatterKernel writes combine(out, update) at each index, in order; t is
// the register and memory type of the elements (u32 registers for bytes,
// stored as their low byte).
func scatterKernel(kind, elem string, id DType, combine func(k *ptx.Kernel, old, upd ptx.Reg) ptx.Reg, t ptx.Type) *ptx.Kernel {
	k := ptx.NewKernel(Name(kind, elem, string(id)))
	o, idx, u := k.ParamPtr("out"), k.ParamPtr("idx"), k.ParamPtr("upd")
	outer, n, nj, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("J", ptx.U64), paramDivisor(k, "inner")
	mem := t
	if elem == "b8" || elem == string(U8) {
		mem = ptx.U8
	}
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		upTo(k, nj, func(j ptx.Reg) {
			dst := k.Addr(o, slot(k, oi, n, indexAt(k, idx, id, j), inner.v, b), mem.Size())
			upd := k.Reg(t)
			k.Op("ld.global.%s %s, [%s]", mem, upd, k.Addr(u, slot(k, oi, nj, j, inner.v, b), mem.Size()))
			old := k.Reg(t)
			k.Op("ld.global.%s %s, [%s]", mem, old, dst)
			k.Op("st.global.%s [%s], %s", mem, dst, combine(k, old, upd))
		})
	})
	return k
}
