package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// The float64 kernels of ops/trigonometry.go's functions (float32 and the
// half types compute through them, rounded once): the inverse
// trigonometric functions from one arctangent on [0, 1], the hyperbolic
// ones from exp, expm1, log and log1p, the logarithms of bases 2 and 10
// from the double-double ln x (exact at their bases' powers), 2^x with
// its argument split exactly (exact at integers).

// π/2 and π/4 as double-doubles.
var (
	halfPiHi, halfPiLo = math.Pi / 2, 6.123233995736766e-17
	quarterPiHi        = math.Pi / 4
	quarterPiLo        = halfPiLo / 2
	piLo               = 2 * halfPiLo
)

// tanPiOver8 is tan(π/8) = √2 - 1, where atanUnit's reduction starts.
const tanPiOver8 = 0.41421356237309503

// sqrt is the correctly rounded square root.
func (m fm) sqrt(a any) ptx.Reg {
	r := m.reg()
	m.k.Op("sqrt.rn.%s %s, %s", m.typ(), r, a)
	return r
}

// atanSmall is atan v for |v| ≤ tan(π/8): v + v·z·P(z), z = v², P the
// Taylor series' (-1/3 + z/5 - ...) to 2⁻⁵⁶.
func (m fm) atanSmall(v ptx.Reg) ptx.Reg {
	c := make([]float64, 22)
	for i := range c {
		c[i] = 1 / float64(2*i+3)
		if i%2 == 0 {
			c[i] = -c[i]
		}
	}
	z := m.mul(v, v)
	return m.fma(m.mul(v, z), m.poly(z, c), v)
}

// atanUnit is atan t for t in [0, 1] (or NaN): past tan(π/8) as π/4 +
// atan((t-1)/(t+1)).
func (m fm) atanUnit(t ptx.Reg) ptx.Reg {
	mid := m.cmp("gt", t, m.c(tanPiOver8))
	v := m.sel(mid, m.div(m.sub(t, m.c(1)), m.add(t, m.c(1))), t)
	a := m.atanSmall(v)
	return m.sel(mid, m.add(m.add(a, m.c(quarterPiLo)), m.c(quarterPiHi)), a)
}

// fromHalfPi is π/2 - a, π/2 carried in two parts.
func (m fm) fromHalfPi(a ptx.Reg) ptx.Reg {
	return m.add(m.sub(m.c(halfPiHi), a), m.c(halfPiLo))
}

func (m fm) atan(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	big := m.cmp("gt", a, m.c(1))
	r := m.atanUnit(m.sel(big, m.div(m.c(1), a), a))
	return m.copysign(m.sel(big, m.fromHalfPi(r), r), x)
}

// atan2 is the angle of (x, y) with C's special cases: the smaller of |x|
// and |y| over the larger into atanUnit, then the octant and the quadrant
// by their magnitudes and signs (a negative zero x counting as negative).
func (m fm) atan2(y, x ptx.Reg) ptx.Reg {
	ay, ax := m.abs(y), m.abs(x)
	swap := m.cmp("gt", ay, ax)
	t := m.div(m.sel(swap, ax, ay), m.sel(swap, ay, ax))
	bothInf := m.and(m.cmp("eq", ax, m.c(math.Inf(1))), m.cmp("eq", ay, m.c(math.Inf(1))))
	bothZero := m.and(m.cmp("eq", ax, m.c(0)), m.cmp("eq", ay, m.c(0)))
	t = m.sel(bothInf, m.c(1), m.sel(bothZero, m.c(0), t))
	a := m.atanUnit(t)
	a = m.sel(swap, m.fromHalfPi(a), a)
	xNeg := m.cmp("lt", m.copysign(m.c(1), x), m.c(0))
	a = m.sel(xNeg, m.add(m.sub(m.c(math.Pi), a), m.c(piLo)), a)
	return m.copysign(a, y)
}

// unitRoot is √((1-x)(1+x)): 1 - x is exact near ±1, where 1 - x²
// cancels.
func (m fm) unitRoot(x ptx.Reg) ptx.Reg {
	return m.sqrt(m.mul(m.sub(m.c(1), x), m.add(m.c(1), x)))
}

func (m fm) asin(x ptx.Reg) ptx.Reg { return m.atan2(x, m.unitRoot(x)) }
func (m fm) acos(x ptx.Reg) ptx.Reg { return m.atan2(m.unitRoot(x), x) }

// halfExp is e^a/2 for a > 21, finite to a ≈ 710.4758: (e^(a/2)·½)·e^(a/2)
// (e^a overflows first).
func (m fm) halfExp(a ptx.Reg) ptx.Reg {
	e := m.exp(m.mul(a, m.c(0.5)))
	return m.mul(m.mul(e, m.c(0.5)), e)
}

// sinh is ½(E + E/(E+1)), E = e^|x| - 1, below 21 (no cancellation near
// 0), e^|x|/2 above; the sign x's.
func (m fm) sinh(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	e := m.expm1(m.min(a, m.c(22)))
	small := m.mul(m.c(0.5), m.add(e, m.div(e, m.add(e, m.c(1)))))
	return m.fixNaN(m.copysign(m.sel(m.cmp("gt", a, m.c(21)), m.halfExp(a), small), x), x)
}

// cosh is ½(E + 1/E), E = e^|x|, below 21, e^|x|/2 above.
func (m fm) cosh(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	e := m.exp(m.min(a, m.c(22)))
	small := m.mul(m.c(0.5), m.add(e, m.div(m.c(1), e)))
	return m.fixNaN(m.sel(m.cmp("gt", a, m.c(21)), m.halfExp(a), small), x)
}

// hugeArg is where asinh and acosh take ln x + ln 2 (x² would lose
// nothing to the 1 beside it).
const hugeArg = 0x1p28

// asinh is log1p(a + a²/(1 + √(1 + a²))), a = |x|, up to 2²⁸, ln a +
// ln 2 past it; the sign x's.
func (m fm) asinh(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	ac := m.min(a, m.c(hugeArg))
	a2 := m.mul(ac, ac)
	near := m.log1p(m.add(ac, m.div(a2, m.add(m.c(1), m.sqrt(m.add(m.c(1), a2))))))
	far := m.add(m.log(a), m.c(math.Ln2))
	return m.fixNaN(m.copysign(m.sel(m.cmp("gt", a, m.c(hugeArg)), far, near), x), x)
}

// acosh is log1p(t + √(2t + t²)), t = x - 1 (exact for x in [1, 2]), up
// to 2²⁸, ln x + ln 2 past it; NaN below 1.
func (m fm) acosh(x ptx.Reg) ptx.Reg {
	t := m.sub(m.min(x, m.c(hugeArg)), m.c(1))
	near := m.log1p(m.add(t, m.sqrt(m.fma(t, t, m.add(t, t)))))
	far := m.add(m.log(x), m.c(math.Ln2))
	r := m.fixNaN(m.sel(m.cmp("gt", x, m.c(hugeArg)), far, near), x)
	return m.sel(m.cmp("lt", x, m.c(1)), m.c(math.NaN()), r)
}

// atanh is ½·log1p(2a/(1 - a)), a = |x|; the sign x's.
func (m fm) atanh(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	return m.copysign(m.mul(m.c(0.5), m.log1p(m.div(m.add(a, a), m.sub(m.c(1), a)))), x)
}

// logBase is ln x times 1/ln b, both double-doubles (invHi + invLo), with
// log's special cases: within about half an ulp, so exact where the
// result is an integer.
func (m fm) logBase(x ptx.Reg, invHi, invLo float64) ptx.Reg {
	hi, lo := m.logDD(m.max(m.min(x, m.c(math.MaxFloat64)), m.c(math.SmallestNonzeroFloat64)))
	p := m.mul(hi, m.c(invHi))
	r := m.add(p, m.add(m.add(m.fma(hi, m.c(invHi), m.sub(m.c(0), p)), m.mul(hi, m.c(invLo))), m.mul(lo, m.c(invHi))))
	r = m.sel(m.cmp("eq", x, m.c(math.Inf(1))), x, r)
	r = m.sel(m.cmp("eq", x, m.c(0)), m.c(math.Inf(-1)), r)
	return m.sel(m.cmp("ltu", x, m.c(0)), m.c(math.NaN()), r)
}

func (m fm) log2(x ptx.Reg) ptx.Reg  { return m.logBase(x, mathx.InvLn2Hi, mathx.InvLn2Lo) }
func (m fm) log10(x ptx.Reg) ptx.Reg { return m.logBase(x, mathx.InvLn10Hi, mathx.InvLn10Lo) }

// exp2 is 2^x: n = round(x), r = x - n exactly, e^(r·ln 2) with the
// product's rounding carried, times 2^n in two factors (one rounding into
// the subnormals).
func (m fm) exp2(x ptx.Reg) ptx.Reg {
	xc := m.min(m.max(x, m.c(-1100)), m.c(1100))
	n := m.round("rni", xc)
	r := m.sub(xc, n)
	th := m.mul(r, m.c(ln2Hi))
	tl := m.fma(r, m.c(ln2Lo), m.fma(r, m.c(ln2Hi), m.sub(m.c(0), th)))
	e := m.exp(th)
	e = m.fma(e, tl, e)
	n1 := m.round("rzi", m.mul(n, m.c(0.5)))
	return m.fixNaN(m.mul(m.mul(e, m.pow2(n1)), m.pow2(m.sub(n, n1))), x)
}

// hypot is p·√(1 + (q/p)²), p and q the larger and smaller of |a| and
// |b|: +Inf where either is infinite (a NaN beside it too), NaN where
// either is NaN otherwise, 0 where both are 0.
func (m fm) hypot(a, b ptx.Reg) ptx.Reg {
	aa, ab := m.abs(a), m.abs(b)
	p, q := m.max(aa, ab), m.min(aa, ab)
	r := m.div(q, p)
	h := m.mul(p, m.sqrt(m.fma(r, r, m.c(1))))
	h = m.sel(m.cmp("eq", p, m.c(0)), m.c(0), h)
	h = m.sel(m.cmp("nan", a, b), m.c(math.NaN()), h)
	inf := m.or(m.cmp("eq", aa, m.c(math.Inf(1))), m.cmp("eq", ab, m.c(math.Inf(1))))
	return m.sel(inf, m.c(math.Inf(1)), h)
}

// logaddexp is max(a, b) + log1p(e^-|a-b|), a + ln 2 where a = b.
func (m fm) logaddexp(a, b ptx.Reg) ptx.Reg {
	d := m.abs(m.sub(a, b))
	r := m.add(m.max(a, b), m.log1p(m.exp(m.sub(m.c(0), d))))
	r = m.sel(m.cmp("nan", a, b), m.c(math.NaN()), r) // PTX's max drops a NaN
	return m.sel(m.cmp("eq", a, b), m.add(a, m.c(math.Ln2)), r)
}
