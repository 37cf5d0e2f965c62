package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// qr_<f32|f64> (q, r, work, a, m, n): QR's Householder reflections
// (backend/cpu/linalg_qr.go's steps, bit for bit), a block per matrix:
// every thread computes each reflection's scalars alike from column j,
// thread 0 writes its vector, and the block's threads apply it to a
// column each; q's columns are then each one thread's. work is float64
// [batch, m·n + 2·m·k] (the matrix, the vectors, q), k = min(m, n).

func qrKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("qr", string(d)))
	l, f := la{k}, fm{k: k}
	qo, ro, work, a := k.ParamPtr("q"), k.ParamPtr("r"), k.ParamPtr("work"), k.ParamPtr("a")
	m, n := k.Param("m", ptx.U64), k.Param("n", ptx.U64)
	tid, ntid, blk := l.special("tid.x"), l.special("ntid.x"), l.special("ctaid.x")
	zero, one := l.imm(0), l.imm(1)
	kk := l.u64()
	k.Op("min.u64 %s, %s, %s", kk, m, n)
	mn, mk := l.mul(m, n), l.mul(m, kk)
	w := k.Addr(work, l.mul(blk, l.add(mn, l.add(mk, mk))), 8)
	h, q := k.Addr(w, mn, 8), k.Addr(w, l.add(mn, mk), 8)
	ab := k.Addr(a, l.mul(blk, mn), d.Size())
	first := k.Reg(ptx.Pred)
	k.Op("setp.eq.u64 %s, %s, %s", first, tid, zero)
	zeroF := l.f64Imm(0)
	k.Loop(tid, mn, ntid, func(e ptx.Reg) { l.setF64(w, e, l.at(d, ab, e)) })
	k.Loop(tid, mk, ntid, func(e ptx.Reg) { l.setF64(h, e, zeroF) })
	k.Op("bar.sync 0")
	wAt := func(i, c ptx.Reg) ptx.Reg { return l.add(l.mul(i, n), c) }
	hAt := func(i, c ptx.Reg) ptx.Reg { return l.add(l.mul(i, kk), c) }
	k.Loop(zero, kk, one, func(j ptx.Reg) {
		// The reflection's scalars, in every thread alike.
		scale := l.f64Imm(0)
		k.Loop(j, m, one, func(i ptx.Reg) { // Go's max: NaN sticks
			x := f.abs(l.f64(w, wAt(i, j)))
			k.Op("mov.f64 %s, %s", scale, f.sel(f.or(f.cmp("nan", scale, scale), f.cmp("nan", x, x)), f.c(math.NaN()), f.max(scale, x)))
		})
		skip := k.Label("qr_no_reflection")
		k.Op("@%s bra %s", f.or(f.cmp("eq", scale, f.c(0)), f.cmp("nan", scale, scale)), skip)
		sum := l.f64Imm(0)
		k.Loop(j, m, one, func(i ptx.Reg) {
			x := f.div(l.f64(w, wAt(i, j)), scale)
			k.Op("add.rn.f64 %s, %s, %s", sum, sum, f.mul(x, x))
		})
		norm := f.mul(f.sqrt(sum), scale)
		wjj := l.f64(w, wAt(j, j))
		alpha := f.sel(f.cmp("lt", wjj, f.c(0)), norm, f.neg(norm))
		head := f.sub(wjj, alpha) // v's first element, before scaling
		vs := l.f64From(f.mul(f.div(head, norm), f.div(head, norm)))
		k.Loop(l.add(j, one), m, one, func(i ptx.Reg) {
			x := f.div(l.f64(w, wAt(i, j)), norm)
			k.Op("add.rn.f64 %s, %s, %s", vs, vs, f.mul(x, x))
		})
		vn := f.mul(f.sqrt(vs), norm)
		k.Op("bar.sync 0") // every thread has read column j
		written := k.Label("qr_vector")
		k.Op("@!%s bra %s", first, written)
		l.setF64(h, hAt(j, j), f.div(head, vn))
		k.Loop(l.add(j, one), m, one, func(i ptx.Reg) { l.setF64(h, hAt(i, j), f.div(l.f64(w, wAt(i, j)), vn)) })
		k.Place(written)
		k.Op("bar.sync 0") // v written
		k.Loop(l.add(j, tid), n, ntid, func(c ptx.Reg) {
			reflect(k, l, f, h, w, j, m, c, hAt, wAt)
			isJ := k.Reg(ptx.Pred)
			k.Op("setp.eq.u64 %s, %s, %s", isJ, c, j)
			below := k.Label("qr_below")
			k.Op("@!%s bra %s", isJ, below)
			k.Loop(l.add(j, one), m, one, func(i ptx.Reg) { l.setF64(w, wAt(i, j), zeroF) })
			k.Place(below)
		})
		k.Place(skip)
		k.Op("bar.sync 0") // the reflection applied
	})
	// q: I's first k columns, the reflections from the last; a thread's
	// columns are its own.
	qAt := hAt
	k.Loop(tid, kk, ntid, func(c ptx.Reg) {
		k.Loop(zero, m, one, func(i ptx.Reg) {
			isDiag := k.Reg(ptx.Pred)
			k.Op("setp.eq.u64 %s, %s, %s", isDiag, i, c)
			l.setF64(q, qAt(i, c), f.sel(isDiag, f.c(1), f.c(0)))
		})
		k.Loop(zero, kk, one, func(step ptx.Reg) {
			j := l.op("sub", l.op("sub", kk, one), step)
			ge := k.Reg(ptx.Pred)
			k.Op("setp.ge.u64 %s, %s, %s", ge, c, j)
			next := k.Label("qr_q_step")
			k.Op("@!%s bra %s", ge, next)
			reflect(k, l, f, h, q, j, m, c, hAt, qAt)
			k.Place(next)
		})
	})
	k.Op("bar.sync 0")
	// The outputs, each row of r (and column of q) negated where r's
	// diagonal element is negative (r's elements from the diagonal on).
	negative := func(j ptx.Reg) ptx.Reg { return f.cmp("lt", l.f64(w, wAt(j, j)), f.c(0)) }
	rb, qb := k.Addr(ro, l.mul(blk, l.mul(kk, n)), d.Size()), k.Addr(qo, l.mul(blk, mk), d.Size())
	k.Loop(tid, l.mul(kk, n), ntid, func(e ptx.Reg) {
		i, c := l.op("div", e, n), l.op("rem", e, n)
		x, ge := l.f64(w, e), k.Reg(ptx.Pred)
		k.Op("setp.ge.u64 %s, %s, %s", ge, c, i)
		store(k, d, k.Addr(rb, e, d.Size()), narrow(k, d, f.sel(f.and(ge, negative(i)), f.neg(x), x)))
	})
	k.Loop(tid, mk, ntid, func(e ptx.Reg) {
		c := l.op("rem", e, kk)
		x := l.f64(q, e)
		store(k, d, k.Addr(qb, e, d.Size()), narrow(k, d, f.sel(negative(c), f.neg(x), x)))
	})
	return k
}

// reflect applies reflection j (column j of h, rows from j) to column c
// of x (rows from j): x -= v·(2·vᵀ·x), the sum over rows ascending.
func reflect(k *ptx.Kernel, l la, f fm, h, x, j, m, c ptx.Reg, hAt, xAt func(i, c ptx.Reg) ptx.Reg) {
	one := l.imm(1)
	dot := l.f64Imm(0)
	k.Loop(j, m, one, func(i ptx.Reg) {
		k.Op("add.rn.f64 %s, %s, %s", dot, dot, f.mul(l.f64(h, hAt(i, j)), l.f64(x, xAt(i, c))))
	})
	k.Op("mul.rn.f64 %s, %s, %s", dot, dot, f.c(2))
	k.Loop(j, m, one, func(i ptx.Reg) {
		l.setF64(x, xAt(i, c), f.sub(l.f64(x, xAt(i, c)), f.mul(l.f64(h, hAt(i, j)), dot)))
	})
}
