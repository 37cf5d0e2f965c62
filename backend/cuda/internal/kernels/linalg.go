package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Linear algebra (family "linalg"), the CPU's algorithms with its order
// of operations (backend/cpu/linalg.go): sums in float64, each product
// and difference rounded apart (no fused multiply-add), so that the
// devices agree bit for bit.
//   - cholesky_<f32|f64> (out, a, n): a block per matrix of the batch
//     (the grid's blocks), its threads taking the rows below each
//     column's pivot, a barrier between columns; a pivot not above 0 (or
//     NaN) leaves the matrix NaN.
//   - trisolve_<f32|f64>_<l|u>[t][1] (out, a, b, n, m, jobs): the lower
//     or upper triangle, transposed (t), a unit diagonal (1); a thread
//     per right-hand column (jobs = batch·m), its rows in order.

// LinalgTypes are the dtypes of the linalg kernels.
var LinalgTypes = []DType{F32, F64}

// SolveVariant names a triangular solve's form.
type SolveVariant struct{ Upper, Transpose, Unit bool }

// Suffix is the variant's part of its kernel's name.
func (v SolveVariant) Suffix() string {
	s := "l"
	if v.Upper {
		s = "u"
	}
	if v.Transpose {
		s += "t"
	}
	if v.Unit {
		s += "1"
	}
	return s
}

func linalgKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range LinalgTypes {
		out = append(out, choleskyKernel(d), luKernel(d), luOutKernel(d), luSolveKernel(d), detKernel(d, false), detKernel(d, true),
			expmKernel(d), eighKernel(d), qrKernel(d), svdKernel(d))
		for _, upper := range []bool{false, true} {
			for _, trans := range []bool{false, true} {
				for _, unit := range []bool{false, true} {
					out = append(out, triangularSolveKernel(d, SolveVariant{upper, trans, unit}))
				}
			}
		}
	}
	return out
}

// la holds a linalg kernel's 64-bit index arithmetic.
type la struct{ k *ptx.Kernel }

func (l la) u64() ptx.Reg { return l.k.Reg(ptx.U64) }

func (l la) imm(v int) ptx.Reg {
	r := l.u64()
	l.k.Op("mov.u64 %s, %d", r, v)
	return r
}

// special is a 64-bit copy of the special register name (tid.x, ...).
func (l la) special(name string) ptx.Reg {
	r32, r := l.k.Reg(ptx.U32), l.u64()
	l.k.Op("mov.u32 %s, %%%s", r32, name)
	l.k.Op("cvt.u64.u32 %s, %s", r, r32)
	return r
}

func (l la) op(op string, a, b ptx.Reg) ptx.Reg {
	r := l.u64()
	l.k.Op("%s.u64 %s, %s, %s", op, r, a, b)
	return r
}

func (l la) mul(a, b ptx.Reg) ptx.Reg { return l.op("mul.lo", a, b) }
func (l la) add(a, b ptx.Reg) ptx.Reg { return l.op("add", a, b) }

// at is the float64 value of the element i of the d array at p.
func (l la) at(d DType, p, i ptx.Reg) ptx.Reg {
	return widen(l.k, d, load(l.k, d, l.k.Addr(p, i, d.Size())))
}

// subProduct writes s -= x·y, the product rounded first.
func (l la) subProduct(s, x, y ptx.Reg) {
	t := l.k.Reg(ptx.F64)
	l.k.Op("mul.rn.f64 %s, %s, %s", t, x, y)
	l.k.Op("sub.rn.f64 %s, %s, %s", s, s, t)
}

// f64From is a new float64 register holding v.
func (l la) f64From(v ptx.Reg) ptx.Reg {
	r := l.k.Reg(ptx.F64)
	l.k.Op("mov.f64 %s, %s", r, v)
	return r
}

// fill stores v (of d's register type) at each of the n elements of p
// from the thread's index on, a block's threads together.
func (l la) fill(d DType, p, n, tid, ntid ptx.Reg, v string) {
	r := l.k.Reg(d.reg())
	l.k.Op("mov.%s %s, %s", d.reg(), r, v)
	l.k.Loop(tid, n, ntid, func(e ptx.Reg) { store(l.k, d, l.k.Addr(p, e, d.Size()), r) })
}

func choleskyKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("cholesky", string(d)))
	l := la{k}
	o, a := k.ParamPtr("out"), k.ParamPtr("a")
	n := k.Param("n", ptx.U64)
	tid, ntid, blk := l.special("tid.x"), l.special("ntid.x"), l.special("ctaid.x")
	nn := l.mul(n, n)
	base := l.mul(blk, nn)
	ob, ab := k.Addr(o, base, d.Size()), k.Addr(a, base, d.Size())
	zero, one := l.imm(0), l.imm(1)
	l.fill(d, ob, nn, tid, ntid, ptx.Imm(d.reg(), 0))
	bad, first := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, %s", bad, zero, zero)
	k.Op("setp.eq.u64 %s, %s, %s", first, tid, zero)
	k.Loop(zero, n, one, func(j ptx.Reg) {
		k.Op("bar.sync 0") // the previous column's rows written
		rowj := l.mul(j, n)
		piv := l.f64From(l.at(d, ab, l.add(rowj, j)))
		k.Loop(zero, j, one, func(c ptx.Reg) {
			v := l.at(d, ob, l.add(rowj, c))
			l.subProduct(piv, v, v)
		})
		ok := k.Reg(ptx.Pred)
		k.Op("setp.gt.f64 %s, %s, %s", ok, piv, ptx.Imm(ptx.F64, 0))
		k.Op("@!%s setp.eq.u64 %s, %s, %s", ok, bad, zero, zero) // bad from here on
		ljj := k.Reg(ptx.F64)
		k.Op("sqrt.rn.f64 %s, %s", ljj, piv)
		k.Op("@%s st.global.%s [%s], %s", first, d.mem(), k.Addr(ob, l.add(rowj, j), d.Size()), narrow(k, d, ljj))
		k.Loop(l.add(l.add(j, one), tid), n, ntid, func(i ptx.Reg) {
			rowi := l.mul(i, n)
			s := l.f64From(l.at(d, ab, l.add(rowi, j)))
			k.Loop(zero, j, one, func(c ptx.Reg) {
				l.subProduct(s, l.at(d, ob, l.add(rowi, c)), l.at(d, ob, l.add(rowj, c)))
			})
			q := k.Reg(ptx.F64)
			k.Op("div.rn.f64 %s, %s, %s", q, s, ljj)
			store(k, d, k.Addr(ob, l.add(rowi, j), d.Size()), narrow(k, d, q))
		})
	})
	k.Op("bar.sync 0")
	done := k.Label("cholesky_done")
	k.Op("@!%s bra %s", bad, done)
	l.fill(d, ob, nn, tid, ntid, ptx.Imm(d.reg(), math.NaN()))
	k.Place(done)
	return k
}

func triangularSolveKernel(d DType, v SolveVariant) *ptx.Kernel {
	k := ptx.NewKernel(Name("trisolve", string(d), v.Suffix()))
	l := la{k}
	o, a, b := k.ParamPtr("out"), k.ParamPtr("a"), k.ParamPtr("b")
	n, m, jobs := k.Param("n", ptx.U64), k.Param("m", ptx.U64), k.Param("jobs", ptx.U64)
	zero, one := l.imm(0), l.imm(1)
	forward := v.Upper == v.Transpose // the rows in order: the matrix solved is lower-triangular
	k.GridStride(jobs, func(job ptx.Reg) {
		batch, col := l.op("div", job, m), l.op("rem", job, m)
		ab := k.Addr(a, l.mul(batch, l.mul(n, n)), d.Size())
		off := l.mul(batch, l.mul(n, m))
		bb, xb := k.Addr(b, off, d.Size()), k.Addr(o, off, d.Size())
		k.Loop(zero, n, one, func(step ptx.Reg) {
			i, from, to := step, zero, step
			if !forward {
				i = l.op("sub", l.op("sub", n, one), step)
				from, to = l.add(i, one), n
			}
			s := l.f64From(l.at(d, bb, l.add(l.mul(i, m), col)))
			k.Loop(from, to, one, func(c ptx.Reg) {
				mik := l.add(l.mul(i, n), c)
				if v.Transpose {
					mik = l.add(l.mul(c, n), i)
				}
				l.subProduct(s, l.at(d, ab, mik), l.at(d, xb, l.add(l.mul(c, m), col)))
			})
			if !v.Unit {
				k.Op("div.rn.f64 %s, %s, %s", s, s, l.at(d, ab, l.add(l.mul(i, n), i)))
			}
			store(k, d, k.Addr(xb, l.add(l.mul(i, m), col), d.Size()), narrow(k, d, s))
		})
	})
	return k
}

// u32At is the u32 element i of p, as u64.
func (l la) u32At(p, i ptx.Reg) ptx.Reg {
	r32, r := l.k.Reg(ptx.U32), l.u64()
	l.k.Op("ld.global.u32 %s, [%s]", r32, l.k.Addr(p, i, 4))
	l.k.Op("cvt.u64.u32 %s, %s", r, r32)
	return r
}

// setU32 stores the u64 v as the u32 element i of p.
func (l la) setU32(p, i, v ptx.Reg) {
	r32 := l.k.Reg(ptx.U32)
	l.k.Op("cvt.u32.u64 %s, %s", r32, v)
	l.k.Op("st.global.u32 [%s], %s", l.k.Addr(p, i, 4), r32)
}

// jacobiRotation is the rotation (c, s) and its tangent t for θ (the CPU's
// jacobiRotation): the smaller root of t² + 2θt - 1 = 0, 1/(2θ) where θ²
// overflows.
func (m fm) jacobiRotation(theta ptx.Reg) (c, s, t ptx.Reg) {
	at := m.abs(theta)
	t = m.div(m.c(1), m.add(at, m.sqrt(m.add(m.mul(theta, theta), m.c(1)))))
	t = m.sel(m.cmp("gt", at, m.c(1e150)), m.div(m.c(0.5), at), t)
	t = m.sel(m.cmp("lt", theta, m.c(0)), m.neg(t), t)
	c = m.div(m.c(1), m.sqrt(m.add(m.mul(t, t), m.c(1))))
	return c, m.mul(t, c), t
}

// turn rotates the float64 elements p and q of x by (c, s): c·xp - s·xq,
// s·xp + c·xq.
func (l la) turn(m fm, x, p, q, c, s ptx.Reg) {
	xp, xq := l.f64(x, p), l.f64(x, q)
	l.setF64(x, p, m.sub(m.mul(c, xp), m.mul(s, xq)))
	l.setF64(x, q, m.add(m.mul(s, xp), m.mul(c, xq)))
}

// insertionOrder has the thread where first write 0..n-1 into the u32
// array order, sorted by before (a predicate of two places; an insertion
// sort, equals keeping their order); the block waits for it.
func (l la) insertionOrder(m fm, order, n, first ptx.Reg, before func(i, j ptx.Reg) ptx.Reg) {
	k := l.k
	zero, one := l.imm(0), l.imm(1)
	sorted := k.Label("sorted")
	k.Op("@!%s bra %s", first, sorted)
	k.Loop(zero, n, one, func(i ptx.Reg) {
		l.setU32(order, i, i)
		j := l.u64()
		k.Op("mov.u64 %s, %s", j, i)
		back, stop := k.Label("insert"), k.Label("inserted")
		k.Place(back)
		atStart := k.Reg(ptx.Pred)
		k.Op("setp.eq.u64 %s, %s, 0", atStart, j)
		k.Op("@%s bra %s", atStart, stop)
		jm := l.op("sub", j, one)
		oj, om := l.u32At(order, j), l.u32At(order, jm)
		k.Op("@!%s bra %s", before(oj, om), stop)
		l.setU32(order, j, om)
		l.setU32(order, jm, oj)
		k.Op("mov.u64 %s, %s", j, jm)
		k.Op("bra %s", back)
		k.Place(stop)
	})
	k.Place(sorted)
	k.Op("bar.sync 0")
}

// flag is a block's shared flag, lowered by the thread where first.
type flag struct {
	l       la
	at      ptx.Reg
	no, yes ptx.Reg
}

// blockFlag declares the block's flag and lowers it; a barrier follows.
func (l la) blockFlag(first ptx.Reg) flag {
	f := flag{l: l, at: l.k.Shared("flag", 4, 4), no: l.k.Reg(ptx.U32), yes: l.k.Reg(ptx.U32)}
	l.k.Op("mov.u32 %s, 0", f.no)
	l.k.Op("mov.u32 %s, 1", f.yes)
	l.k.Op("@%s st.shared.u32 [%s], %s", first, f.at, f.no)
	l.k.Op("bar.sync 0")
	return f
}

// raise raises the flag where p holds.
func (f flag) raise(p ptx.Reg) { f.l.k.Op("@%s st.shared.u32 [%s], %s", p, f.at, f.yes) }

// read is whether the flag is up (after a barrier).
func (f flag) read() ptx.Reg {
	v, p := f.l.k.Reg(ptx.U32), f.l.k.Reg(ptx.Pred)
	f.l.k.Op("ld.shared.u32 %s, [%s]", v, f.at)
	f.l.k.Op("setp.ne.u32 %s, %s, 0", p, v)
	return p
}

// fillNaN has the block write NaN over its matrix's outputs: pairs of an
// output pointer and its elements per matrix.
func (l la) fillNaN(d DType, blk, tid, ntid ptx.Reg, outs ...ptx.Reg) {
	nan := l.k.Reg(d.reg())
	l.k.Op("mov.%s %s, %s", d.reg(), nan, ptx.Imm(d.reg(), math.NaN()))
	for i := 0; i < len(outs); i += 2 {
		base, count := l.k.Addr(outs[i], l.mul(blk, outs[i+1]), d.Size()), outs[i+1]
		l.k.Loop(tid, count, ntid, func(e ptx.Reg) { store(l.k, d, l.k.Addr(base, e, d.Size()), nan) })
	}
}
