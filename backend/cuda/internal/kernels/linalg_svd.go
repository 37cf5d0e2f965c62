package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// svd_<f32|f64> (u, s, vt, work, order, a, m, n): SVD's one-sided Jacobi
// rotations (backend/cpu/linalg_svd.go's steps, bit for bit) of the tall
// one of a and aᵀ (r×k, r = max(m, n), k = min(m, n)), a block per
// matrix: every thread computes each pair's sums alike, the block then
// turns the rows; thread 0 orders the columns and completes u's basis
// where a singular value is 0. work is float64 [batch, 2·r·k + 2·k² + k]
// (b, u, v, v reordered, the norms), order u32 [batch, k].

func svdKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("svd", string(d)))
	l, f := la{k}, fm{k: k}
	uo, so, vto, work, ord, a := k.ParamPtr("u"), k.ParamPtr("s"), k.ParamPtr("vt"), k.ParamPtr("work"), k.ParamPtr("order"), k.ParamPtr("a")
	m, n := k.Param("m", ptx.U64), k.Param("n", ptx.U64)
	tid, ntid, blk := l.special("tid.x"), l.special("ntid.x"), l.special("ctaid.x")
	zero, one := l.imm(0), l.imm(1)
	r, kk := l.u64(), l.u64()
	k.Op("max.u64 %s, %s, %s", r, m, n)
	k.Op("min.u64 %s, %s, %s", kk, m, n)
	tall := k.Reg(ptx.Pred)
	k.Op("setp.ge.u64 %s, %s, %s", tall, m, n)
	rk, k2 := l.mul(r, kk), l.mul(kk, kk)
	b := k.Addr(work, l.mul(blk, l.add(l.add(l.add(rk, rk), l.add(k2, k2)), kk)), 8)
	u := k.Addr(b, rk, 8)
	v := k.Addr(u, rk, 8)
	v2 := k.Addr(v, k2, 8)
	norms := k.Addr(v2, k2, 8)
	mn := l.mul(m, n)
	ab, ob := k.Addr(a, l.mul(blk, mn), d.Size()), k.Addr(ord, l.mul(blk, kk), 4)
	first := k.Reg(ptx.Pred)
	k.Op("setp.eq.u64 %s, %s, %s", first, tid, zero)
	at := func(i, c ptx.Reg) ptx.Reg { return l.add(l.mul(i, kk), c) } // every work matrix has k columns
	zeroF := l.f64Imm(0)

	// b: a, or aᵀ where wide; v = I; a block flag for a non-finite element.
	flag := l.blockFlag(first)
	k.Loop(tid, mn, ntid, func(e ptx.Reg) {
		i, j := l.op("div", e, n), l.op("rem", e, n)
		x := l.at(d, ab, e)
		dst := l.u64()
		k.Op("selp.u64 %s, %s, %s, %s", dst, at(i, j), at(j, i), tall)
		l.setF64(b, dst, x)
		flag.raise(f.not(f.cmp("lt", f.abs(x), f.c(math.Inf(1)))))
	})
	k.Loop(tid, k2, ntid, func(e ptx.Reg) {
		diag := k.Reg(ptx.Pred)
		k.Op("setp.eq.u64 %s, %s, %s", diag, l.op("div", e, kk), l.op("rem", e, kk))
		l.setF64(v, e, f.sel(diag, f.c(1), f.c(0)))
	})
	k.Op("bar.sync 0")
	fillNaN := k.Label("svd_nan")
	k.Op("@%s bra %s", flag.read(), fillNaN)

	// The scale: big's exponent, held to ±1000; b scaled down by it.
	big := l.f64Imm(0)
	k.Loop(zero, rk, one, func(e ptx.Reg) { k.Op("max.f64 %s, %s, %s", big, big, f.abs(l.f64(b, e))) })
	bits, ex := k.Reg(ptx.U64), k.Reg(ptx.S64)
	k.Op("mov.b64 %s, %s", bits, big)
	k.Op("shr.u64 %s, %s, 52", bits, bits)
	k.Op("and.b64 %s, %s, 2047", bits, bits)
	k.Op("cvt.s64.u64 %s, %s", ex, bits)
	k.Op("sub.s64 %s, %s, 1022", ex, ex)
	k.Op("max.s64 %s, %s, -1000", ex, ex)
	k.Op("min.s64 %s, %s, 1000", ex, ex)
	pow2 := func(e ptx.Reg) ptx.Reg { // 2^e for |e| ≤ 1000, by its bits
		biased, r := k.Reg(ptx.S64), k.Reg(ptx.F64)
		k.Op("add.s64 %s, %s, 1023", biased, e)
		k.Op("shl.b64 %s, %s, 52", biased, biased)
		k.Op("mov.b64 %s, %s", r, biased)
		return r
	}
	negEx := k.Reg(ptx.S64)
	k.Op("neg.s64 %s, %s", negEx, ex)
	down, upScale := pow2(negEx), pow2(ex)
	k.Op("bar.sync 0") // every thread has its big
	k.Loop(tid, rk, ntid, func(e ptx.Reg) { l.setF64(b, e, f.mul(l.f64(b, e), down)) })
	k.Op("bar.sync 0")

	l.jacobiSweeps("svd", func(rotated ptx.Reg) {
		k.Loop(zero, kk, one, func(p ptx.Reg) {
			k.Loop(l.add(p, one), kk, one, func(q ptx.Reg) {
				alpha, beta, gamma := l.f64Imm(0), l.f64Imm(0), l.f64Imm(0)
				k.Loop(zero, r, one, func(i ptx.Reg) {
					bp, bq := l.f64(b, at(i, p)), l.f64(b, at(i, q))
					k.Op("add.rn.f64 %s, %s, %s", alpha, alpha, f.mul(bp, bp))
					k.Op("add.rn.f64 %s, %s, %s", beta, beta, f.mul(bq, bq))
					k.Op("add.rn.f64 %s, %s, %s", gamma, gamma, f.mul(bp, bq))
				})
				k.Op("bar.sync 0") // every thread has read the pair
				done := k.Label("svd_pair_done")
				small := f.cmp("le", f.abs(gamma), f.mul(f.mul(f.c(0x1p-53), f.sqrt(alpha)), f.sqrt(beta)))
				k.Op("@%s bra %s", small, done)
				k.Op("setp.eq.u64 %s, %s, %s", rotated, zero, zero) // true
				c, sn, _ := f.jacobiRotation(f.div(f.sub(beta, alpha), f.mul(f.c(2), gamma)))
				turn := func(x, rows ptx.Reg) {
					k.Loop(tid, rows, ntid, func(i ptx.Reg) { l.turn(f, x, at(i, p), at(i, q), c, sn) })
				}
				turn(b, r)
				turn(v, kk)
				k.Place(done)
				k.Op("bar.sync 0") // the pair turned
			})
		})
	})

	// The columns' norms; thread 0 orders them (descending, the first of
	// equals first).
	k.Loop(tid, kk, ntid, func(j ptx.Reg) {
		sum := l.f64Imm(0)
		k.Loop(zero, r, one, func(i ptx.Reg) {
			x := l.f64(b, at(i, j))
			k.Op("add.rn.f64 %s, %s, %s", sum, sum, f.mul(x, x))
		})
		l.setF64(norms, j, f.sqrt(sum))
	})
	k.Op("bar.sync 0")
	l.insertionOrder(f, ob, kk, first, func(i, j ptx.Reg) ptx.Reg { return f.cmp("gt", l.f64(norms, i), l.f64(norms, j)) })
	// Column j of u and v2 from column order[j] of b and v.
	k.Loop(tid, kk, ntid, func(j ptx.Reg) {
		col := l.u32At(ob, j)
		norm := l.f64(norms, col)
		k.Loop(zero, kk, one, func(i ptx.Reg) { l.setF64(v2, at(i, j), l.f64(v, at(i, col))) })
		pos := f.cmp("gt", norm, f.c(0))
		k.Loop(zero, r, one, func(i ptx.Reg) {
			l.setF64(u, at(i, j), f.sel(pos, f.div(l.f64(b, at(i, col)), norm), zeroF))
		})
	})
	k.Op("bar.sync 0")
	completed := k.Label("svd_completed")
	k.Op("@!%s bra %s", first, completed)
	k.Loop(zero, kk, one, func(j ptx.Reg) {
		skip := k.Label("svd_has_vector")
		k.Op("@%s bra %s", f.cmp("gt", l.f64(norms, l.u32At(ob, j)), f.c(0)), skip)
		completeBasis(k, l, f, u, r, kk, j, at)
		k.Place(skip)
	})
	k.Place(completed)
	k.Op("bar.sync 0")

	// The outputs: s scaled back, each pair signed by u's column.
	uB, sB, vtB := k.Addr(uo, l.mul(blk, l.mul(m, kk)), d.Size()), k.Addr(so, l.mul(blk, kk), d.Size()), k.Addr(vto, l.mul(blk, l.mul(kk, n)), d.Size())
	k.Loop(tid, kk, ntid, func(j ptx.Reg) {
		store(k, d, k.Addr(sB, j, d.Size()), narrow(k, d, f.mul(l.f64(norms, l.u32At(ob, j)), upScale)))
		// u's column j is b-side u (tall) or v2 (wide).
		ucol, urows := l.u64(), l.u64()
		k.Op("selp.u64 %s, %s, %s, %s", ucol, u, v2, tall)
		k.Op("selp.u64 %s, %s, %s, %s", urows, m, kk, tall)
		vcol := l.u64()
		k.Op("selp.u64 %s, %s, %s, %s", vcol, v2, u, tall)
		best, where := l.f64Imm(-1), l.u64()
		k.Op("mov.u64 %s, 0", where)
		k.Loop(zero, urows, one, func(i ptx.Reg) {
			mag := f.abs(l.f64(ucol, at(i, j)))
			gt := f.cmp("gt", mag, best)
			k.Op("@%s mov.f64 %s, %s", gt, best, mag)
			k.Op("@%s mov.u64 %s, %s", gt, where, i)
		})
		sign := f.sel(f.cmp("lt", l.f64(ucol, at(where, j)), f.c(0)), f.c(-1), f.c(1))
		k.Loop(zero, m, one, func(i ptx.Reg) {
			store(k, d, k.Addr(uB, at(i, j), d.Size()), narrow(k, d, f.mul(sign, l.f64(ucol, at(i, j)))))
		})
		k.Loop(zero, n, one, func(i ptx.Reg) {
			store(k, d, k.Addr(vtB, l.add(l.mul(j, n), i), d.Size()), narrow(k, d, f.mul(sign, l.f64(vcol, at(i, j)))))
		})
	})
	end := k.Label("svd_end")
	k.Op("bra %s", end)
	k.Place(fillNaN)
	l.fillNaN(d, blk, tid, ntid, uo, l.mul(m, kk), so, kk, vto, l.mul(kk, n))
	k.Place(end)
	return k
}

// completeBasis sets column j of u (rows×k) to the first eᵢ made
// orthogonal to u's earlier columns by two passes of Gram and Schmidt
// whose remainder is at least ½ long, normalized (the CPU's
// completeBasis); one thread.
func completeBasis(k *ptx.Kernel, l la, f fm, u, rows, kk, j ptx.Reg, at func(i, c ptx.Reg) ptx.Reg) {
	zero, one := l.imm(0), l.imm(1)
	found := k.Label("svd_basis_found")
	k.Loop(zero, rows, one, func(e ptx.Reg) {
		k.Loop(zero, rows, one, func(i ptx.Reg) {
			isE := k.Reg(ptx.Pred)
			k.Op("setp.eq.u64 %s, %s, %s", isE, i, e)
			l.setF64(u, at(i, j), f.sel(isE, f.c(1), f.c(0)))
		})
		k.Loop(zero, l.imm(2), one, func(ptx.Reg) {
			k.Loop(zero, j, one, func(p ptx.Reg) {
				dot := l.f64Imm(0)
				k.Loop(zero, rows, one, func(i ptx.Reg) {
					k.Op("add.rn.f64 %s, %s, %s", dot, dot, f.mul(l.f64(u, at(i, p)), l.f64(u, at(i, j))))
				})
				k.Loop(zero, rows, one, func(i ptx.Reg) {
					l.setF64(u, at(i, j), f.sub(l.f64(u, at(i, j)), f.mul(dot, l.f64(u, at(i, p)))))
				})
			})
		})
		sum := l.f64Imm(0)
		k.Loop(zero, rows, one, func(i ptx.Reg) {
			x := l.f64(u, at(i, j))
			k.Op("add.rn.f64 %s, %s, %s", sum, sum, f.mul(x, x))
		})
		norm := f.sqrt(sum)
		short := f.cmp("lt", norm, f.c(0.5))
		next := k.Label("svd_basis_next")
		k.Op("@%s bra %s", short, next)
		k.Loop(zero, rows, one, func(i ptx.Reg) { l.setF64(u, at(i, j), f.div(l.f64(u, at(i, j)), norm)) })
		k.Op("bra %s", found)
		k.Place(next)
	})
	k.Place(found)
}
