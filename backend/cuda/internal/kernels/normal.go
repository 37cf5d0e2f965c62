package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// The complementary error function and the normal distribution
// (ops/normal.go) in float64: erfc, erfcx, ndtr, logndtr and ndtri, and
// the derivatives their gradient ops (erfcgrad, erfcxgrad, ndtrgrad,
// logndtrgrad: dy times it) take, internal/mathx's steps (its normal.go)
// with its tables, every region computed and one selected.

// rational is r.P(x)/r.Q(x), as mathx.Rational.At.
func (m fm) rational(x ptx.Reg, r mathx.Rational) ptx.Reg {
	return m.div(m.poly(x, r.P), m.poly(x, r.Q))
}

// erfcR is mathx's erfcTail: R(1/x²), ErfcNear's below ErfcFarFrom,
// ErfcFar's past it.
func (m fm) erfcR(x ptx.Reg) ptx.Reg {
	s := m.div(m.c(1), m.mul(x, x))
	return m.sel(m.cmp("lt", x, m.c(mathx.ErfcFarFrom)), m.rational(s, mathx.ErfcNear), m.rational(s, mathx.ErfcFar))
}

// erfcPositive is mathx's: erfc(a) for a ≥ 0 (not NaN).
func (m fm) erfcPositive(a ptx.Reg) ptx.Reg {
	k := m.k
	ay := m.mul(a, m.rational(m.mul(a, a), mathx.ErfcSmall))
	tiny := m.sub(m.c(1), m.add(a, ay))
	small := m.sub(m.c(0.5), m.add(ay, m.sub(a, m.c(0.5))))
	one := m.sub(m.c(1-mathx.ErfcErx), m.rational(m.sub(a, m.c(1)), mathx.ErfcOne))
	ac := m.min(a, m.c(40))
	bits := k.Reg(ptx.B64)
	k.Op("mov.b64 %s, %s", bits, ac)
	k.Op("and.b64 %s, %s, 0xFFFFFFFF00000000", bits, bits) // z: ac's upper 21 bits
	z := m.reg()
	k.Op("mov.b64 %s, %s", z, bits)
	far := m.mul(m.exp(m.sub(m.mul(m.sub(m.c(0), z), z), m.c(0.5625))), m.exp(m.add(m.mul(m.sub(z, ac), m.add(z, ac)), m.erfcR(ac))))
	far = m.div(far, ac)
	r := m.sel(m.cmp("lt", a, m.c(1.25)), one, far)
	r = m.sel(m.cmp("lt", a, m.c(0.84375)), small, r)
	return m.sel(m.cmp("lt", a, m.c(0.25)), tiny, r)
}

// erfc is 2 - erfc(-x) for x < 0, NaN for NaN.
func (m fm) erfc(x ptx.Reg) ptx.Reg {
	p := m.erfcPositive(m.abs(x))
	return m.fixNaN(m.sel(m.cmp("lt", x, m.c(0)), m.sub(m.c(2), p), p), x)
}

// expSquare is mathx.ExpSquare: e^(x²) as e^h·(1 + l), x² = h + l.
func (m fm) expSquare(x ptx.Reg) ptx.Reg {
	a := m.min(m.abs(x), m.c(40))
	h := m.mul(a, a)
	return m.mul(m.exp(h), m.add(m.c(1), m.fma(a, a, m.sub(m.c(0), h))))
}

// erfcx is mathx.Erfcx: e^(R - 0.5625)/x from 1.25, e^(x²)·erfc(x)
// below, 2·e^(x²) - erfcx(-x) for x < 0.
func (m fm) erfcx(x ptx.Reg) ptx.Reg {
	a := m.abs(x)
	far := m.div(m.exp(m.sub(m.erfcR(a), m.c(0.5625))), a)
	p := m.sel(m.cmp("ge", a, m.c(1.25)), far, m.mul(m.expSquare(a), m.erfcPositive(a)))
	neg := m.sub(m.mul(m.c(2), m.expSquare(a)), p)
	return m.fixNaN(m.sel(m.cmp("lt", x, m.c(0)), neg, p), x)
}

// ndtr is mathx.Ndtr: (erfc(zh) - zl·(2/√π)·e^(-zh²))/2 with zh + zl =
// -x/√2, x held to [-60, 60].
func (m fm) ndtr(x ptx.Reg) ptx.Reg {
	hi, lo := mathx.HalfSqrt2()
	t := m.sub(m.c(0), m.max(m.min(x, m.c(60)), m.c(-60)))
	zh := m.mul(t, m.c(hi))
	zl := m.add(m.fma(t, m.c(hi), m.sub(m.c(0), zh)), m.mul(t, m.c(lo)))
	corr := m.mul(m.mul(zl, m.c(2/math.Sqrt(math.Pi))), m.expNegSquare(m.abs(zh)))
	return m.fixNaN(m.div(m.sub(m.erfc(zh), corr), m.c(2)), x)
}

// logndtr is mathx.LogNdtr: log1p(-Φ(-x)) above -1, else (ln(erfcx(zh)/2)
// - l/2) - h/2 with x² = h + l and zh = -x/√2 rounded.
func (m fm) logndtr(x ptx.Reg) ptx.Reg {
	upper := m.log1p(m.sub(m.c(0), m.ndtr(m.sub(m.c(0), x))))
	h := m.mul(x, x)
	l := m.fma(x, x, m.sub(m.c(0), h))
	l = m.sel(m.cmp("eq", h, m.c(math.Inf(1))), m.c(0), l)
	hi, _ := mathx.HalfSqrt2()
	zh := m.mul(m.sub(m.c(0), x), m.c(hi))
	lower := m.sub(m.sub(m.log(m.div(m.erfcx(zh), m.c(2))), m.div(l, m.c(2))), m.div(h, m.c(2)))
	return m.fixNaN(m.sel(m.cmp("gt", x, m.c(-1)), upper, lower), x)
}

// ndtri is mathx.Ndtri: AS241 in q = p - ½ near ½, in r = √(-ln min(p,
// 1-p)) beyond; ∓∞ at 0 and 1, NaN outside [0, 1].
func (m fm) ndtri(p ptx.Reg) ptx.Reg {
	q := m.sub(p, m.c(0.5))
	center := m.mul(q, m.rational(m.sub(m.c(0.180625), m.mul(q, q)), mathx.NdtriCenter))
	r := m.sqrt(m.sub(m.c(0), m.log(m.sel(m.cmp("gt", q, m.c(0)), m.sub(m.c(1), p), p))))
	tail := m.sel(m.cmp("le", r, m.c(5)), m.rational(m.sub(r, m.c(1.6)), mathx.NdtriNear), m.rational(m.sub(r, m.c(5)), mathx.NdtriFar))
	tail = m.sel(m.cmp("lt", q, m.c(0)), m.sub(m.c(0), tail), tail)
	v := m.sel(m.cmp("le", m.abs(q), m.c(0.425)), center, tail)
	v = m.sel(m.cmp("eq", p, m.c(0)), m.c(math.Inf(-1)), v)
	v = m.sel(m.cmp("eq", p, m.c(1)), m.c(math.Inf(1)), v)
	inside := m.and(m.cmp("ge", p, m.c(0)), m.cmp("le", p, m.c(1)))
	return m.sel(inside, v, m.c(math.NaN()))
}

// erfcDeriv is mathx.ErfcDeriv: -(2/√π)·e^(-x²), x² in two parts.
func (m fm) erfcDeriv(x ptx.Reg) ptx.Reg {
	return m.fixNaN(m.mul(m.c(-2/math.Sqrt(math.Pi)), m.expNegScaledSquare(m.abs(x), 1)), x)
}

// ndtrDeriv is mathx.NdtrDeriv: φ(x) = e^(-x²/2)/√(2π).
func (m fm) ndtrDeriv(x ptx.Reg) ptx.Reg {
	return m.fixNaN(m.div(m.expNegScaledSquare(m.abs(x), 0.5), m.c(math.Sqrt(2*math.Pi))), x)
}

// erfcxDeriv is mathx.ErfcxDeriv: -(2/√π)·K/(x + K) from x = 1 on, K the
// continued fraction's tail from mathx.ErfcxTerms(x) terms back (200
// below 2, 60 past it); 2x·erfcx(x) - 2/√π below 1.
func (m fm) erfcxDeriv(x ptx.Reg) ptx.Reg {
	small := m.sub(m.mul(m.mul(m.c(2), x), m.erfcx(x)), m.c(2/math.Sqrt(math.Pi)))
	xc := m.max(x, m.c(1))
	nh := m.sel(m.cmp("lt", xc, m.c(2)), m.c(float64(mathx.ErfcxTerms(1))/2), m.c(float64(mathx.ErfcxTerms(2))/2))
	tail := m.div(m.c(0.5), m.laplaceRest(xc, nh))
	big := m.mul(m.c(-2/math.Sqrt(math.Pi)), m.div(tail, m.add(xc, tail)))
	return m.sel(m.cmp("ge", x, m.c(1)), big, small)
}

// logndtrDeriv is mathx.LogNdtrDeriv: φ(x)/Φ(x) above 0, √(2/π)/erfcx(-x/√2)
// below.
func (m fm) logndtrDeriv(x ptx.Reg) ptx.Reg {
	hi, _ := mathx.HalfSqrt2()
	upper := m.div(m.ndtrDeriv(x), m.ndtr(x))
	lower := m.div(m.c(math.Sqrt(2/math.Pi)), m.erfcx(m.mul(m.sub(m.c(0), x), m.c(hi))))
	return m.fixNaN(m.sel(m.cmp("gt", x, m.c(0)), upper, lower), x)
}

// ndtriDeriv is mathx.NdtriDeriv: √(2π)·e^(y²/2), y² = h + l.
func (m fm) ndtriDeriv(y ptx.Reg) ptx.Reg {
	a := m.min(m.abs(y), m.c(40))
	h := m.mul(a, a)
	half := m.add(m.c(1), m.div(m.fma(a, a, m.sub(m.c(0), h)), m.c(2)))
	return m.fixNaN(m.mul(m.mul(m.exp(m.div(h, m.c(2))), half), m.c(math.Sqrt(2*math.Pi))), y)
}

// normalGrads are the gradient ops' derivatives by op name.
var normalGrads = map[string]func(m fm, x ptx.Reg) ptx.Reg{
	"erfcgrad": fm.erfcDeriv, "erfcxgrad": fm.erfcxDeriv, "ndtrgrad": fm.ndtrDeriv, "logndtrgrad": fm.logndtrDeriv,
	"ndtrigrad": fm.ndtriDeriv,
}
