package kernels

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// Sine and cosine of large arguments (|x| ≥ 2²⁸, where k·π/2 in three
// parts no longer reduces exactly): Payne and Hanek's reduction, x·2/π
// mod 4 from the bits of 2/π that matter at x's exponent. x = m·2^E (m
// the 53-bit mantissa); the bits of 2/π from 2^-(E-1) on, 192 of them as
// three words W, times m (a 245-bit product, by 64-bit multiplies): its
// bits 191-190 are the quadrant, the 128 below them the fraction f
// (taken in [-½, ½), the quadrant one up where it is past ½), and r =
// f·π/2.

// largeArgument is where sincos takes Payne and Hanek's reduction.
const largeArgument = 0x1p28

// reduceLarge is the reduction of finite ax ≥ largeArgument: r (float64,
// |r| ≤ π/4) and the quadrant q (s64; its two low bits matter), ax = (q +
// f)·π/2 + (multiples of 2π), r = f·π/2.
func (m fm) reduceLarge(ax ptx.Reg) (r, q ptx.Reg) {
	k := m.k
	u64 := func() ptx.Reg { return k.Reg(ptx.U64) }
	bits, e, mant := u64(), u64(), u64()
	k.Op("mov.b64 %s, %s", bits, ax)
	k.Op("shr.u64 %s, %s, 52", e, bits)
	k.Op("and.b64 %s, %s, 4503599627370495", mant, bits)
	k.Op("or.b64 %s, %s, 4503599627370496", mant, mant) // ax = mant·2^(e-1075)
	// The window starts at 2/π's bit E - 1 (E = e - 1075), the stream's
	// position E + 62 (the zero word first).
	pos, idx := u64(), u64()
	k.Op("sub.u64 %s, %s, 1013", pos, e)
	k.Op("shr.u64 %s, %s, 6", idx, pos)
	sh, rsh := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", sh, pos)
	k.Op("and.b32 %s, %s, 63", sh, sh)
	k.Op("sub.u32 %s, 64, %s", rsh, sh) // 64 when sh is 0: PTX clamps, the shift gives 0
	table := func(i int) ptx.Reg {      // twoOverPiWords[idx + i], by a chain of selections
		at, w, p := u64(), u64(), k.Reg(ptx.Pred)
		k.Op("add.u64 %s, %s, %d", at, idx, i)
		k.Op("mov.u64 %s, 0", w)
		for j, v := range mathx.TwoOverPiWords {
			if v != 0 { // as a signed literal: PTX reads decimal integers as int64
				k.Op("setp.eq.u64 %s, %s, %d", p, at, j)
				k.Op("selp.b64 %s, %d, %s, %s", w, int64(v), w, p)
			}
		}
		return w
	}
	t := []ptx.Reg{table(0), table(1), table(2), table(3)}
	win := make([]ptx.Reg, 3) // the window's words, most significant first
	for j := range win {
		hi, lo := u64(), u64()
		k.Op("shl.b64 %s, %s, %s", hi, t[j], sh)
		k.Op("shr.b64 %s, %s, %s", lo, t[j+1], rsh)
		win[j] = u64()
		k.Op("or.b64 %s, %s, %s", win[j], hi, lo)
	}
	// mant × window: words p0 (least) to p2 of the product's low 192 bits.
	prod := func(w ptx.Reg) (lo, hi ptx.Reg) {
		lo, hi = u64(), u64()
		k.Op("mul.lo.u64 %s, %s, %s", lo, mant, w)
		k.Op("mul.hi.u64 %s, %s, %s", hi, mant, w)
		return lo, hi
	}
	l2, h2 := prod(win[2])
	l1, h1 := prod(win[1])
	l0, _ := prod(win[0])
	addCarry := func(a, b ptx.Reg) (sum, carry ptx.Reg) {
		sum, carry = u64(), u64()
		p := k.Reg(ptx.Pred)
		k.Op("add.u64 %s, %s, %s", sum, a, b)
		k.Op("setp.lt.u64 %s, %s, %s", p, sum, a)
		k.Op("selp.u64 %s, 1, 0, %s", carry, p)
		return sum, carry
	}
	p0 := l2
	p1, c1 := addCarry(h2, l1)
	p2, _ := addCarry(h1, l0)
	k.Op("add.u64 %s, %s, %s", p2, p2, c1)
	// The quadrant: bits 191-190 (p2's top two); the fraction below, as a
	// signed 64-bit word (past ½ it is negative, the quadrant one up) and
	// the next 64 bits.
	q = k.Reg(ptx.S64)
	k.Op("shr.u64 %s, %s, 62", q, p2)
	f64, next, tmp := k.Reg(ptx.S64), u64(), u64()
	k.Op("shl.b64 %s, %s, 2", f64, p2)
	k.Op("shr.u64 %s, %s, 62", tmp, p1)
	k.Op("or.b64 %s, %s, %s", f64, f64, tmp)
	k.Op("shl.b64 %s, %s, 2", next, p1)
	k.Op("shr.u64 %s, %s, 62", tmp, p0)
	k.Op("or.b64 %s, %s, %s", next, next, tmp)
	neg := k.Reg(ptx.Pred)
	k.Op("setp.lt.s64 %s, %s, 0", neg, f64)
	k.Op("@%s add.s64 %s, %s, 1", neg, q, q)
	// f = a·2⁻⁵³ + rest·2⁻⁶⁴ + next·2⁻¹²⁸, a = f64 >> 11 (53 bits, exact
	// in float64), rest its 11 low bits.
	a, rest := k.Reg(ptx.S64), u64()
	k.Op("shr.s64 %s, %s, 11", a, f64)
	k.Op("and.b64 %s, %s, 2047", rest, f64)
	fh, fr, fn := m.reg(), m.reg(), m.reg()
	k.Op("cvt.rn.f64.s64 %s, %s", fh, a)
	k.Op("cvt.rn.f64.u64 %s, %s", fr, rest)
	k.Op("cvt.rn.f64.u64 %s, %s", fn, next)
	fh = m.mul(fh, m.c(0x1p-53))
	fl := m.fma(fn, m.c(0x1p-128), m.mul(fr, m.c(0x1p-64)))
	// r = (fh + fl)·π/2, π/2 in two parts.
	r = m.fma(fh, m.c(pio2A), m.fma(fh, m.c(pio2B), m.mul(fl, m.c(pio2A))))
	return r, q
}
