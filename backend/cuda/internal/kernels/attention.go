package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Attention's row kernels (ops/attention.go; backend/cuda/attention.go
// runs the products around them on cuBLAS): a warp or a block per row of
// the score matrix (newRowGroups: their last parameter is groupShift),
// one query's scores against every key, in float64:
//
//   - attn_probs_<dtype>[_mask] (s, lse, [mask, maskRep (a divisor
//     parameter), maskStep, maskRow], rows, tq (a divisor parameter:
//     value, magic, shift), tk, scale, causal): the scores s·scale,
//     masked to −∞ where the query does not attend (after its position
//     where causal is not 0; where the bool mask is false: batch matrix
//     b's element (i, j) at (b/maskRep)·maskStep + i·maskRow + j, as
//     internal/attnmask lays it out),
//     become their softmax in place; lse is the row's log-sum-exp (−∞ for
//     a row of nothing, whose probabilities are NaN).
//   - attn_grad_<dtype>[_mask] (s, dp, lse, dlse, o, do, [mask, maskRep, maskStep, maskRow],
//     rows, tq, tk, dv, scale, causal): from the scores s and dP = dO·Vᵀ,
//     the probabilities P (recomputed from lse) into s and dS = P⊙(dP −
//     δ)·scale into dp, δ = Σ dO⊙O − dlse over the row's dv outputs; a
//     row of nothing gets zeros.

func attentionKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range Floats {
		for _, masked := range []bool{false, true} {
			out = append(out, attnRows("attn_probs", d, masked), attnRows("attn_grad", d, masked))
		}
	}
	return append(out, flashKernels()...)
}

func attnRows(kind string, d DType, masked bool) *ptx.Kernel {
	name := Name(kind, string(d))
	if masked {
		name = Name(kind, string(d), "mask")
	}
	k := ptx.NewKernel(name)
	s := k.ParamPtr("s")
	var dp, dlse, o, do ptx.Reg
	if kind == "attn_grad" {
		dp = k.ParamPtr("dp")
	}
	lse := k.ParamPtr("lse")
	if kind == "attn_grad" {
		dlse, o, do = k.ParamPtr("dlse"), k.ParamPtr("o"), k.ParamPtr("do")
	}
	var mask, maskStep, maskRow ptx.Reg
	var maskRep divisor
	if masked {
		mask, maskRep = k.ParamPtr("mask"), paramDivisor(k, "maskRep")
		maskStep, maskRow = k.Param("maskStep", ptx.U64), k.Param("maskRow", ptx.U64)
	}
	rows, tq, tk := k.Param("rows", ptx.U64), paramDivisor(k, "tq"), k.Param("tk", ptx.U64)
	var dv ptx.Reg
	if kind == "attn_grad" {
		dv = k.Param("dv", ptx.U64)
	}
	scale, causal := k.Param("scale", ptx.F64), k.Param("causal", ptx.U64)
	m := fm{k: k}
	inf := m.c(math.Inf(-1))
	add := func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) }
	isCausal := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", isCausal, causal)
	b := newRowGroups(k, 8)
	b.eachRow(rows, func(row ptx.Reg) {
		base := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", base, row, tk)
		batch, qi := divmod(k, row, tq) // by tq's constants: no 64-bit division

		var maskBase ptx.Reg
		if masked {
			maskBase = k.Reg(ptx.U64) // (batch/maskRep)·maskStep + qi·maskRow
			mb, _ := divmod(k, batch, maskRep)
			k.Op("mul.lo.s64 %s, %s, %s", maskBase, mb, maskStep)
			k.Op("mad.lo.s64 %s, %s, %s, %s", maskBase, qi, maskRow, maskBase)
		}
		at := func(p, j ptx.Reg) ptx.Reg { return k.Addr(p, addU64(k, base, j), d.Size()) }
		// score is key j's scaled score, −∞ where the query does not
		// attend to it.
		score := func(j ptx.Reg) ptx.Reg {
			x := m.mul(widen(k, d, load(k, d, at(s, j))), scale)
			drop := k.Reg(ptx.Pred)
			k.Op("setp.gt.u64 %s, %s, %s", drop, j, qi)
			k.Op("and.pred %s, %s, %s", drop, drop, isCausal)
			if masked {
				keep := load(k, Bool, k.Addr(mask, addU64(k, maskBase, j), 1))
				off := k.Reg(ptx.Pred)
				k.Op("setp.eq.u32 %s, %s, 0", off, keep)
				k.Op("or.pred %s, %s, %s", drop, drop, off)
			}
			return m.sel(drop, inf, x)
		}
		if kind == "attn_probs" {
			mx := zero64(m)
			k.Op("mov.f64 %s, %s", mx, inf)
			b.eachElem(tk, func(j ptx.Reg) { k.Op("max.f64 %s, %s, %s", mx, mx, score(j)) })
			mx = b.tree(ptx.F64, mx, func(a, c ptx.Reg) ptx.Reg { return m.max(a, c) })
			// A row of nothing shifts by 0: its sum is 0, its
			// probabilities NaN (0/0) and its log-sum-exp −∞, as the CPU's.
			shift := m.sel(m.cmp("eq", mx, inf), m.c(0), mx)
			// The exponentials once, into s (rounded to the dtype, as
			// the CPU's), then divided by their sum.
			sum := zero64(m)
			b.eachElem(tk, func(j ptx.Reg) {
				e := narrow(k, d, m.expFor(d, m.sub(score(j), shift)))
				store(k, d, at(s, j), e)
				k.Op("add.rn.f64 %s, %s, %s", sum, sum, widen(k, d, e))
			})
			sum = b.tree(ptx.F64, sum, add)
			b.eachElem(tk, func(j ptx.Reg) {
				store(k, d, at(s, j), narrow(k, d, m.div(widen(k, d, load(k, d, at(s, j))), sum)))
			})
			b.first(func() { store(k, d, k.Addr(lse, row, d.Size()), narrow(k, d, m.add(shift, m.log(sum)))) })
			return
		}
		li := widen(k, d, load(k, d, k.Addr(lse, row, d.Size())))
		dbase := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", dbase, row, dv)
		delta := zero64(m)
		b.eachElem(dv, func(x ptx.Reg) {
			ox := widen(k, d, load(k, d, k.Addr(o, addU64(k, dbase, x), d.Size())))
			gx := widen(k, d, load(k, d, k.Addr(do, addU64(k, dbase, x), d.Size())))
			k.Op("fma.rn.f64 %s, %s, %s, %s", delta, ox, gx, delta)
		})
		delta = m.sub(b.tree(ptx.F64, delta, add), widen(k, d, load(k, d, k.Addr(dlse, row, d.Size()))))
		// δ in the dtype, as the CPU's: dP − δ is then exactly 0 where a
		// row attends to one key (dP rounded as δ is), where float64's δ
		// would leave dP's rounding, scaled by dO, as a gradient.
		delta = widen(k, d, narrow(k, d, delta))
		nothing := m.cmp("eq", li, inf)
		b.eachElem(tk, func(j ptx.Reg) {
			p := m.sel(nothing, m.c(0), m.expFor(d, m.sub(score(j), li)))
			ds := m.mul(m.mul(p, m.sub(widen(k, d, load(k, d, at(dp, j))), delta)), scale)
			ds = m.sel(nothing, m.c(0), ds)
			store(k, d, at(s, j), narrow(k, d, p))
			store(k, d, at(dp, j), narrow(k, d, ds))
		})
	})
	return k
}
