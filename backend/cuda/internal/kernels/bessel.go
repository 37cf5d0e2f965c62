package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// The modified Bessel functions I₀ and I₁ and their scaled forms in
// float64 (ops/bessel.go): internal/mathx's bessel.go step for step, the
// power series below mathx.BesselAsymptoticFrom and the asymptotic
// expansion from it, each sum over an operand clamped to its side (so
// that neither loop runs long for the other's elements), one selected.

// besselSeries is mathx's: Σ (a²/4)ᵏ/(k!·(k+ν)!)·(a/2)^ν, a² = h + l and
// l's share added at the end.
func (m fm) besselSeries(nu int, a ptx.Reg) ptx.Reg {
	h := m.mul(a, a)
	r := m.div(m.fma(a, a, m.sub(m.c(0), h)), h)
	q := m.div(h, m.c(4))
	term, sum, moment := m.reg(), m.reg(), m.reg()
	if nu == 1 {
		m.set(term, m.div(a, m.c(2)))
	} else {
		m.set(term, m.c(1))
	}
	m.set(sum, term)
	m.set(moment, m.c(0))
	m.counted("bessel_series", mathx.BesselTerms, func(n ptx.Reg) ptx.Reg {
		m.set(term, m.mul(term, m.div(q, m.mul(n, m.add(n, m.c(float64(nu)))))))
		m.set(sum, m.add(sum, term))
		m.set(moment, m.add(moment, m.mul(n, term)))
		return m.cmp("le", term, m.mul(sum, m.c(0x1p-56)))
	})
	return m.sel(m.cmp("eq", h, m.c(0)), sum, m.add(sum, m.mul(r, moment)))
}

// besselExpansion is mathx's: the asymptotic sum, ended before its terms
// grow or once they are below 2⁻⁵⁶ of it.
func (m fm) besselExpansion(nu int, a ptx.Reg) ptx.Reg {
	mu := float64(4 * nu * nu)
	term, sum := m.reg(), m.reg()
	m.set(term, m.c(1))
	m.set(sum, m.c(1))
	m.counted("bessel_expansion", mathx.BesselTerms, func(n ptx.Reg) ptx.Reg {
		odd := m.sub(m.mul(m.c(2), n), m.c(1))
		next := m.div(m.mul(term, m.sub(m.mul(odd, odd), m.c(mu))), m.mul(m.mul(m.c(8), n), a))
		grows := m.cmp("ge", m.abs(next), m.abs(term))
		m.set(term, m.sel(grows, term, next))
		m.set(sum, m.sel(grows, sum, m.add(sum, next)))
		return m.or(grows, m.cmp("le", m.abs(term), m.mul(m.abs(sum), m.c(0x1p-56))))
	})
	return sum
}

// besselAbs is e^-a·I_ν(a) (scaled) or I_ν(a) for a ≥ 0, as mathx's
// besselIe and besselI.
func (m fm) besselAbs(nu int, a ptx.Reg, scaled bool) ptx.Reg {
	from := m.c(mathx.BesselAsymptoticFrom)
	series := m.besselSeries(nu, m.min(a, from))
	far := m.max(a, from)
	tail := m.div(m.mul(m.besselExpansion(nu, far), m.c(1/math.Sqrt(2*math.Pi))), m.sqrt(far))
	near := series
	if scaled {
		near = m.mul(series, m.exp(m.sub(m.c(0), a)))
	} else {
		h := m.exp(m.div(a, m.c(2)))
		tail = m.sel(m.cmp("gt", a, m.c(mathx.BesselOverflow)), m.c(math.Inf(1)), m.mul(m.mul(h, tail), h))
	}
	return m.sel(m.cmp("lt", a, from), near, tail)
}

func (m fm) besselI0(x ptx.Reg) ptx.Reg  { return m.fixNaN(m.besselAbs(0, m.abs(x), false), x) }
func (m fm) besselI0e(x ptx.Reg) ptx.Reg { return m.fixNaN(m.besselAbs(0, m.abs(x), true), x) }
func (m fm) besselI1(x ptx.Reg) ptx.Reg {
	return m.fixNaN(m.copysign(m.besselAbs(1, m.abs(x), false), x), x)
}
func (m fm) besselI1e(x ptx.Reg) ptx.Reg {
	return m.fixNaN(m.copysign(m.besselAbs(1, m.abs(x), true), x), x)
}
