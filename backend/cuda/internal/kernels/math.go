package kernels

import (
	"math"
	"sort"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// The transcendental functions in float64, written out as PTX (the GPU has
// no float64 instructions for them): range reduction and polynomials
// whose truncation error is below half an ulp, so each is within a few
// ulps of the correctly rounded value. Float32 ops convert to float64,
// compute, and round once, as the CPU's float32 Softplus and Pow do.
//
//	exp      n = round(x·log₂e), r = x − n·ln2 (two-part ln2, by fma),
//	         e^r by its Taylor series to r¹³ (|r| ≤ ln2/2), times 2^n built
//	         in two halves so that subnormal and overflowing results come
//	         out right.
//	log      x = 2^e·m with m in [√½, √2) (subnormals scaled by 2⁵⁴ first),
//	         log m = 2·atanh(f), f = (m−1)/(m+1), by its series to f²³.
//	expm1    its Taylor series to x¹⁷ for |x| < ½, else exp(x) − 1.
//	log1p    u = 1+x; x where u = 1, else log(u)·x/(u−1) (the rounding of
//	         u cancels).
//	tanh     copysign(t/(t+2), x), t = expm1(2|x|); 1 beyond |x| = 22.
//	sigmoid  1/(1+e^−x) for x ≥ 0, e^x/(1+e^x) below, as the CPU.
//	softplus max(x, 0) + log1p(e^−|x|), as the CPU.
//	erf      (2/√π)·e^−a²·Σ (2a²)ⁿ·a/(1·3·…·(2n+1)) for a = |x| < 2 (terms
//	         all positive: no cancellation; a² split exactly by fma), else
//	         1 − erfc(a) by Laplace's continued fraction; the sign of x.
//	gelu     x·Φ(x), Φ(x) = erfc(−x/√2)/2 (the continued fraction in the
//	         lower tail, x < −1.41; (1 + erf)/2 above), and −0 where Φ is 0
//	         (the limit at −∞), as the CPU; its gradient gelugrad. Float32's
//	         and the half types' compute in float32 (gelu32.go).
//	gelutanh x/2·(1 + tanh(√(2/π)(x + 0.044715x³))), and its backward
//	         gelutanhgrad (a binary op of x and the gradient); float32's
//	         and the half types' compute in float32 (gelu32.go).
//	sin, cos k = round(x·2/π), r = x − k·π/2 with π/2 in three parts by
//	         fma below |x| = 2²⁸, Payne and Hanek's reduction by the bits
//	         of 2/π above (twoopi.go), Taylor series to r¹⁷/r¹⁸ on |r| ≤
//	         π/4, chosen and signed by k mod 4.
//	pow      exp(y·log|x|), signed for negative x and odd integer y, with
//	         Go's math.Pow special cases (x=1 or y=0 give 1, |x|=1 with
//	         y=±Inf gives 1, negative x with non-integer y gives NaN).

// fm writes float arithmetic into a kernel: float64's (t unset) for the
// math library below, or t's (F32) for the arithmetic the activations
// share between the two widths (units.go).
type fm struct {
	k *ptx.Kernel
	t ptx.Type
}

// typ is m's float type.
func (m fm) typ() ptx.Type {
	if m.t == "" {
		return ptx.F64
	}
	return m.t
}

func (m fm) c(v float64) string { return ptx.Imm(m.typ(), v) }

func (m fm) reg() ptx.Reg { return m.k.Reg(m.typ()) }

func (m fm) op2(op string, a, b any) ptx.Reg {
	r := m.reg()
	m.k.Op("%s.%s %s, %v, %v", op, m.typ(), r, a, b)
	return r
}

func (m fm) add(a, b any) ptx.Reg { return m.op2("add.rn", a, b) }
func (m fm) sub(a, b any) ptx.Reg { return m.op2("sub.rn", a, b) }
func (m fm) mul(a, b any) ptx.Reg { return m.op2("mul.rn", a, b) }
func (m fm) div(a, b any) ptx.Reg { return m.op2("div.rn", a, b) }
func (m fm) max(a, b any) ptx.Reg { return m.op2("max", a, b) }
func (m fm) min(a, b any) ptx.Reg { return m.op2("min", a, b) }

// copysign is |a| with the sign of s.
func (m fm) copysign(a, s any) ptx.Reg {
	r := m.reg()
	m.k.Op("copysign.%s %s, %v, %v", m.typ(), r, s, a)
	return r
}

func (m fm) fma(a, b, c any) ptx.Reg {
	r := m.reg()
	m.k.Op("fma.rn.%s %s, %v, %v, %v", m.typ(), r, a, b, c)
	return r
}

func (m fm) abs(a any) ptx.Reg {
	r := m.reg()
	m.k.Op("abs.%s %s, %v", m.typ(), r, a)
	return r
}

// round is a rounded to an integral value (rnd: rni nearest even, rzi
// toward zero).
func (m fm) round(rnd string, a any) ptx.Reg {
	r := m.reg()
	m.k.Op("cvt.%s.%s.%s %s, %v", rnd, m.typ(), m.typ(), r, a)
	return r
}

// cmp is the predicate a <cmp> b (cmp a PTX comparison: lt, gt, eq, nan,
// ltu...).
func (m fm) cmp(cmp string, a, b any) ptx.Reg {
	p := m.k.Reg(ptx.Pred)
	m.k.Op("setp.%s.%s %s, %v, %v", cmp, m.typ(), p, a, b)
	return p
}

// sel is p ? a : b.
func (m fm) sel(p ptx.Reg, a, b any) ptx.Reg {
	r := m.reg()
	m.k.Op("selp.%s %s, %v, %v, %s", m.typ(), r, a, b, p)
	return r
}

// and, or and not combine predicates.
func (m fm) and(p, q ptx.Reg) ptx.Reg { return m.pred("and", p, q) }
func (m fm) or(p, q ptx.Reg) ptx.Reg  { return m.pred("or", p, q) }
func (m fm) pred(op string, p, q ptx.Reg) ptx.Reg {
	r := m.k.Reg(ptx.Pred)
	m.k.Op("%s.pred %s, %s, %s", op, r, p, q)
	return r
}
func (m fm) not(p ptx.Reg) ptx.Reg {
	r := m.k.Reg(ptx.Pred)
	m.k.Op("not.pred %s, %s", r, p)
	return r
}

// poly is c[0] + x·(c[1] + x·(c[2] + ...)) by Horner's rule with fma.
func (m fm) poly(x ptx.Reg, c []float64) ptx.Reg {
	acc := m.reg()
	m.k.Op("mov.%s %s, %s", m.typ(), acc, m.c(c[len(c)-1]))
	for i := len(c) - 2; i >= 0; i-- {
		acc = m.fma(acc, x, m.c(c[i]))
	}
	return acc
}

// taylor returns the coefficients 1/(start)!, 1/(start+step)!, ... with
// alternating signs when alt, n of them.
func taylor(start, step, n int, alt bool) []float64 {
	out := make([]float64, n)
	for i := range out {
		f := 1.0
		for j := 2; j <= start+i*step; j++ {
			f *= float64(j)
		}
		out[i] = 1 / f
		if alt && i%2 == 1 {
			out[i] = -out[i]
		}
	}
	return out
}

// pow2 is 2^n for an integral float64 n in [-1022, 1023].
func (m fm) pow2(n ptx.Reg) ptx.Reg {
	i := m.k.Reg(ptx.S64)
	m.k.Op("cvt.rzi.s64.f64 %s, %s", i, n)
	m.k.Op("add.s64 %s, %s, 1023", i, i)
	m.k.Op("shl.b64 %s, %s, 52", i, i)
	r := m.reg()
	m.k.Op("mov.b64 %s, %s", r, i)
	return r
}

// fixNaN is r, or x where x is NaN (clamps drop NaN: PTX's min and max
// return the other operand).
func (m fm) fixNaN(r, x ptx.Reg) ptx.Reg { return m.sel(m.cmp("nan", x, x), x, r) }

const ln2Hi, ln2Lo = 0.6931471803691238, 1.9082149292705877e-10 // ln2Hi has 32 bits

func (m fm) exp(x ptx.Reg) ptx.Reg {
	xc := m.min(m.max(x, m.c(-800)), m.c(800))
	n := m.round("rni", m.mul(xc, m.c(math.Log2E)))
	nn := m.sub(m.c(0), n)
	r := m.fma(nn, m.c(ln2Hi), xc)
	r = m.fma(nn, m.c(ln2Lo), r)
	p := m.poly(r, taylor(0, 1, 14, false))
	n1 := m.round("rzi", m.mul(n, m.c(0.5)))
	n2 := m.sub(n, n1)
	return m.fixNaN(m.mul(m.mul(p, m.pow2(n1)), m.pow2(n2)), x)
}

// expFor is e^x (x float64) for rows of dtype d, as float64: float64's
// series (exp) for float64, else float32's one ex2.approx (relative error
// about 2⁻²², a few float32 ulps, as the CPU's float32 exponentials),
// where the series takes about 40 instructions. t = x·log₂e is taken in
// float64 and its rounding to float32 carried as 1 + (t - t₃₂)·ln 2: 2^t₃₂
// alone erred by |x|·2⁻²⁴ (87 ulps at x = -87). The softmaxes' and the
// attention's rows take it.
func (m fm) expFor(d DType, x ptx.Reg) ptx.Reg {
	if d == F64 {
		return m.exp(x)
	}
	k := m.k
	t := m.mul(x, m.c(math.Log2E))
	t32, back, rem := k.Reg(ptx.F32), m.reg(), k.Reg(ptx.F32)
	k.Op("cvt.rn.f32.f64 %s, %s", t32, t)
	k.Op("cvt.f64.f32 %s, %s", back, t32)
	k.Op("cvt.rn.f32.f64 %s, %s", rem, m.mul(m.sub(t, back), m.c(math.Ln2)))
	return widen(k, F32, ex2Carried(k, t32, rem))
}

// The float32 log₂e in two parts.
var log2eHi = float64(float32(math.Log2E))
var log2eLo = float64(float32(math.Log2E - log2eHi))

// exp32 is e^x of the float32 x, float32: 2^t by one ex2.approx, t =
// x·log₂e rounded, the product's rounding (and log₂e's past float32) by
// FMA carried as 1 + r·ln 2: within about 2⁻²² relative at every x
// (expFor's accuracy).
func exp32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	f := func(v float64) string { return ptx.Imm(ptx.F32, v) }
	t, nt, r := k.Reg(ptx.F32), k.Reg(ptx.F32), k.Reg(ptx.F32)
	k.Op("mul.rn.f32 %s, %s, %s", t, x, f(log2eHi))
	k.Op("neg.f32 %s, %s", nt, t)
	k.Op("fma.rn.f32 %s, %s, %s, %s", r, x, f(log2eHi), nt) // exact: x·hi - t
	k.Op("fma.rn.f32 %s, %s, %s, %s", r, x, f(log2eLo), r)
	k.Op("mul.rn.f32 %s, %s, %s", r, r, f(math.Ln2))
	return ex2Carried(k, t, r)
}

// expAny32 is exp32 where e^x may overflow (the Exp op's): 2^t's ∞ kept
// (∞·r + ∞ is NaN for a negative correction r). The rows' and the
// activations' exponents are at most 0 or clamped, and take exp32.
func expAny32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	e, nan, pos := exp32(k, x), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.nan.f32 %s, %s, %s", nan, e, e)
	k.Op("setp.gt.f32 %s, %s, 0f00000000", pos, x)
	k.Op("and.pred %s, %s, %s", nan, nan, pos) // NaN from a positive x: ∞
	k.Op("selp.f32 %s, 0f7f800000, %s, %s", e, e, nan)
	return e
}

// ex2Carried is 2^t·(1 + r), t and r float32, r a correction below 2⁻¹⁰
// (NaN where t is infinite: clamped to 2⁻¹⁰, which 2^t's 0 or ∞ absorbs;
// PTX's min and max return the number).
func ex2Carried(k *ptx.Kernel, t, r ptx.Reg) ptx.Reg {
	f := func(v float64) string { return ptx.Imm(ptx.F32, v) }
	e := k.Reg(ptx.F32)
	k.Op("min.f32 %s, %s, %s", r, r, f(0x1p-10))
	k.Op("max.f32 %s, %s, %s", r, r, f(-0x1p-10))
	k.Op("ex2.approx.f32 %s, %s", e, t)
	k.Op("fma.rn.f32 %s, %s, %s, %s", e, e, r, e)
	return e
}

// logParts splits finite x > 0 (subnormal ones included) as 2^e·mant,
// mant in [√½, √2), e a float64.
func (m fm) logParts(x ptx.Reg) (mant, e ptx.Reg) {
	k := m.k
	small := m.cmp("lt", x, m.c(0x1p-1022))
	xs := m.sel(small, m.mul(x, m.c(0x1p54)), x)
	e = m.sel(small, m.c(-54), m.c(0))
	bits, ex, mb := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.b64 %s, %s", bits, xs)
	k.Op("shr.u64 %s, %s, 52", ex, bits)
	k.Op("and.b64 %s, %s, 2047", ex, ex)
	k.Op("and.b64 %s, %s, 4503599627370495", mb, bits) // the 52 mantissa bits
	k.Op("or.b64 %s, %s, 4607182418800017408", mb, mb) // with 1.0's exponent
	mant = m.reg()
	k.Op("mov.b64 %s, %s", mant, mb)
	ef := m.reg()
	k.Op("cvt.rn.f64.u64 %s, %s", ef, ex)
	e = m.add(e, m.sub(ef, m.c(1023)))
	big := m.cmp("gt", mant, m.c(math.Sqrt2))
	return m.sel(big, m.mul(mant, m.c(0.5)), mant), m.sel(big, m.add(e, m.c(1)), e)
}

func (m fm) log(x ptx.Reg) ptx.Reg {
	mant, e := m.logParts(x)
	f := m.div(m.sub(mant, m.c(1)), m.add(mant, m.c(1)))
	s := m.mul(f, f)
	coef := make([]float64, 11)
	for i := range coef {
		coef[i] = 2 / float64(2*i+3)
	}
	// log m = 2f + f·s·(2/3 + 2s/5 + ...)
	logm := m.fma(m.mul(f, s), m.poly(s, coef), m.mul(f, m.c(2)))
	res := m.add(m.fma(e, m.c(ln2Lo), logm), m.mul(e, m.c(ln2Hi)))
	// Specials: +Inf, 0 (either sign) gives -Inf, negative or NaN gives NaN.
	res = m.sel(m.cmp("eq", x, m.c(math.Inf(1))), x, res)
	res = m.sel(m.cmp("eq", x, m.c(0)), m.c(math.Inf(-1)), res)
	return m.sel(m.cmp("ltu", x, m.c(0)), m.c(math.NaN()), res)
}

// logDD is ln x for finite x > 0 as hi + lo, to about 2⁻⁶³ relative, as
// the CPU's (internal/mathx's logDD): ln mant = 2·atanh(s), s = (mant -
// 1)/(mant + 1), 2s and the cubic term as double-doubles, the series'
// rest in float64; then e·ln 2 in two parts.
func (m fm) logDD(x ptx.Reg) (hi, lo ptx.Reg) {
	mant, e := m.logParts(x)
	f := m.sub(mant, m.c(1)) // exact
	d := m.add(f, m.c(2))
	dl := m.add(m.sub(m.c(2), d), f)
	s := m.div(f, d)
	sl := m.div(m.sub(m.fma(m.sub(m.c(0), s), d, f), m.mul(s, dl)), d)
	z := m.mul(s, s)
	coef := make([]float64, 10)
	for i := range coef {
		coef[i] = 2 / float64(2*i+5)
	}
	rest := m.mul(z, m.poly(z, coef)) // 2s²/5 + 2s⁴/7 + ...
	third := 2.0 / 3
	thirdLo := math.FMA(-3, third, 2) / 3
	c := m.add(m.c(third), rest)
	cl := m.add(m.add(m.sub(m.c(third), c), rest), m.c(thirdLo))
	zl := m.fma(s, s, m.sub(m.c(0), z))
	cube := m.mul(z, s)
	cubel := m.add(m.add(m.fma(z, s, m.sub(m.c(0), cube)), m.mul(zl, s)), m.mul(m.mul(m.c(3), z), sl))
	t := m.mul(cube, c)
	tl := m.add(m.add(m.fma(cube, c, m.sub(m.c(0), t)), m.mul(cube, cl)), m.mul(cubel, c))
	a := m.mul(s, m.c(2))
	h1 := m.add(a, t)
	low := m.add(m.add(m.sub(t, m.sub(h1, a)), m.mul(sl, m.c(2))), tl)
	a2 := m.mul(e, m.c(ln2Hi))
	h2 := m.add(a2, h1)
	e2 := m.sel(m.cmp("ge", m.abs(a2), m.abs(h1)), m.sub(h1, m.sub(h2, a2)), m.sub(a2, m.sub(h2, h1)))
	low = m.add(low, m.fma(e, m.c(ln2Lo), e2))
	hi = m.add(h2, low)
	return hi, m.sub(low, m.sub(hi, h2))
}

func (m fm) expm1(x ptx.Reg) ptx.Reg {
	series := m.mul(x, m.poly(x, taylor(1, 1, 17, false)))
	big := m.sub(m.exp(x), m.c(1))
	return m.sel(m.cmp("lt", m.abs(x), m.c(0.5)), series, big)
}

func (m fm) log1p(x ptx.Reg) ptx.Reg {
	u := m.add(x, m.c(1))
	r := m.mul(m.log(u), m.div(x, m.sub(u, m.c(1))))
	r = m.sel(m.cmp("eq", u, m.c(math.Inf(1))), u, r)
	return m.sel(m.cmp("eq", u, m.c(1)), x, r)
}

func (m fm) tanh(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	t := m.expm1(m.add(a, a))
	r := m.sel(m.cmp("gt", a, m.c(22)), m.c(1), m.div(t, m.add(t, m.c(2))))
	return m.copysign(r, x)
}

func (m fm) sigmoid(x ptx.Reg) ptx.Reg {
	e := m.exp(m.sub(m.c(0), m.abs(x)))
	d := m.add(e, m.c(1))
	return m.sel(m.cmp("ge", x, m.c(0)), m.div(m.c(1), d), m.div(e, d))
}

func (m fm) softplus(x ptx.Reg) ptx.Reg {
	return m.add(m.max(x, m.c(0)), m.log1p(m.exp(m.sub(m.c(0), m.abs(x)))))
}

// erfSeries is erf(a) for 0 ≤ a ≤ 2 (or NaN) by the positive series.
func (m fm) erfSeries(a ptx.Reg) ptx.Reg {
	k := m.k
	step := m.add(m.mul(a, a), m.mul(a, a))
	term, sum, den := m.reg(), m.reg(), m.reg()
	k.Op("mov.f64 %s, %s", term, a)
	k.Op("mov.f64 %s, %s", sum, a)
	k.Op("mov.f64 %s, %s", den, m.c(3))
	n := k.Reg(ptx.U32)
	k.Op("mov.u32 %s, 0", n)
	loop := k.Label("erf")
	k.Place(loop)
	k.Op("mul.rn.f64 %s, %s, %s", term, term, step)
	k.Op("div.rn.f64 %s, %s, %s", term, term, den)
	k.Op("add.rn.f64 %s, %s, %s", sum, sum, term)
	k.Op("add.rn.f64 %s, %s, %s", den, den, m.c(2))
	k.Op("add.u32 %s, %s, 1", n, n)
	more := m.cmp("gt", term, m.mul(sum, m.c(1e-17)))
	capped := k.Reg(ptx.Pred)
	k.Op("setp.lt.u32 %s, %s, 64", capped, n)
	k.Op("@%s bra %s", m.and(more, capped), loop)
	return m.mul(m.mul(sum, m.expNegSquare(a)), m.c(2/math.Sqrt(math.Pi)))
}

// expNegSquare is e^(-a²), with a² split exactly by fma (a² = h + l):
// e^-h·(1 - l), l below an ulp of h. Beyond a = 40 it is 0 (a² would
// overflow and l be NaN).
func (m fm) expNegSquare(a ptx.Reg) ptx.Reg { return m.expNegScaledSquare(a, 1) }

// expNegScaledSquare is e^(-s·a²) for a ≥ 0 and s = 1 or ½ (s·h exact),
// as mathx's: e^(-s·h)·(1 - s·l).
func (m fm) expNegScaledSquare(a ptx.Reg, s float64) ptx.Reg {
	a = m.min(a, m.c(40))
	h := m.mul(a, a)
	l := m.fma(a, a, m.sub(m.c(0), h))
	if s != 1 {
		h, l = m.mul(h, m.c(s)), m.mul(l, m.c(s))
	}
	return m.mul(m.exp(m.sub(m.c(0), h)), m.sub(m.c(1), l))
}

// erfcTail is erfc(a) for a ≥ 2 by Laplace's continued fraction,
// e^-a²/(√π·(a + ½/(a + 1/(a + 3/2/(a + ...))))), 60 terms from the back
// (converged to an ulp from a = 2 on).
func (m fm) erfcTail(a ptx.Reg) ptx.Reg { return m.erfcFraction(a, 60) }

// erfcFraction is erfc(a) by the continued fraction's last terms terms:
// 60 converge to an ulp from a = 2 on, 200 from a = 1 on.
func (m fm) erfcFraction(a ptx.Reg, terms int) ptx.Reg {
	nh := m.reg()
	m.k.Op("mov.f64 %s, %s", nh, m.c(float64(terms)/2))
	frac := m.add(m.div(m.c(0.5), m.laplaceRest(a, nh)), a)
	return m.div(m.expNegSquare(a), m.mul(frac, m.c(math.Sqrt(math.Pi))))
}

// laplaceRest is Laplace's continued fraction for erfc at a without its
// first step, a + 1/(a + (3/2)/(a + ...)), evaluated from its term nh
// (half the term's number, a register it counts down) back: the whole
// is a + ½/laplaceRest, and e^(-a²)/(√π·whole) is erfc(a).
func (m fm) laplaceRest(a, nh ptx.Reg) ptx.Reg {
	k := m.k
	frac := m.reg()
	k.Op("mov.f64 %s, %s", frac, a)
	loop := k.Label("erfc")
	k.Place(loop)
	k.Op("div.rn.f64 %s, %s, %s", frac, nh, frac)
	k.Op("add.rn.f64 %s, %s, %s", frac, frac, a)
	k.Op("sub.rn.f64 %s, %s, %s", nh, nh, m.c(0.5))
	k.Op("@%s bra %s", m.cmp("gt", nh, m.c(0.5)), loop)
	return frac
}

// erf is the series below |x| = 2, 1 - erfc beyond, signed as x.
func (m fm) erf(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	near := m.erfSeries(m.min(a, m.c(2)))
	far := m.sub(m.c(1), m.erfcTail(m.max(a, m.c(2))))
	r := m.sel(m.cmp("lt", a, m.c(2)), near, far)
	return m.fixNaN(m.copysign(r, x), x)
}

// phi is Φ(x) = erfc(-x/√2)/2: from the continued fraction where z =
// -x/√2 is past the switch (no cancellation in the lower tail), (1 +
// erf)/2 above. For a float64 result (wide) the fraction takes over from
// z = 1 (200 terms), so 1 + erf cancels at most three bits; narrower
// results switch at 2 (60 terms), cancelling eight bits of float64's 53.
func (m fm) phi(x ptx.Reg, wide bool) ptx.Reg {
	from, terms := 2.0, 60
	if wide {
		from, terms = 1, 200
	}
	z := m.div(x, m.c(-math.Sqrt2)) // as the CPU rounds it
	tail := m.mul(m.erfcFraction(m.max(z, m.c(from)), terms), m.c(0.5))
	body := m.mul(m.add(m.erf(m.sub(m.c(0), m.min(z, m.c(from)))), m.c(1)), m.c(0.5))
	return m.sel(m.cmp("ge", z, m.c(from)), tail, body)
}

// gelu is x·Φ(x), -0 where Φ is 0 (at -∞ the limit, not -∞·0); wide as
// phi's.
func (m fm) gelu(x ptx.Reg, wide bool) ptx.Reg {
	phi := m.phi(x, wide)
	return m.sel(m.cmp("eq", phi, m.c(0)), m.c(math.Copysign(0, -1)), m.fixNaN(m.mul(x, phi), x))
}

// gelugrad is dy·(Φ(x) + x·φ(x)), φ(x) = e^(-x²/2)/√(2π) (from e^-(x/√2)²),
// with its limits 1 and 0 at ±∞ (not ∞·0).
func (m fm) gelugrad(x, dy ptx.Reg, wide bool) ptx.Reg {
	pdf := m.mul(m.expNegSquare(m.abs(m.mul(x, m.c(1/math.Sqrt2)))), m.c(1/math.Sqrt(2*math.Pi)))
	g := m.add(m.phi(x, wide), m.mul(x, pdf))
	g = m.sel(m.cmp("eq", x, m.c(math.Inf(1))), m.c(1), g)
	g = m.sel(m.cmp("eq", x, m.c(math.Inf(-1))), m.c(0), g)
	return m.mul(dy, m.fixNaN(g, x))
}

// GeluTanh's constants: √(2/π) and the cubic's coefficient.
const geluK, geluA = 0.7978845608028654, 0.044715

// geluSaturates64 is where σ(2u) is 0 or 1 in float64 (2|u| past 745):
// the float64 kernels compute from x clamped to it, so that x³ does not
// overflow (its products with 0 NaN).
const geluSaturates64 = 22

// geluSigma is σ = σ(2u) = 1/(1 + e), e = e^(-2u), u = √(2/π)(x +
// 0.044715x³), of x clamped to ±geluSaturates64 (xc).
func (m fm) geluSigma(x ptx.Reg) (sigma, e, xc ptx.Reg) {
	xc = m.min(m.max(x, m.c(-geluSaturates64)), m.c(geluSaturates64))
	u2 := m.mul(m.c(2*geluK), m.mul(xc, m.fma(m.mul(xc, xc), m.c(geluA), m.c(1))))
	e = m.exp(m.sub(m.c(0), u2))
	return m.div(m.c(1), m.add(e, m.c(1))), e, xc
}

// gelutanh is x/2·(1 + tanh u) as x·σ(2u) (1 + tanh u cancels where
// tanh u nears -1), -0 at -∞ (the limit, not -∞·0).
func (m fm) gelutanh(x ptx.Reg) ptx.Reg {
	s, _, _ := m.geluSigma(x)
	r := m.sel(m.cmp("eq", x, m.c(math.Inf(-1))), m.c(math.Copysign(0, -1)), m.mul(x, s))
	return m.fixNaN(r, x)
}

// gelutanhgrad is dy·g'(x), g' = σ·(1 + 2u'·x·(1 - σ)), 1 - σ = e·σ (1
// where e overflows, σ being 0), u' = √(2/π)(1 + 3·0.044715x²): at ±∞ its
// limits, 1 and 0.
func (m fm) gelutanhgrad(x, dy ptx.Reg) ptx.Reg {
	s, e, xc := m.geluSigma(x)
	rest := m.sel(m.cmp("eq", e, m.c(math.Inf(1))), m.c(1), m.mul(e, s))
	slope := m.mul(m.fma(m.mul(xc, xc), m.c(6*geluA*geluK), m.c(2*geluK)), xc)
	g := m.fma(m.mul(slope, rest), s, s)
	return m.mul(dy, m.fixNaN(g, x))
}

// π/2 in three parts (each the rounding of what the others leave).
const pio2A, pio2B, pio2C = 1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33

// sincos is sin x (cos false) or cos x: k·π/2 taken off in three parts
// below |x| = largeArgument, by Payne and Hanek's reduction
// (reduceLarge) above it, on the lanes that have one.
func (m fm) sincos(x ptx.Reg, cos bool) ptx.Reg {
	sinr, cosr, q := m.reduceTrig(x)
	k := m.k
	if cos {
		k.Op("add.s64 %s, %s, 1", q, q)
	}
	k.Op("and.b64 %s, %s, 3", q, q)
	odd, neg := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	bit := k.Reg(ptx.S64)
	k.Op("and.b64 %s, %s, 1", bit, q)
	k.Op("setp.ne.s64 %s, %s, 0", odd, bit)
	k.Op("setp.ge.s64 %s, %s, 2", neg, q)
	res := m.sel(odd, cosr, sinr)
	res = m.sel(neg, m.sub(m.c(0), res), res)
	if !cos {
		res = m.sel(m.cmp("eq", x, m.c(0)), x, res) // sin(-0) = -0
	}
	return res
}

// tan is sin r/cos r of the reduced r, -cos r/sin r in the odd quadrants
// (tan(x + π/2) = -1/tan x); tan(-0) is -0.
func (m fm) tan(x ptx.Reg) ptx.Reg {
	sinr, cosr, q := m.reduceTrig(x)
	k := m.k
	bit := k.Reg(ptx.S64)
	odd := k.Reg(ptx.Pred)
	k.Op("and.b64 %s, %s, 1", bit, q)
	k.Op("setp.ne.s64 %s, %s, 0", odd, bit)
	res := m.sel(odd, m.div(m.sub(m.c(0), cosr), sinr), m.div(sinr, cosr))
	return m.sel(m.cmp("eq", x, m.c(0)), x, res)
}

// reduceTrig is x reduced by its nearest multiple q of π/2 (sincos'
// reduction), as sin r, cos r and q.
func (m fm) reduceTrig(x ptx.Reg) (sinr, cosr, q ptx.Reg) {
	k := m.k
	kf := m.round("rni", m.mul(x, m.c(2/math.Pi)))
	nk := m.sub(m.c(0), kf)
	r := m.fma(nk, m.c(pio2A), x)
	r = m.fma(nk, m.c(pio2B), r)
	r = m.fma(nk, m.c(pio2C), r)
	q = k.Reg(ptx.S64)
	k.Op("cvt.rzi.s64.f64 %s, %s", q, m.sel(m.cmp("nan", kf, kf), m.c(0), kf))
	ax := m.abs(x)
	large := m.and(m.cmp("ge", ax, m.c(largeArgument)), m.cmp("lt", ax, m.c(math.Inf(1))))
	skip := k.Label("trig_small")
	k.Op("@!%s bra %s", large, skip)
	{
		rl, ql := m.reduceLarge(ax)
		neg := m.cmp("lt", x, m.c(0)) // sin(-x) = -sin x: quadrant and remainder negated
		k.Op("@%s neg.s64 %s, %s", neg, ql, ql)
		k.Op("mov.s64 %s, %s", q, ql)
		k.Op("selp.f64 %s, %s, %s, %s", r, m.sub(m.c(0), rl), rl, neg)
	}
	k.Place(skip)
	r2 := m.mul(r, r)
	sc := taylor(3, 2, 8, true) // 1/3!, -1/5!, ...: sin r = r - r³/3! + ...
	for i := range sc {
		sc[i] = -sc[i]
	}
	return m.fma(m.mul(r, r2), m.poly(r2, sc), r), m.poly(r2, taylor(0, 2, 10, true)), q
}

// pow is x**y: e^(y·ln|x|) with ln|x| a double-double (logDD) times y
// exactly (by FMA), e^hi·(1 + lo), within about 2 ulps where e^(y·log|x|)
// in float64 erred by 180 at |y·ln x| near 700; signs and special cases
// as Go's math.Pow.
func (m fm) pow(x, y ptx.Reg) ptx.Reg {
	ax := m.abs(x)
	lh, ll := m.logDD(m.max(m.min(ax, m.c(math.MaxFloat64)), m.c(math.SmallestNonzeroFloat64)))
	th := m.mul(y, lh)
	tl := m.add(m.fma(y, lh, m.sub(m.c(0), th)), m.mul(y, ll))
	tl = m.sel(m.cmp("lt", m.abs(th), m.c(math.Inf(1))), tl, m.c(0)) // ∞ - ∞ where y is infinite
	r := m.exp(th)
	r = m.sel(m.cmp("lt", m.abs(r), m.c(math.Inf(1))), m.fma(r, tl, r), r) // ∞·tl + ∞ is NaN for tl < 0
	// Zero and infinite bases (logDD took them clamped): e^(y·ln|x|) of
	// ln|x| = ∓∞.
	special := m.or(m.cmp("eq", ax, m.c(0)), m.cmp("eq", ax, m.c(math.Inf(1))))
	r = m.sel(special, m.exp(m.mul(y, m.log(ax))), r)
	r = m.sel(m.cmp("nan", x, y), m.c(math.NaN()), r) // the clamps took NaN for a number
	yInt := m.cmp("eq", y, m.round("rzi", y))
	h := m.mul(y, m.c(0.5))
	odd := m.and(yInt, m.cmp("ne", h, m.round("rzi", h)))
	xNeg := m.cmp("lt", x, m.c(0))
	negZero := m.and(m.cmp("eq", x, m.c(0)), m.cmp("lt", m.copysign(m.c(1), x), m.c(0)))
	r = m.sel(m.and(m.or(xNeg, negZero), odd), m.sub(m.c(0), r), r)
	// Negative finite x with a finite non-integer y: NaN.
	finiteY := m.cmp("lt", m.abs(y), m.c(math.Inf(1)))
	finiteX := m.cmp("lt", ax, m.c(math.Inf(1)))
	r = m.sel(m.and(m.and(xNeg, finiteX), m.and(finiteY, m.not(yInt))), m.c(math.NaN()), r)
	// |x| = 1 with y = ±Inf, x = 1, y = 0: 1.
	one := m.and(m.cmp("eq", ax, m.c(1)), m.not(finiteY))
	one = m.and(one, m.not(m.cmp("nan", y, y)))
	one = m.or(one, m.cmp("eq", x, m.c(1)))
	one = m.or(one, m.cmp("eq", y, m.c(0)))
	return m.sel(one, m.c(1), r)
}

// mathFuncs are the functions of the math library by op name.
var mathFuncs = map[string]func(m fm, x ptx.Reg) ptx.Reg{
	"exp": fm.exp, "log": fm.log, "expm1": fm.expm1, "log1p": fm.log1p, "tanh": fm.tanh,
	"sigmoid": fm.sigmoid, "softplus": fm.softplus, "erf": fm.erf,
	"gelu":     func(m fm, x ptx.Reg) ptx.Reg { return m.gelu(x, false) },
	"gelutanh": fm.gelutanh,
	"sin":      func(m fm, x ptx.Reg) ptx.Reg { return m.sincos(x, false) },
	"cos":      func(m fm, x ptx.Reg) ptx.Reg { return m.sincos(x, true) },
	"tan":      fm.tan, "asin": fm.asin, "acos": fm.acos, "atan": fm.atan,
	"sinh": fm.sinh, "cosh": fm.cosh, "asinh": fm.asinh, "acosh": fm.acosh, "atanh": fm.atanh,
	"log2": fm.log2, "log10": fm.log10, "exp2": fm.exp2, "erfinv": fm.erfinv,
	"lgamma": fm.lgamma, "digamma": fm.digamma,
	"erfc": fm.erfc, "erfcx": fm.erfcx, "ndtr": fm.ndtr, "logndtr": fm.logndtr, "ndtri": fm.ndtri,
	"besseli0": fm.besselI0, "besseli0e": fm.besselI0e, "besseli1": fm.besselI1, "besseli1e": fm.besselI1e,
}

// MathOps lists the float ops of the math library, sorted.
var MathOps = func() []string {
	var out []string
	for op := range mathFuncs {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}()

// inF64 runs f on x of dtype d (f32 or f64) in float64 and returns the
// result in d, rounded once.
func inF64(k *ptx.Kernel, d DType, x ptx.Reg, f func(m fm, x ptx.Reg) ptx.Reg) ptx.Reg {
	return narrow(k, d, f(fm{k: k}, widen(k, d, x)))
}

// inF64x2 is inF64 for a function of two operands.
func inF64x2(k *ptx.Kernel, d DType, x, y ptx.Reg, f func(m fm, x, y ptx.Reg) ptx.Reg) ptx.Reg {
	return narrow(k, d, f(fm{k: k}, widen(k, d, x), widen(k, d, y)))
}
