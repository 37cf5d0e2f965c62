package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// expm_<f32|f64> (out, work, piv, a, n): MatrixExp's scaling and squaring
// (backend/cpu/linalg_expm.go's steps, bit for bit), a block per matrix:
// thread 0 takes ‖a‖₁, every thread then chooses the degree and the
// squarings alike; the products, the polynomials' sums and the squarings
// an element a thread, the LU factorization blockLU's, the solve a
// right-hand column a thread, a barrier after each. work is float64
// [batch, ExpmSlots, n, n], piv u32 [batch, n].

// ExpmSlots are the n×n float64 buffers expm_<d> takes per matrix: a,
// a², a⁴, a⁶, a⁸, the odd and even sums, u and a spare.
const ExpmSlots = 9

func expmKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("expm", string(d)))
	l, m := la{k}, fm{k: k}
	out, work, pv, a := k.ParamPtr("out"), k.ParamPtr("work"), k.ParamPtr("piv"), k.ParamPtr("a")
	n := k.Param("n", ptx.U64)
	tid, ntid, blk := l.special("tid.x"), l.special("ntid.x"), l.special("ctaid.x")
	zero, one := l.imm(0), l.imm(1)
	nn := l.mul(n, n)
	base := k.Addr(work, l.mul(blk, l.mul(l.imm(ExpmSlots), nn)), 8)
	slot := func(i int) ptx.Reg { return k.Addr(base, l.mul(l.imm(i), nn), 8) }
	wa, a2, a4, a6, a8, odd, even, u, spare := slot(0), slot(1), slot(2), slot(3), slot(4), slot(5), slot(6), slot(7), slot(8)
	pb, ab := k.Addr(pv, l.mul(blk, n), 4), k.Addr(a, l.mul(blk, nn), d.Size())
	first := k.Reg(ptx.Pred)
	k.Op("setp.eq.u64 %s, %s, %s", first, tid, zero)
	flag := l.blockFlag(first)
	k.Loop(tid, nn, ntid, func(e ptx.Reg) {
		x := l.at(d, ab, e)
		l.setF64(wa, e, x)
		flag.raise(m.not(m.cmp("lt", m.abs(x), m.c(math.Inf(1))))) // ±∞ or NaN
	})
	k.Op("bar.sync 0")
	fillNaN := k.Label("expm_nan")
	k.Op("@%s bra %s", flag.read(), fillNaN)

	// ‖a‖₁ by thread 0 (each column's sum, rows ascending), shared.
	normAt := k.Shared("expm_norm", 8, 8)
	norm, read := l.f64Imm(0), k.Label("expm_norm_read")
	k.Op("@%s bra %s", m.not(first), read)
	k.Loop(zero, n, one, func(j ptx.Reg) {
		sum := l.f64Imm(0)
		k.Loop(zero, n, one, func(i ptx.Reg) {
			k.Op("add.rn.f64 %s, %s, %s", sum, sum, m.abs(l.f64(wa, l.add(l.mul(i, n), j))))
		})
		k.Op("max.f64 %s, %s, %s", norm, norm, sum)
	})
	k.Op("st.shared.f64 [%s], %s", normAt, norm)
	k.Place(read)
	k.Op("bar.sync 0")
	k.Op("ld.shared.f64 %s, [%s]", norm, normAt)

	// The degree: the first θ that bounds the norm; else 13 and s
	// squarings, ⌈log₂(norm/θ₁₃)⌉ from the quotient's bits (mathx.Log2Ceil),
	// at most 1000.
	s := l.u64()
	k.Op("mov.u64 %s, 0", s)
	degree := map[int]string{}
	for i, deg := range mathx.ExpmDegrees[:len(mathx.ExpmDegrees)-1] {
		degree[deg] = k.Label("expm_degree")
		k.Op("@%s bra %s", m.cmp("le", norm, m.c(mathx.ExpmTheta[i])), degree[deg])
	}
	r := m.div(norm, m.c(mathx.ExpmTheta[len(mathx.ExpmTheta)-1]))
	scaled := k.Label("expm_scaled")
	k.Op("@%s bra %s", m.cmp("le", r, m.c(1)), scaled)
	bits, e, frac := l.u64(), l.u64(), l.u64()
	k.Op("mov.b64 %s, %s", bits, r)
	k.Op("shr.u64 %s, %s, 52", e, bits)
	k.Op("and.b64 %s, %s, 2047", e, e)
	k.Op("sub.u64 %s, %s, 1023", e, e)
	k.Op("and.b64 %s, %s, %d", frac, bits, uint64(1)<<52-1)
	inexact := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", inexact, frac)
	k.Op("@%s add.u64 %s, %s, 1", inexact, e, e)
	k.Op("min.u64 %s, %s, 1000", s, e)
	down, downBits := k.Reg(ptx.F64), l.u64() // 2⁻ˢ: exponent bits 1023 - s
	k.Op("sub.u64 %s, %s, %s", downBits, l.imm(1023), s)
	k.Op("shl.b64 %s, %s, 52", downBits, downBits)
	k.Op("mov.b64 %s, %s", down, downBits)
	k.Loop(tid, nn, ntid, func(e ptx.Reg) { l.setF64(wa, e, m.mul(l.f64(wa, e), down)) })
	k.Op("bar.sync 0")
	k.Place(scaled)

	mm := func(dst, x, y ptx.Reg) { l.blockMatMul(dst, x, y, n, nn, tid, ntid) }
	comb := func(dst ptx.Reg, set bool, coef []float64, mats []ptx.Reg, id float64) {
		l.blockCombine(dst, set, coef, mats, id, n, nn, tid, ntid)
	}
	sums := k.Label("expm_sums")
	{ // degree 13
		c := mathx.ExpmPade(13)
		mm(a2, wa, wa)
		mm(a4, a2, a2)
		mm(a6, a4, a2)
		high := []ptx.Reg{a6, a4, a2}
		for _, side := range []struct {
			x     ptx.Reg
			first int
		}{{odd, 1}, {even, 0}} {
			f := side.first
			comb(spare, true, []float64{c[f+12], c[f+10], c[f+8]}, high, 0)
			mm(side.x, a6, spare)
			comb(side.x, false, []float64{c[f+6], c[f+4], c[f+2]}, high, c[f])
		}
		k.Op("bra %s", sums)
	}
	powers := []ptx.Reg{a2, a4, a6, a8}
	for _, deg := range []int{3, 5, 7, 9} {
		k.Place(degree[deg])
		c := mathx.ExpmPade(deg)
		mm(a2, wa, wa)
		if deg >= 5 {
			mm(a4, a2, a2)
		}
		if deg >= 7 {
			mm(a6, a4, a2)
		}
		if deg == 9 {
			mm(a8, a4, a4)
		}
		top := (deg - 1) / 2
		for _, side := range []struct {
			x     ptx.Reg
			first int
		}{{odd, 1}, {even, 0}} {
			coef, mats := make([]float64, top), make([]ptx.Reg, top)
			for j := range coef { // from the highest power down
				coef[j], mats[j] = c[2*(top-j)+side.first], powers[top-1-j]
			}
			comb(side.x, true, coef, mats, c[side.first])
		}
		k.Op("bra %s", sums)
	}
	k.Place(sums)
	mm(u, wa, odd)
	// q = v - u into spare, p = v + u into even; x = q⁻¹·p.
	k.Loop(tid, nn, ntid, func(e ptx.Reg) {
		v, ue := l.f64(even, e), l.f64(u, e)
		l.setF64(spare, e, m.sub(v, ue))
		l.setF64(even, e, m.add(v, ue))
	})
	k.Op("bar.sync 0")
	l.blockLU(spare, pb, n, tid, ntid)
	l.solveColumns(spare, pb, even, n, tid, ntid)
	k.Op("bar.sync 0")
	// s squarings, x and the spare buffer swapping roles.
	x, t := l.u64(), l.u64()
	k.Op("mov.u64 %s, %s", x, even)
	k.Op("mov.u64 %s, %s", t, u)
	k.Loop(zero, s, one, func(ptx.Reg) {
		mm(t, x, x)
		tmp := l.u64()
		k.Op("mov.u64 %s, %s", tmp, x)
		k.Op("mov.u64 %s, %s", x, t)
		k.Op("mov.u64 %s, %s", t, tmp)
	})
	ob := k.Addr(out, l.mul(blk, nn), d.Size())
	k.Loop(tid, nn, ntid, func(e ptx.Reg) { store(k, d, k.Addr(ob, e, d.Size()), narrow(k, d, l.f64(x, e))) })
	end := k.Label("expm_end")
	k.Op("bra %s", end)
	k.Place(fillNaN)
	l.fillNaN(d, blk, tid, ntid, out, nn)
	k.Place(end)
	return k
}

// blockMatMul has the block set dst = x·y (n×n float64), an element a
// thread, its sum over k ascending from the first product (the CPU's
// matMul); a barrier after.
func (l la) blockMatMul(dst, x, y, n, nn, tid, ntid ptx.Reg) {
	k := l.k
	zero, one := l.imm(0), l.imm(1)
	k.Loop(tid, nn, ntid, func(e ptx.Reg) {
		i, j := l.op("div", e, n), l.op("rem", e, n)
		sum := l.f64Imm(0)
		k.Loop(zero, n, one, func(c ptx.Reg) {
			p := k.Reg(ptx.F64)
			k.Op("mul.rn.f64 %s, %s, %s", p, l.f64(x, l.add(l.mul(i, n), c)), l.f64(y, l.add(l.mul(c, n), j)))
			k.Op("add.rn.f64 %s, %s, %s", sum, sum, p)
		})
		l.setF64(dst, e, sum)
	})
	k.Op("bar.sync 0")
}

// blockCombine has the block set (set) or add to dst Σ coef[i]·mats[i]
// (n×n float64 each), each element's terms added in order, then id on the
// diagonal where id is not 0 (the CPU's combine); a barrier after.
func (l la) blockCombine(dst ptx.Reg, set bool, coef []float64, mats []ptx.Reg, id float64, n, nn, tid, ntid ptx.Reg) {
	k, m := l.k, fm{k: l.k}
	k.Loop(tid, nn, ntid, func(e ptx.Reg) {
		acc := l.f64Imm(0)
		for i, x := range mats {
			p := m.mul(m.c(coef[i]), l.f64(x, e))
			switch {
			case i == 0 && set:
				k.Op("mov.f64 %s, %s", acc, p)
			case i == 0:
				k.Op("add.rn.f64 %s, %s, %s", acc, l.f64(dst, e), p)
			default:
				k.Op("add.rn.f64 %s, %s, %s", acc, acc, p)
			}
		}
		if id != 0 {
			diag := k.Reg(ptx.Pred)
			k.Op("setp.eq.u64 %s, %s, %s", diag, l.op("div", e, n), l.op("rem", e, n))
			k.Op("@%s add.rn.f64 %s, %s, %s", diag, acc, acc, m.c(id))
		}
		l.setF64(dst, e, acc)
	})
	k.Op("bar.sync 0")
}

// solveColumns overwrites y (n×n float64, row-major) with w⁻¹·y for the
// factors blockLU left at w and the exchanges at pb, a right-hand column
// a thread (the CPU's luSolve: the exchanges in order, L's forward and
// U's backward substitution, each sum over k ascending).
func (l la) solveColumns(w, pb, y, n, tid, ntid ptx.Reg) {
	k := l.k
	zero, one := l.imm(0), l.imm(1)
	at := func(i, c ptx.Reg) ptx.Reg { return l.add(l.mul(i, n), c) }
	k.Loop(tid, n, ntid, func(col ptx.Reg) {
		k.Loop(zero, n, one, func(j ptx.Reg) {
			p := l.u32At(pb, j)
			x, z := l.f64(y, at(j, col)), l.f64(y, at(p, col))
			l.setF64(y, at(j, col), z)
			l.setF64(y, at(p, col), x)
		})
		k.Loop(zero, n, one, func(i ptx.Reg) {
			s := l.f64From(l.f64(y, at(i, col)))
			k.Loop(zero, i, one, func(c ptx.Reg) { l.subProduct(s, l.f64(w, at(i, c)), l.f64(y, at(c, col))) })
			l.setF64(y, at(i, col), s)
		})
		k.Loop(zero, n, one, func(step ptx.Reg) {
			i := l.op("sub", l.op("sub", n, one), step)
			s := l.f64From(l.f64(y, at(i, col)))
			k.Loop(l.add(i, one), n, one, func(c ptx.Reg) { l.subProduct(s, l.f64(w, at(i, c)), l.f64(y, at(c, col))) })
			k.Op("div.rn.f64 %s, %s, %s", s, s, l.f64(w, at(i, i)))
			l.setF64(y, at(i, col), s)
		})
	})
}
