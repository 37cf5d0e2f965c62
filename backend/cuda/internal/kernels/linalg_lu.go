package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// LU factorization with partial pivoting and what uses it (family
// "linalg"), backend/cpu/linalg_lu.go's steps:
//   - lu_<f32|f64> (work, piv, a, n): a block per matrix; thread 0 finds
//     each column's pivot and exchanges the rows, the block's threads
//     then eliminate below it (skipped where the pivot is 0); work is
//     float64 [batch, n, n], piv u32 [batch, n].
//   - lusolve_<f32|f64> (out, work, piv, b, y, n, m, jobs): a thread per
//     right-hand column, y its float64 scratch [jobs, n].
//   - det_<f32|f64> (out, work, piv, n, batch) and slogdet_<f32|f64>
//     (sign, logabs, work, piv, n, batch): a thread per matrix.
//   - luout_<f32|f64> (lu, perm, work, piv, n, batch): the factors
//     rounded once (a thread per element), and the permutation the
//     exchanges make of the identity's rows (a thread per matrix).

// f64 is the float64 element i of p.
func (l la) f64(p, i ptx.Reg) ptx.Reg { return l.at(F64, p, i) }

// f64Imm is a new float64 register holding v.
func (l la) f64Imm(v float64) ptx.Reg {
	r := l.k.Reg(ptx.F64)
	l.k.Op("mov.f64 %s, %s", r, ptx.Imm(ptx.F64, v))
	return r
}

// setF64 stores the float64 v as element i of p.
func (l la) setF64(p, i, v ptx.Reg) { store(l.k, F64, l.k.Addr(p, i, 8), v) }

func luKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("lu", string(d)))
	l := la{k}
	w, pv, a := k.ParamPtr("work"), k.ParamPtr("piv"), k.ParamPtr("a")
	n := k.Param("n", ptx.U64)
	tid, ntid, blk := l.special("tid.x"), l.special("ntid.x"), l.special("ctaid.x")
	nn := l.mul(n, n)
	wb, ab := k.Addr(w, l.mul(blk, nn), 8), k.Addr(a, l.mul(blk, nn), d.Size())
	pb := k.Addr(pv, l.mul(blk, n), 4)
	k.Loop(tid, nn, ntid, func(e ptx.Reg) { l.setF64(wb, e, l.at(d, ab, e)) })
	l.blockLU(wb, pb, n, tid, ntid)
	return k
}

// blockLU factors the float64 n×n matrix at wb in place, the exchanges
// into the u32 pb, the block's threads together (the CPU's luFactor):
// thread 0 finds each column's pivot and exchanges the rows, the
// threads then eliminate the rows below it (skipped where the pivot is
// 0), a barrier before each column and after the exchange. The caller
// has the matrix written and waits at a barrier before reading it.
func (l la) blockLU(wb, pb, n, tid, ntid ptx.Reg) {
	k := l.k
	zero, one := l.imm(0), l.imm(1)
	first := k.Reg(ptx.Pred)
	k.Op("setp.eq.u64 %s, %s, %s", first, tid, zero)
	k.Loop(zero, n, one, func(j ptx.Reg) {
		k.Op("bar.sync 0") // the previous column eliminated
		rowj := l.mul(j, n)
		pivoted := k.Label("lu_pivoted")
		k.Op("@!%s bra %s", first, pivoted)
		{ // thread 0: the first largest magnitude at or below the diagonal
			p, best := l.u64(), k.Reg(ptx.F64)
			k.Op("mov.u64 %s, %s", p, j)
			k.Op("abs.f64 %s, %s", best, l.f64(wb, l.add(rowj, j)))
			k.Loop(l.add(j, one), n, one, func(i ptx.Reg) {
				v, gt := k.Reg(ptx.F64), k.Reg(ptx.Pred)
				k.Op("abs.f64 %s, %s", v, l.f64(wb, l.add(l.mul(i, n), j)))
				k.Op("setp.gt.f64 %s, %s, %s", gt, v, best)
				k.Op("@%s mov.u64 %s, %s", gt, p, i)
				k.Op("@%s mov.f64 %s, %s", gt, best, v)
			})
			p32 := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", p32, p)
			k.Op("st.global.u32 [%s], %s", k.Addr(pb, j, 4), p32)
			same := k.Reg(ptx.Pred)
			k.Op("setp.eq.u64 %s, %s, %s", same, p, j)
			k.Op("@%s bra %s", same, pivoted)
			rowp := l.mul(p, n)
			k.Loop(zero, n, one, func(c ptx.Reg) {
				x, y := l.f64(wb, l.add(rowj, c)), l.f64(wb, l.add(rowp, c))
				l.setF64(wb, l.add(rowj, c), y)
				l.setF64(wb, l.add(rowp, c), x)
			})
		}
		k.Place(pivoted)
		k.Op("bar.sync 0") // the rows exchanged
		u, zeroPivot := l.f64(wb, l.add(rowj, j)), k.Reg(ptx.Pred)
		k.Op("setp.eq.f64 %s, %s, %s", zeroPivot, u, ptx.Imm(ptx.F64, 0))
		next := k.Label("lu_next")
		k.Op("@%s bra %s", zeroPivot, next) // the column left as it is
		k.Loop(l.add(l.add(j, one), tid), n, ntid, func(i ptx.Reg) {
			rowi := l.mul(i, n)
			q := k.Reg(ptx.F64)
			k.Op("div.rn.f64 %s, %s, %s", q, l.f64(wb, l.add(rowi, j)), u)
			l.setF64(wb, l.add(rowi, j), q)
			k.Loop(l.add(j, one), n, one, func(c ptx.Reg) {
				s := l.f64From(l.f64(wb, l.add(rowi, c)))
				l.subProduct(s, q, l.f64(wb, l.add(rowj, c)))
				l.setF64(wb, l.add(rowi, c), s)
			})
		})
		k.Place(next)
	})
	k.Op("bar.sync 0")
}

func luOutKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("luout", string(d)))
	l := la{k}
	lu, perm, w, pv := k.ParamPtr("lu"), k.ParamPtr("perm"), k.ParamPtr("work"), k.ParamPtr("piv")
	n, batch := k.Param("n", ptx.U64), k.Param("batch", ptx.U64)
	zero, one := l.imm(0), l.imm(1)
	k.GridStride(l.mul(batch, l.mul(n, n)), func(e ptx.Reg) {
		store(k, d, k.Addr(lu, e, d.Size()), narrow(k, d, l.f64(w, e)))
	})
	k.GridStride(batch, func(b ptx.Reg) {
		pb, qb := k.Addr(pv, l.mul(b, n), 4), k.Addr(perm, l.mul(b, n), 4)
		k.Loop(zero, n, one, func(i ptx.Reg) {
			i32 := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", i32, i)
			k.Op("st.global.u32 [%s], %s", k.Addr(qb, i, 4), i32)
		})
		k.Loop(zero, n, one, func(j ptx.Reg) { // the exchanges in order
			p32, p := k.Reg(ptx.U32), l.u64()
			k.Op("ld.global.u32 %s, [%s]", p32, k.Addr(pb, j, 4))
			k.Op("cvt.u64.u32 %s, %s", p, p32)
			x, y := k.Reg(ptx.U32), k.Reg(ptx.U32)
			k.Op("ld.global.u32 %s, [%s]", x, k.Addr(qb, j, 4))
			k.Op("ld.global.u32 %s, [%s]", y, k.Addr(qb, p, 4))
			k.Op("st.global.u32 [%s], %s", k.Addr(qb, j, 4), y)
			k.Op("st.global.u32 [%s], %s", k.Addr(qb, p, 4), x)
		})
	})
	return k
}

func luSolveKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("lusolve", string(d)))
	l := la{k}
	o, w, pv, b, y := k.ParamPtr("out"), k.ParamPtr("work"), k.ParamPtr("piv"), k.ParamPtr("b"), k.ParamPtr("y")
	n, m, jobs := k.Param("n", ptx.U64), k.Param("m", ptx.U64), k.Param("jobs", ptx.U64)
	zero, one := l.imm(0), l.imm(1)
	k.GridStride(jobs, func(job ptx.Reg) {
		batch, col := l.op("div", job, m), l.op("rem", job, m)
		wb, pb := k.Addr(w, l.mul(batch, l.mul(n, n)), 8), k.Addr(pv, l.mul(batch, n), 4)
		off := l.mul(batch, l.mul(n, m))
		bb, xb, yb := k.Addr(b, off, d.Size()), k.Addr(o, off, d.Size()), k.Addr(y, l.mul(job, n), 8)
		k.Loop(zero, n, one, func(i ptx.Reg) { l.setF64(yb, i, l.at(d, bb, l.add(l.mul(i, m), col))) })
		k.Loop(zero, n, one, func(j ptx.Reg) { // the exchanges in order
			p32, p := k.Reg(ptx.U32), l.u64()
			k.Op("ld.global.u32 %s, [%s]", p32, k.Addr(pb, j, 4))
			k.Op("cvt.u64.u32 %s, %s", p, p32)
			x, z := l.f64(yb, j), l.f64(yb, p)
			l.setF64(yb, j, z)
			l.setF64(yb, p, x)
		})
		k.Loop(zero, n, one, func(i ptx.Reg) { // L's unit diagonal
			s := l.f64From(l.f64(yb, i))
			k.Loop(zero, i, one, func(c ptx.Reg) { l.subProduct(s, l.f64(wb, l.add(l.mul(i, n), c)), l.f64(yb, c)) })
			l.setF64(yb, i, s)
		})
		k.Loop(zero, n, one, func(step ptx.Reg) { // U, from the last row
			i := l.op("sub", l.op("sub", n, one), step)
			s := l.f64From(l.f64(yb, i))
			k.Loop(l.add(i, one), n, one, func(c ptx.Reg) { l.subProduct(s, l.f64(wb, l.add(l.mul(i, n), c)), l.f64(yb, c)) })
			k.Op("div.rn.f64 %s, %s, %s", s, s, l.f64(wb, l.add(l.mul(i, n), i)))
			l.setF64(yb, i, s)
			store(k, d, k.Addr(xb, l.add(l.mul(i, m), col), d.Size()), narrow(k, d, s))
		})
	})
	return k
}

// detKernel is det_<d>, or where logs slogdet_<d>: the exchanges' sign
// from piv, times the pivots (their signs, and their magnitudes'
// logarithms summed).
func detKernel(d DType, logs bool) *ptx.Kernel {
	name := "det"
	if logs {
		name = "slogdet"
	}
	k := ptx.NewKernel(Name(name, string(d)))
	l := la{k}
	var o, lo ptx.Reg
	o = k.ParamPtr("out")
	if logs {
		lo = k.ParamPtr("logabs")
	}
	w, pv := k.ParamPtr("work"), k.ParamPtr("piv")
	n, batch := k.Param("n", ptx.U64), k.Param("batch", ptx.U64)
	zero, one := l.imm(0), l.imm(1)
	m := fm{k: k}
	k.GridStride(batch, func(b ptx.Reg) {
		wb, pb := k.Addr(w, l.mul(b, l.mul(n, n)), 8), k.Addr(pv, l.mul(b, n), 4)
		sign := l.f64Imm(1)
		k.Loop(zero, n, one, func(j ptx.Reg) {
			p32, p, ex := k.Reg(ptx.U32), l.u64(), k.Reg(ptx.Pred)
			k.Op("ld.global.u32 %s, [%s]", p32, k.Addr(pb, j, 4))
			k.Op("cvt.u64.u32 %s, %s", p, p32)
			k.Op("setp.ne.u64 %s, %s, %s", ex, p, j)
			k.Op("@%s neg.f64 %s, %s", ex, sign, sign)
		})
		if !logs {
			k.Loop(zero, n, one, func(j ptx.Reg) {
				k.Op("mul.rn.f64 %s, %s, %s", sign, sign, l.f64(wb, l.add(l.mul(j, n), j)))
			})
			store(k, d, k.Addr(o, b, d.Size()), narrow(k, d, sign))
			return
		}
		logAbs := l.f64Imm(0)
		k.Loop(zero, n, one, func(j ptx.Reg) {
			u := l.f64(wb, l.add(l.mul(j, n), j))
			neg, z, nan := k.Reg(ptx.Pred), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
			k.Op("setp.lt.f64 %s, %s, %s", neg, u, ptx.Imm(ptx.F64, 0))
			k.Op("setp.eq.f64 %s, %s, %s", z, u, ptx.Imm(ptx.F64, 0))
			k.Op("setp.nan.f64 %s, %s, %s", nan, u, u)
			k.Op("@%s neg.f64 %s, %s", neg, sign, sign)
			k.Op("@%s mov.f64 %s, %s", z, sign, ptx.Imm(ptx.F64, 0))
			k.Op("@%s mov.f64 %s, %s", nan, sign, ptx.Imm(ptx.F64, math.NaN()))
			k.Op("add.rn.f64 %s, %s, %s", logAbs, logAbs, m.log(m.abs(u)))
		})
		store(k, d, k.Addr(o, b, d.Size()), narrow(k, d, sign))
		store(k, d, k.Addr(lo, b, d.Size()), narrow(k, d, logAbs))
	})
	return k
}
