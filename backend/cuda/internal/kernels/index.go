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
	outer, n, nj, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("J", ptx.U64), k.Param("inner", ptx.U64)
	total, per := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", per, nj, inner)
	k.Op("mul.lo.s64 %s, %s, %s", total, outer, per)
	k.GridStride(total, func(e ptx.Reg) {
		oi, rest, j, b := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("div.u64 %s, %s, %s", oi, e, per)
		k.Op("rem.u64 %s, %s, %s", rest, e, per)
		k.Op("div.u64 %s, %s, %s", j, rest, inner)
		k.Op("rem.u64 %s, %s, %s", b, rest, inner)
		src := slot(k, oi, n, indexAt(k, idx, id, j), inner, b)
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
	outer, n, nj, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("J", ptx.U64), k.Param("inner", ptx.U64)
	mem := t
	if elem == "b8" || elem == string(U8) {
		mem = ptx.U8
	}
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		upTo(k, nj, func(j ptx.Reg) {
			dst := k.Addr(o, slot(k, oi, n, indexAt(k, idx, id, j), inner, b), mem.Size())
			upd := k.Reg(t)
			k.Op("ld.global.%s %s, [%s]", mem, upd, k.Addr(u, slot(k, oi, nj, j, inner, b), mem.Size()))
			old := k.Reg(t)
			k.Op("ld.global.%s %s, [%s]", mem, old, dst)
			k.Op("st.global.%s [%s], %s", mem, dst, combine(k, old, upd))
		})
	})
	return k
}

// Along-axis kernels index each element separately, x viewed as [outer,
// n, inner] and the indices as [outer, K, inner]:
//
//   - take_along_<width>_<index dtype> (out, x, idx, outer, n, K, inner):
//     out[o,k,b] = x[o, idx[o,k,b], b], a thread per output element.
//   - put_along_add_<dtype>_<index dtype> (out, idx, upd, outer, n, K,
//     inner), out holding base: out[o, idx[o,k,b], b] += upd[o,k,b], a
//     thread per (o, b) in k order.
//   - arg_max_<dtype>, arg_min_<dtype> (out, x, outer, n, inner): the first
//     extreme along n as int64, a NaN counting as the extreme (NumPy's
//     rule, as the CPU), a thread per (o, b).

func alongKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, id := range []DType{S32, S64} {
		for _, ct := range copyTypes {
			out = append(out, takeAlongKernel(ct.name, ct.t, id))
		}
		for _, d := range Numeric {
			out = append(out, putAlongAddKernel(d, id))
		}
	}
	for _, d := range Numeric {
		out = append(out, argExtremeKernel(d, true), argExtremeKernel(d, false), cumsumKernel(d))
	}
	return out
}

// alongParams declares (outer, n, K, inner).
func alongParams(k *ptx.Kernel) (outer, n, nk, inner ptx.Reg) {
	return k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("K", ptx.U64), k.Param("inner", ptx.U64)
}

// columns runs body for each (o, b) of [outer, inner], a thread each.
func columns(k *ptx.Kernel, outer, inner ptx.Reg, body func(o, b ptx.Reg)) {
	cols := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", cols, outer, inner)
	k.GridStride(cols, func(c ptx.Reg) {
		o, b := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("div.u64 %s, %s, %s", o, c, inner)
		k.Op("rem.u64 %s, %s, %s", b, c, inner)
		body(o, b)
	})
}

// upTo runs body for j = 0 .. n-1 in order.
func upTo(k *ptx.Kernel, n ptx.Reg, body func(j ptx.Reg)) {
	zero, one := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", zero)
	k.Op("mov.u64 %s, 1", one)
	k.Loop(zero, n, one, body)
}

func takeAlongKernel(width string, t ptx.Type, id DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("take_along", width, string(id)))
	o, x, idx := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("idx")
	outer, n, nk, inner := alongParams(k)
	total := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", total, outer, nk)
	k.Op("mul.lo.s64 %s, %s, %s", total, total, inner)
	k.GridStride(total, func(e ptx.Reg) {
		oi, b, per := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", per, nk, inner)
		k.Op("div.u64 %s, %s, %s", oi, e, per)
		k.Op("rem.u64 %s, %s, %s", b, e, inner)
		src := slot(k, oi, n, indexAt(k, idx, id, e), inner, b)
		k.Store(t, k.Addr(o, e, t.Size()), k.Load(t, k.Addr(x, src, t.Size())))
	})
	return k
}

func putAlongAddKernel(d, id DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("put_along_add", string(d), string(id)))
	o, idx, u := k.ParamPtr("out"), k.ParamPtr("idx"), k.ParamPtr("upd")
	outer, n, nk, inner := alongParams(k)
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		upTo(k, nk, func(j ptx.Reg) {
			at := slot(k, oi, nk, j, inner, b)
			dst := k.Addr(o, slot(k, oi, n, indexAt(k, idx, id, at), inner, b), d.Size())
			sum := binaryOp(k, "add", d, load(k, d, dst), load(k, d, k.Addr(u, at, d.Size())))
			store(k, d, dst, sum)
		})
	})
	return k
}

func argExtremeKernel(d DType, isMax bool) *ptx.Kernel {
	name := "arg_min"
	if isMax {
		name = "arg_max"
	}
	k := ptx.NewKernel(Name(name, string(d)))
	o, x := k.ParamPtr("out"), k.ParamPtr("x")
	outer, n, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("inner", ptx.U64)
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		zero := k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 0", zero)
		best, bestV := k.Reg(ptx.U64), load(k, d, k.Addr(x, slot(k, oi, n, zero, inner, b), d.Size()))
		k.Op("mov.u64 %s, 0", best)
		one := k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 1", one)
		done := k.Label("arg_done")
		k.Loop(one, n, one, func(j ptx.Reg) {
			if d.float() { // the best is NaN: nothing beats it
				p := k.Reg(ptx.Pred)
				k.Op("setp.nan.%s %s, %s, %s", d.reg(), p, bestV, bestV)
				k.Op("@%s bra %s", p, done)
			}
			v := load(k, d, k.Addr(x, slot(k, oi, n, j, inner, b), d.Size()))
			better := k.Reg(ptx.Pred)
			cmp := map[bool]string{true: "gt", false: "lt"}[isMax]
			if d.float() {
				cmp += "u" // or unordered: v is NaN
			}
			k.Op("setp.%s.%s %s, %s, %s", cmp, cmpType(d), better, v, bestV)
			k.Op("selp.u64 %s, %s, %s, %s", best, j, best, better)
			k.Op("selp.%s %s, %s, %s, %s", d.reg(), bestV, v, bestV, better)
		})
		k.Place(done)
		at := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", at, oi, inner, b)
		store(k, S64, k.Addr(o, at, 8), best)
	})
	return k
}

// cumsum_<dtype> (out, x, outer, n, inner, reverse, exclusive): running
// sums along n, a thread per (o, b) column in order (from the end when
// reverse is 1; leaving each element out of its own sum when exclusive is
// 1), as the CPU sums them.
func cumsumKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("cumsum", string(d)))
	o, x := k.ParamPtr("out"), k.ParamPtr("x")
	outer, n, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("inner", ptx.U64)
	reverse, exclusive := k.Param("reverse", ptx.U64), k.Param("exclusive", ptx.U64)
	rev, exc := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", rev, reverse)
	k.Op("setp.ne.u64 %s, %s, 0", exc, exclusive)
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		acc := k.Reg(d.reg())
		mov(k, d, acc, ptx.Imm(d.reg(), 0))
		upTo(k, n, func(step ptx.Reg) {
			j, back := k.Reg(ptx.U64), k.Reg(ptx.U64)
			k.Op("sub.s64 %s, %s, %s", back, n, step)
			k.Op("sub.s64 %s, %s, 1", back, back)
			k.Op("selp.u64 %s, %s, %s, %s", j, back, step, rev)
			at := slot(k, oi, n, j, inner, b)
			next := binaryOp(k, "add", d, acc, load(k, d, k.Addr(x, at, d.Size())))
			v := k.Reg(d.reg())
			k.Op("selp.%s %s, %s, %s, %s", d.reg(), v, acc, next, exc)
			store(k, d, k.Addr(o, at, d.Size()), v)
			mov(k, d, acc, next)
		})
	})
	return k
}
