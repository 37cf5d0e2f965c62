package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// The gamma family in float64: lgamma, digamma, zeta (Hurwitz's) and
// polygamma, as internal/mathx computes them, step for step. The recurrences run a fixed number of selected steps;
// the regions are each computed and one selected.

// series is s at x: in d = x - Hi, Lo's share in the last step
// (mathx.Series.At).
func (m fm) series(x ptx.Reg, s mathx.Series) ptx.Reg {
	d := m.sub(x, m.c(s.Hi))
	return m.fma(d, m.polyEvenOdd(d, s.Coef[1:]), m.c(s.Coef[0]-s.Lo*s.Coef[1]))
}

// polyEvenOdd is Σ c[k]·zᵏ as mathx's: c[0] and c[1] by Horner's rule,
// the rest as E(z²) + z·O(z²), two chains.
func (m fm) polyEvenOdd(z ptx.Reg, c []float64) ptx.Reg {
	if len(c) < 4 {
		return m.poly(z, c)
	}
	t := c[2:]
	w := m.mul(z, z)
	top := (len(t) - 1) &^ 1
	e, o, oTop := m.reg(), m.reg(), 0.0
	if top+1 < len(t) {
		oTop = t[top+1]
	}
	m.k.Op("mov.%s %s, %s", m.typ(), e, m.c(t[top]))
	m.k.Op("mov.%s %s, %s", m.typ(), o, m.c(oTop))
	for i := top - 2; i >= 0; i -= 2 {
		e = m.fma(e, w, m.c(t[i]))
		o = m.fma(o, w, m.c(t[i+1]))
	}
	return m.fma(m.fma(m.fma(z, o, e), z, m.c(c[1])), z, m.c(c[0]))
}

// neg is -a (its sign flipped, zeros too).
func (m fm) neg(a ptx.Reg) ptx.Reg {
	r := m.reg()
	m.k.Op("neg.%s %s, %s", m.typ(), r, a)
	return r
}

// reduced is x less its nearest integer, in [-½, ½], exact.
func (m fm) reduced(x ptx.Reg) ptx.Reg { return m.sub(x, m.round("rni", x)) }

// digamma is ψ(x) (mathx.Digamma): x < 1 moved up once, [2.5, 10) down
// by up to eight steps, the two series below 2.5, the asymptotic series
// from 10; x < 0 by the reflection ψ(1 - x) - π·cot(πx).
func (m fm) digamma(x ptx.Reg) ptx.Reg {
	t := mathx.GammaSeries()
	neg := m.cmp("lt", x, m.c(0))
	z := m.sel(neg, m.sub(m.c(1), x), x)
	small := m.cmp("lt", z, m.c(1))
	acc := m.sel(small, m.div(m.c(-1), z), m.c(0))
	y := m.sel(small, m.add(z, m.c(1)), z)
	for range 8 {
		down := m.and(m.cmp("ge", y, m.c(2.5)), m.cmp("lt", y, m.c(10)))
		y1 := m.sub(y, m.c(1))
		acc = m.sel(down, m.add(acc, m.div(m.c(1), y1)), acc)
		y = m.sel(down, y1, y)
	}
	w := m.div(m.c(1), m.mul(y, y))
	large := m.sub(m.sub(m.log(y), m.div(m.c(0.5), y)), m.mul(w, m.poly(w, mathx.DigammaTail)))
	near := m.sel(m.cmp("lt", y, m.c(1.76)), m.series(y, t.DigammaRoot), m.series(y, t.DigammaTwo))
	r := m.sel(m.cmp("ge", y, m.c(10)), large, m.add(near, acc))
	// π·cot(πr), r reduced: 1/r below 2⁻²⁸, π/tan(πr) to |r| = ¼,
	// π·tan(π(½ - |r|)) past it.
	red := m.reduced(x)
	ar := m.abs(red)
	far := m.cmp("gt", ar, m.c(0.25))
	tn := m.tan(m.mul(m.c(math.Pi), m.sel(far, m.sub(m.c(0.5), ar), red)))
	cot := m.mul(m.c(math.Pi), m.sel(far, m.copysign(tn, red), m.div(m.c(1), tn)))
	cot = m.sel(m.cmp("lt", ar, m.c(0x1p-28)), m.div(m.c(1), red), cot) // π·cot(πr) = 1/r there
	r = m.sel(neg, m.sub(r, cot), r)
	r = m.sel(m.and(neg, m.cmp("eq", red, m.c(0))), m.c(math.NaN()), r) // the negative integers, -∞
	return m.sel(m.cmp("eq", x, m.c(0)), m.copysign(m.c(math.Inf(1)), m.neg(x)), r)
}

// lgamma is ln|Γ(x)|: z = x (1 - x for x < 0, by the reflection ln π -
// ln|sin πx| - ln Γ(1 - x)); below 0.75 ln Γ(z + 1) - ln z; [2.5, 10)
// down to [1.5, 2.5) by up to eight steps, ln Γ(y) = ln Γ(y - n) +
// ln((y-1)···(y-n)); mathx's three series below 2.5; Stirling's series
// from 10, (y - ½)·ln y - y + ½ln 2π + Σ B₂ₖ/(2k(2k-1)·y²ᵏ⁻¹); -ln|x|
// below 2⁻⁶⁰ (mathx.Lgamma, step for step). +∞ at 0, the negative
// integers and ±∞.
func (m fm) lgamma(x ptx.Reg) ptx.Reg {
	t := mathx.GammaSeries()
	neg := m.cmp("lt", x, m.c(0))
	z := m.sel(neg, m.sub(m.c(1), x), x)
	small := m.cmp("lt", z, m.c(0.75))
	y := m.sel(small, m.add(z, m.c(1)), z)
	prod := m.reg()
	m.k.Op("mov.f64 %s, %s", prod, m.c(1))
	for range 8 {
		down := m.and(m.cmp("ge", y, m.c(2.5)), m.cmp("lt", y, m.c(10)))
		y1 := m.sub(y, m.c(1))
		prod = m.sel(down, m.mul(prod, y1), prod)
		y = m.sel(down, y1, y)
	}
	acc := m.sub(m.log(prod), m.sel(small, m.log(z), m.c(0)))
	near := m.sel(m.cmp("lt", y, m.c(1.25)), m.series(y, t.LgammaOne),
		m.sel(m.cmp("lt", y, m.c(1.75)), m.series(y, t.LgammaHalf), m.series(y, t.LgammaTwo)))
	iy := m.div(m.c(1), y)
	stirling := m.add(m.fma(m.sub(y, m.c(0.5)), m.log(y), m.neg(y)),
		m.fma(iy, m.poly(m.mul(iy, iy), mathx.StirlingTail), m.c(mathx.HalfLn2Pi)))
	r := m.sel(m.cmp("ge", y, m.c(10)), stirling, m.add(near, acc))
	red := m.reduced(x)
	sin := m.abs(m.sincos(m.mul(m.c(math.Pi), red), false))
	r = m.sel(neg, m.sub(m.sub(m.c(mathx.LnPi), m.log(sin)), r), r)
	inf := m.c(math.Inf(1))
	r = m.sel(m.and(neg, m.cmp("eq", red, m.c(0))), inf, r) // the negative integers
	ax := m.abs(x)
	r = m.sel(m.cmp("lt", ax, m.c(0x1p-60)), m.neg(m.log(ax)), r)
	return m.sel(m.cmp("eq", ax, inf), inf, r)
}

// zetaPositive is ζ(s, q) for finite s > 1 and q > 0 (mathx's): the
// tail at a = q + 9, a^(1-s)/(s-1) and a^-s times the Bernoulli terms
// (left out where s ≥ 2πa), then the nine terms from the smallest.
func (m fm) zetaPositive(s, q ptx.Reg) ptx.Reg {
	a := m.add(q, m.c(9))
	term := m.div(s, a)
	var acc ptx.Reg
	for j, c := range mathx.ZetaTail {
		if j == 0 {
			acc = m.mul(m.c(c), term)
		} else {
			acc = m.add(acc, m.mul(m.c(c), term))
		}
		term = m.mul(term, m.mul(m.div(m.add(s, m.c(float64(2*j+1))), a), m.div(m.add(s, m.c(float64(2*j+2))), a)))
	}
	bern := m.sel(m.cmp("ge", s, m.mul(m.c(2*math.Pi), a)), m.c(0), acc)
	sum, j := m.reg(), m.reg()
	head := m.div(m.pow(a, m.sub(m.c(1), s)), m.sub(s, m.c(1)))
	m.k.Op("mov.f64 %s, %s", sum, m.add(head, m.mul(m.pow(a, m.neg(s)), m.add(m.c(0.5), bern))))
	m.k.Op("mov.f64 %s, %s", j, m.c(8))
	loop := m.k.Label("zeta_terms") // a loop: each pow is a hundred instructions
	m.k.Place(loop)
	m.k.Op("add.rn.f64 %s, %s, %s", sum, sum, m.pow(m.add(q, j), m.neg(s)))
	m.k.Op("sub.rn.f64 %s, %s, %s", j, j, m.c(1))
	m.k.Op("@%s bra %s", m.cmp("ge", j, m.c(0)), loop)
	return sum
}

// zeta is ζ(s, q) with mathx.Zeta's special cases; q < 0 (taken only by
// the threads that have it) as ζ(s, f) + (-1)ˢ·(ζ(s, 1 - f) - ζ(s, 1 -
// q)), f = q + ⌈-q⌉, or in (-1, 0) as q^-s + ζ(s, q + 1).
func (m fm) zeta(s, q ptx.Reg) ptx.Reg {
	k := m.k
	negQ := m.cmp("lt", q, m.c(0))
	unit := m.and(negQ, m.cmp("gt", q, m.c(-1))) // q^-s + ζ(s, q + 1)
	f := m.add(q, m.round("rpi", m.neg(q)))
	r := m.zetaPositive(s, m.sel(unit, m.add(q, m.c(1)), m.sel(negQ, f, q)))
	extra := m.reg()
	k.Op("mov.f64 %s, %s", extra, m.c(0))
	skip := k.Label("zeta_positive")
	k.Op("@!%s bra %s", negQ, skip)
	{
		half := m.mul(s, m.c(0.5))
		odd := m.cmp("ne", half, m.round("rzi", half))
		d := m.sub(m.zetaPositive(s, m.sub(m.c(1), f)), m.zetaPositive(s, m.sub(m.c(1), q)))
		k.Op("mov.f64 %s, %s", extra, m.sel(unit, m.pow(q, m.neg(s)), m.sel(odd, m.neg(d), d)))
	}
	k.Place(skip)
	r = m.add(r, extra)
	inf := m.c(math.Inf(1))
	r = m.sel(m.cmp("eq", s, inf), m.pow(q, m.neg(s)), r)
	r = m.sel(m.cmp("eq", q, inf), m.c(0), r)
	notInt := m.or(m.cmp("ne", s, m.round("rzi", s)), m.cmp("eq", s, inf))
	r = m.sel(m.and(negQ, notInt), m.c(math.NaN()), r)
	pole := m.and(m.cmp("le", q, m.c(0)), m.cmp("eq", q, m.round("rmi", q)))
	r = m.sel(m.or(m.cmp("eq", s, m.c(1)), pole), inf, r)
	bad := m.or(m.or(m.cmp("nan", s, q), m.cmp("ltu", s, m.c(1))), m.cmp("eq", q, m.c(math.Inf(-1))))
	return m.sel(bad, m.c(math.NaN()), r)
}

// factorial is n! for 0 ≤ n (an integer), rounded once: a double-double
// product to min(n, 171) (+∞ past 170).
func (m fm) factorial(n ptx.Reg) ptx.Reg {
	k := m.k
	top := m.min(m.max(n, m.c(0)), m.c(171)) // NaN: 171, its result unused
	hi, lo, i := m.reg(), m.reg(), m.reg()
	k.Op("mov.f64 %s, %s", hi, m.c(1))
	k.Op("mov.f64 %s, %s", lo, m.c(0))
	k.Op("mov.f64 %s, %s", i, m.c(2))
	loop, done := k.Label("factorial"), k.Label("factorial_done")
	k.Place(loop)
	k.Op("@%s bra %s", m.cmp("gt", i, top), done)
	p := m.mul(hi, i)
	e := m.fma(hi, i, m.neg(p))
	l := m.fma(lo, i, e)
	s := m.add(p, l)
	k.Op("sub.rn.f64 %s, %s, %s", lo, l, m.sub(s, p))
	k.Op("mov.f64 %s, %s", hi, s)
	k.Op("add.rn.f64 %s, %s, %s", i, i, m.c(1))
	k.Op("bra %s", loop)
	k.Place(done)
	return m.sel(m.cmp("gt", top, m.c(170)), m.c(math.Inf(1)), m.add(hi, lo))
}

// polygamma is ψ⁽ⁿ⁾(x) (mathx.Polygamma): digamma for n = 0,
// (-1)ⁿ⁺¹·n!·ζ(n+1, x) past it, NaN where n is not a non-negative
// integer.
func (m fm) polygamma(n, x ptx.Reg) ptx.Reg {
	half := m.mul(n, m.c(0.5))
	sign := m.sel(m.cmp("eq", half, m.round("rzi", half)), m.c(-1), m.c(1))
	r := m.mul(m.mul(sign, m.factorial(n)), m.zeta(m.add(n, m.c(1)), x))
	r = m.sel(m.cmp("eq", n, m.c(0)), m.digamma(x), r)
	bad := m.or(m.cmp("nan", n, x), m.cmp("lt", n, m.c(0)))
	bad = m.or(bad, m.or(m.cmp("ne", n, m.round("rmi", n)), m.cmp("eq", n, m.c(math.Inf(1)))))
	return m.sel(bad, m.c(math.NaN()), r)
}
