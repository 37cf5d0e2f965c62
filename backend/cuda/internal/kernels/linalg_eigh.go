package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// eigh_<f32|f64> (values, vectors, work, order, a, n): Eigh's cyclic
// Jacobi rotations (backend/cpu/linalg_eigh.go's steps, bit for bit), a
// block per matrix: every thread decides each rotation alike from the
// same three elements, then the block updates the rows and columns it
// turns, a barrier after the reads and one after the writes. work is
// float64 [batch, 2, n, n] (the matrix, the rotations), order u32
// [batch, n] (the eigenvalues' ascending order, thread 0's).

// JacobiSweeps bounds Eigh's sweeps (the CPU's jacobiSweeps).
const JacobiSweeps = 60

// jacobiSweeps writes the sweeps of a Jacobi method: sweep (each the
// block's rotations, which set rotated where they turn a pair) until one
// turns nothing, at most JacobiSweeps; name prefixes the labels.
func (l la) jacobiSweeps(name string, sweep func(rotated ptx.Reg)) {
	k := l.k
	sweeps, n := l.imm(JacobiSweeps), l.u64()
	k.Op("mov.u64 %s, 0", n)
	top, converged := k.Label(name+"_sweep"), k.Label(name+"_converged")
	k.Place(top)
	rotated, z := k.Reg(ptx.Pred), l.imm(0)
	k.Op("setp.ne.u64 %s, %s, %s", rotated, z, z) // false
	sweep(rotated)
	k.Op("@!%s bra %s", rotated, converged)
	k.Op("add.u64 %s, %s, 1", n, n)
	more := k.Reg(ptx.Pred)
	k.Op("setp.lt.u64 %s, %s, %s", more, n, sweeps)
	k.Op("@%s bra %s", more, top)
	k.Place(converged)
}

func eighKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("eigh", string(d)))
	l, m := la{k}, fm{k: k}
	vals, vecs, work, ord, a := k.ParamPtr("values"), k.ParamPtr("vectors"), k.ParamPtr("work"), k.ParamPtr("order"), k.ParamPtr("a")
	n := k.Param("n", ptx.U64)
	tid, ntid, blk := l.special("tid.x"), l.special("ntid.x"), l.special("ctaid.x")
	zero, one := l.imm(0), l.imm(1)
	nn := l.mul(n, n)
	w := k.Addr(work, l.mul(blk, l.add(nn, nn)), 8)
	v := k.Addr(w, nn, 8)
	ab, ob := k.Addr(a, l.mul(blk, nn), d.Size()), k.Addr(ord, l.mul(blk, n), 4)
	first := k.Reg(ptx.Pred)
	k.Op("setp.eq.u64 %s, %s, %s", first, tid, zero)
	// The lower triangle mirrored, v = I; a block flag for a non-finite
	// element.
	flag := l.blockFlag(first)
	k.Loop(tid, nn, ntid, func(e ptx.Reg) {
		i, j := l.op("div", e, n), l.op("rem", e, n)
		upper, diag := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("setp.eq.u64 %s, %s, %s", diag, i, j)
		l.setF64(v, e, m.sel(diag, m.c(1), m.c(0)))
		k.Op("setp.gt.u64 %s, %s, %s", upper, j, i)
		skip := k.Label("eigh_upper")
		k.Op("@%s bra %s", upper, skip)
		x := l.at(d, ab, e)
		l.setF64(w, e, x)
		l.setF64(w, l.add(l.mul(j, n), i), x)
		flag.raise(m.not(m.cmp("lt", m.abs(x), m.c(math.Inf(1))))) // ±∞ or NaN
		k.Place(skip)
	})
	k.Op("bar.sync 0")
	fillNaN := k.Label("eigh_nan")
	k.Op("@%s bra %s", flag.read(), fillNaN)

	zeroF := l.f64Imm(0)
	l.jacobiSweeps("eigh", func(rotated ptx.Reg) {
		k.Loop(zero, n, one, func(p ptx.Reg) {
			k.Loop(l.add(p, one), n, one, func(q ptx.Reg) {
				pq, qp, pp, qq := l.add(l.mul(p, n), q), l.add(l.mul(q, n), p), l.add(l.mul(p, n), p), l.add(l.mul(q, n), q)
				apq, app, aqq := l.f64(w, pq), l.f64(w, pp), l.f64(w, qq)
				k.Op("bar.sync 0") // every thread has read them
				g := m.mul(m.c(100), m.abs(apq))
				small := m.and(m.cmp("eq", m.add(m.abs(app), g), m.abs(app)), m.cmp("eq", m.add(m.abs(aqq), g), m.abs(aqq)))
				turn := k.Label("eigh_turn")
				done := k.Label("eigh_pair_done")
				k.Op("@!%s bra %s", small, turn)
				k.Op("@%s st.global.f64 [%s], %s", first, k.Addr(w, pq, 8), zeroF)
				k.Op("@%s st.global.f64 [%s], %s", first, k.Addr(w, qp, 8), zeroF)
				k.Op("bra %s", done)
				k.Place(turn)
				k.Op("setp.eq.u64 %s, %s, %s", rotated, zero, zero) // true
				c, s, t := m.jacobiRotation(m.div(m.sub(aqq, app), m.mul(m.c(2), apq)))
				k.Loop(tid, n, ntid, func(r ptx.Reg) {
					rp, rq := l.add(l.mul(r, n), p), l.add(l.mul(r, n), q)
					l.turn(m, v, rp, rq, c, s)
					isP, isQ := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
					k.Op("setp.eq.u64 %s, %s, %s", isP, r, p)
					k.Op("setp.eq.u64 %s, %s, %s", isQ, r, q)
					edge := m.or(isP, isQ)
					next := k.Label("eigh_row_done")
					k.Op("@%s bra %s", edge, next)
					akp, akq := l.f64(w, rp), l.f64(w, rq)
					np, nq := m.sub(m.mul(c, akp), m.mul(s, akq)), m.add(m.mul(s, akp), m.mul(c, akq))
					l.setF64(w, rp, np)
					l.setF64(w, rq, nq)
					l.setF64(w, l.add(l.mul(p, n), r), np)
					l.setF64(w, l.add(l.mul(q, n), r), nq)
					k.Place(next)
				})
				k.Op("@%s st.global.f64 [%s], %s", first, k.Addr(w, pp, 8), m.sub(app, m.mul(t, apq)))
				k.Op("@%s st.global.f64 [%s], %s", first, k.Addr(w, qq, 8), m.add(aqq, m.mul(t, apq)))
				k.Op("@%s st.global.f64 [%s], %s", first, k.Addr(w, pq, 8), zeroF)
				k.Op("@%s st.global.f64 [%s], %s", first, k.Addr(w, qp, 8), zeroF)
				k.Place(done)
				k.Op("bar.sync 0") // the rotation written
			})
		})
	})

	// Thread 0: the eigenvalues' ascending order (insertion, the first
	// of equals first).
	diagonal := func(i ptx.Reg) ptx.Reg { return l.f64(w, l.add(l.mul(i, n), i)) }
	l.insertionOrder(m, ob, n, first, func(i, j ptx.Reg) ptx.Reg { return m.cmp("lt", diagonal(i), diagonal(j)) })
	// A thread per eigenvector: its value, and its column signed.
	k.Loop(tid, n, ntid, func(col ptx.Reg) {
		src := l.u32At(ob, col)
		store(k, d, k.Addr(vals, l.add(l.mul(blk, n), col), d.Size()), narrow(k, d, l.f64(w, l.add(l.mul(src, n), src))))
		best, at := l.f64Imm(-1), l.u64()
		k.Op("mov.u64 %s, 0", at)
		k.Loop(zero, n, one, func(i ptx.Reg) {
			mag := m.abs(l.f64(v, l.add(l.mul(i, n), src)))
			gt := m.cmp("gt", mag, best)
			k.Op("@%s mov.f64 %s, %s", gt, best, mag)
			k.Op("@%s mov.u64 %s, %s", gt, at, i)
		})
		sign := m.sel(m.cmp("lt", l.f64(v, l.add(l.mul(at, n), src)), m.c(0)), m.c(-1), m.c(1))
		vb := k.Addr(vecs, l.mul(blk, nn), d.Size())
		k.Loop(zero, n, one, func(i ptx.Reg) {
			x := m.mul(sign, l.f64(v, l.add(l.mul(i, n), src)))
			store(k, d, k.Addr(vb, l.add(l.mul(i, n), col), d.Size()), narrow(k, d, x))
		})
	})
	end := k.Label("eigh_end")
	k.Op("bra %s", end)
	k.Place(fillNaN)
	l.fillNaN(d, blk, tid, ntid, vals, n, vecs, nn)
	k.Place(end)
	return k
}
