package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// The regularized incomplete gamma functions in float64, igamma (P) and
// igammac (Q), as internal/mathx's IncompleteGamma computes them, step
// for step: the prefactor, then the series, the continued fraction and
// the small-a sum each a loop that only the threads needing it enter,
// each ending where mathx's does (or after mathx.IgammaSteps, NaN).

// set writes v into the loop-carried register r.
func (m fm) set(r ptx.Reg, v any) { m.k.Op("mov.%s %s, %s", m.typ(), r, v) }

// counted runs body until it returns a true predicate or n exceeds limit
// (n counting from 1, a float64 register); it returns whether body
// stopped it (converged).
func (m fm) counted(name string, limit float64, body func(n ptx.Reg) ptx.Reg) ptx.Reg {
	k := m.k
	n, ok, z := m.reg(), k.Reg(ptx.Pred), k.Reg(ptx.U32)
	m.set(n, m.c(1))
	k.Op("mov.u32 %s, 0", z)
	k.Op("setp.ne.u32 %s, %s, %s", ok, z, z) // false
	top, done := k.Label(name), k.Label(name+"_done")
	k.Place(top)
	k.Op("@%s bra %s", m.cmp("gt", n, m.c(limit)), done)
	stop := body(n)
	k.Op("add.rn.f64 %s, %s, %s", n, n, m.c(1))
	k.Op("@!%s bra %s", stop, top)
	k.Op("setp.eq.u32 %s, %s, %s", ok, z, z) // true
	k.Place(done)
	return ok
}

// log1pmx is mathx.Log1pmx: ln(1+u) - u, by w = u/(2+u) below |u| = ½.
func (m fm) log1pmx(u ptx.Reg) ptx.Reg {
	w := m.div(u, m.add(m.c(2), u))
	w2 := m.mul(w, w)
	series := m.add(m.neg(m.div(m.mul(m.c(2), w2), m.sub(m.c(1), w))), m.mul(m.mul(m.mul(m.c(2), w), w2), m.poly(w2, mathx.Log1pmxCoef())))
	return m.sel(m.cmp("lt", m.abs(u), m.c(0.5)), series, m.sub(m.log1p(u), u))
}

// stirlingCorrection is mathx's S(a) for a ≥ 1: up to nine selected
// steps of g(a) to a ≥ 10, then Stirling's series.
func (m fm) stirlingCorrection(a ptx.Reg) ptx.Reg {
	s, b := m.reg(), m.reg()
	m.set(s, m.c(0))
	m.set(b, a)
	for range 9 {
		low := m.cmp("lt", b, m.c(10))
		z := m.div(m.c(1), m.add(m.mul(m.c(2), b), m.c(1)))
		z2 := m.mul(z, z)
		m.set(s, m.sel(low, m.add(s, m.mul(z2, m.poly(z2, mathx.Log1pmxCoef()))), s))
		m.set(b, m.sel(low, m.add(b, m.c(1)), b))
	}
	ib := m.div(m.c(1), b)
	return m.add(s, m.mul(ib, m.poly(m.mul(ib, ib), mathx.StirlingTail)))
}

// gammaPrefactor is mathx's D = xᵃ·e⁻ˣ/Γ(a+1).
func (m fm) gammaPrefactor(a, x ptx.Reg) ptx.Reg {
	small := m.exp(m.sub(m.sub(m.mul(a, m.log(x)), x), m.lgamma(m.add(a, m.c(1)))))
	u := m.div(m.sub(x, a), a)
	far := m.sub(m.log(m.div(x, a)), u)
	e := m.sel(m.cmp("lt", m.abs(u), m.c(0.5)), m.log1pmx(u), far)
	large := m.div(m.exp(m.sub(m.mul(a, e), m.stirlingCorrection(m.max(a, m.c(1))))), m.sqrt(m.mul(m.c(2*math.Pi), a)))
	return m.sel(m.cmp("lt", a, m.c(1)), small, large)
}

// igamma is P(a, x), or where upper Q(a, x) (mathx.IncompleteGamma).
func (m fm) igamma(a, x ptx.Reg, upper bool) ptx.Reg {
	k := m.k
	d := m.gammaPrefactor(a, x)
	p, q := m.reg(), m.reg()
	nan := m.c(math.NaN())
	m.set(p, nan)
	m.set(q, nan)
	// The special cases (chosen below) enter no loop: NaN, ±∞ and zeros
	// would run them to mathx.IgammaSteps.
	inf := m.c(math.Inf(1))
	special := m.or(m.cmp("nan", a, x), m.or(m.cmp("le", a, m.c(0)), m.cmp("le", x, m.c(0))))
	special = m.or(special, m.or(m.cmp("eq", a, inf), m.cmp("eq", x, inf)))
	done := k.Label("igamma_done")
	k.Op("@%s bra %s", special, done)
	useFraction := m.and(m.and(m.cmp("gt", x, a), m.cmp("gt", x, m.c(1))), m.or(m.cmp("ge", a, m.c(1)), m.cmp("gt", x, m.c(2))))
	series := k.Label("igamma_series")
	k.Op("@!%s bra %s", useFraction, series)
	{ // Q by the continued fraction (Lentz's), P = 1 - Q
		const tiny = 0x1p-1000
		b, c, dd, h := m.reg(), m.reg(), m.reg(), m.reg()
		m.set(b, m.sub(m.add(x, m.c(1)), a))
		m.set(c, m.c(1/tiny))
		m.set(dd, m.div(m.c(1), b))
		m.set(h, dd)
		ok := m.counted("igamma_fraction", mathx.IgammaSteps, func(n ptx.Reg) ptx.Reg {
			an := m.mul(m.neg(n), m.sub(n, a))
			m.set(b, m.add(b, m.c(2)))
			m.set(dd, m.add(m.mul(an, dd), b))
			m.set(dd, m.sel(m.cmp("lt", m.abs(dd), m.c(tiny)), m.c(tiny), dd))
			m.set(c, m.add(b, m.div(an, c)))
			m.set(c, m.sel(m.cmp("lt", m.abs(c), m.c(tiny)), m.c(tiny), c))
			m.set(dd, m.div(m.c(1), dd))
			step := m.mul(dd, c)
			m.set(h, m.mul(h, step))
			return m.cmp("le", m.abs(m.sub(step, m.c(1))), m.c(0x1p-53))
		})
		qq := m.mul(m.mul(a, d), h)
		m.set(q, m.sel(ok, qq, nan))
		m.set(p, m.sub(m.c(1), q))
	}
	k.Op("bra %s", done)
	k.Place(series)
	{ // P by the series; Q = 1 - P, or the small-a sum below a = 1
		sum, term := m.reg(), m.reg()
		m.set(sum, m.c(1))
		m.set(term, m.c(1))
		ok := m.counted("igamma_terms", mathx.IgammaSteps, func(n ptx.Reg) ptx.Reg {
			m.set(term, m.mul(term, m.div(x, m.add(a, n))))
			m.set(sum, m.add(sum, term))
			return m.cmp("le", term, m.mul(sum, m.c(0x1p-54)))
		})
		m.set(p, m.sel(ok, m.mul(d, sum), nan))
		m.set(q, m.sub(m.c(1), p))
		if upper {
			big := k.Label("igamma_not_small")
			k.Op("@%s bra %s", m.not(m.cmp("lt", a, m.c(1))), big)
			t := m.sub(m.mul(a, m.log(x)), m.lgamma1p(a))
			alt, pow, most := m.reg(), m.reg(), m.reg()
			m.set(alt, m.c(0))
			m.set(pow, m.c(1))
			m.set(most, m.c(0))
			m.counted("igamma_small", mathx.IgammaSteps, func(n ptx.Reg) ptx.Reg {
				m.set(pow, m.mul(pow, m.div(m.neg(x), n)))
				term := m.div(pow, m.add(a, n))
				m.set(alt, m.add(alt, term))
				m.set(most, m.max(most, m.abs(term)))
				return m.cmp("le", m.abs(term), m.mul(most, m.c(0x1p-54)))
			})
			m.set(q, m.sub(m.neg(m.expm1(t)), m.mul(m.mul(m.exp(t), a), alt)))
			k.Place(big)
		}
	}
	k.Place(done)
	r := p
	if upper {
		r = q
	}
	// The special cases, P's (Q's are 1 - them).
	zero, one := m.c(0), m.c(1)
	if upper {
		zero, one = one, zero
	}
	r = m.sel(m.or(m.cmp("eq", x, m.c(0)), m.cmp("eq", a, inf)), zero, r)
	r = m.sel(m.or(m.cmp("eq", a, m.c(0)), m.cmp("eq", x, inf)), one, r)
	bad := m.or(m.cmp("nan", a, x), m.or(m.cmp("lt", a, m.c(0)), m.cmp("lt", x, m.c(0))))
	bad = m.or(bad, m.and(m.cmp("eq", a, m.c(0)), m.cmp("eq", x, m.c(0))))
	bad = m.or(bad, m.and(m.cmp("eq", a, inf), m.cmp("eq", x, inf)))
	return m.sel(bad, nan, r)
}

// lgamma1p is mathx.Lgamma1p: ln Γ(1+a), by the series about 1 in a
// itself for |a| ≤ ¼.
func (m fm) lgamma1p(a ptx.Reg) ptx.Reg {
	s := mathx.GammaSeries().LgammaOne
	near := m.fma(a, m.polyEvenOdd(a, s.Coef[1:]), m.c(s.Coef[0]))
	return m.sel(m.cmp("gt", m.abs(a), m.c(0.25)), m.lgamma(m.add(m.c(1), a)), near)
}
