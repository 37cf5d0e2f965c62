package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the smooth units (ops/smooth_units.go): ELU and SELU, SiLU,
// Mish and Softsign, float64 by their rules, float32 by the vector
// exponentials and arithmetic in blocks of 256 (the rules where those
// cannot give float64's value rounded: limits, overflows, subnormal
// tails), Softsign's by units_amd64.s.

// softsignOf is x/(1 + |x|), ±1 at ±∞.
func softsignOf[T tensor.Float](x T) T {
	if math.IsInf(float64(x), 0) {
		return T(math.Copysign(1, float64(x)))
	}
	return x / (1 + max(x, -x))
}

// expUnit is an exponential linear unit: scale·x for x > 0,
// scale·alpha·(e^x - 1) elsewhere (Elu: 1, 1; Selu: λ, α).
type expUnit struct{ scale, alpha float64 }

var eluUnit, seluUnit = expUnit{1, 1}, expUnit{mathx.SeluScale, mathx.SeluAlpha}

func (u expUnit) of64(x float64) float64 {
	if x > 0 {
		return u.scale * x
	}
	return u.scale * u.alpha * math.Expm1(x)
}

// loop32 is the unit's float32 loop: e^x - 1 by the vector expm1 (each
// value float64's rounded once) in blocks, scaled, the side x's sign
// picks.
func (u expUnit) loop32(o, x []float32) {
	if !haveVecKernels {
		mapLoop(via64(u.of64))(o, x)
		return
	}
	expm1 := lanesLoop(sexpm1_4, math.Expm1)
	s, sa := float32(u.scale), float32(u.scale*u.alpha)
	blocks32(o, x, nil, func(o, x, _, e, p []float32) {
		expm1(e, x)
		pos := x
		if u != eluUnit {
			smuls(&e[0], &e[0], sa, len(e))
			smuls(&p[0], &x[0], s, len(p))
			pos = p
		}
		selectPositive(o, x, pos, e)
	})
}

// selectPositive sets o = a where x > 0, else b (o may be any of them).
func selectPositive(o, x, a, b []float32) {
	k := vec8(len(o))
	if k > 0 {
		sselpos(&o[0], &x[0], &a[0], &b[0], k)
	}
	for i := k; i < len(o); i++ {
		if x[i] > 0 {
			o[i] = a[i]
		} else {
			o[i] = b[i]
		}
	}
}

// expUnitGradOf is the unit's backward from its input x: dy·scale where
// x > 0, dy·scale·alpha·e^x elsewhere.
func expUnitGradOf[T tensor.Float](u expUnit) func(x, dy T) T {
	return func(x, dy T) T {
		if x > 0 {
			return dy * T(u.scale)
		}
		return dy * T(u.scale*u.alpha*math.Exp(float64(x)))
	}
}

// grad32 is the unit's float32 backward loop: dy·(scale·alpha·e^x) by
// the vector exp, dy·scale, the side x's sign picks.
func (u expUnit) grad32(o, x, dy []float32) {
	if !haveVecKernels {
		f := expUnitGradOf[float32](u)
		for i := range o {
			o[i] = f(x[i], dy[i])
		}
		return
	}
	s, sa := float32(u.scale), float32(u.scale*u.alpha)
	blocks32(o, x, dy, func(o, x, dy, e, p []float32) {
		n := len(o)
		exp32Loop(e, x)
		smuls(&e[0], &e[0], sa, n)
		smul(&e[0], &e[0], &dy[0], n)
		smuls(&p[0], &dy[0], s, n)
		selectPositive(o, x, p, e)
	})
}

// Silu is x·σ(x), its slope σ(x)·(1 + x·σ(-x)); Mish is x·t, t =
// tanh(softplus(x)) = n/(n + 2) with n = e^x(e^x + 2), its slope
// t + x·σ(x)·(1 - t²), 1 - t² = 4(n + 1)/(n + 2)². Each is written so
// that nothing cancels: σ(-x) is not 1 - σ(x) (which loses every digit
// of a slope's 1 + x·σ(-x) past x = 17 in float32), nor 1 - t² one minus
// a number near 1. Their limits at -∞ are -0 (not -∞·0), their slopes'
// 0 and 1 at ∓∞.

func siluOf(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	return x * sigmoid64(x)
}

func siluSlope(x float64) float64 {
	if s, inf := infSlope(x); inf {
		return s
	}
	return sigmoid64(x) * (1 + x*sigmoid64(-x))
}

// mishParts returns t = tanh(softplus(x)) and 1 - t² from e = e^x: 1 and
// 0 where n overflows.
func mishParts[T tensor.Float](e T) (t, sech2 T) {
	n := e * (e + 2)
	if math.IsInf(float64(n), 1) {
		return 1, 0
	}
	return n / (n + 2), 4 * (n + 1) / ((n + 2) * (n + 2))
}

func mishOf(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	t, _ := mishParts(math.Exp(x))
	return x * t
}

func mishSlope(x float64) float64 {
	if s, inf := infSlope(x); inf {
		return s
	}
	t, sech2 := mishParts(math.Exp(x))
	return t + x*sigmoid64(x)*sech2
}

// infSlope is a unit's slope at x = ±∞ (1 at +∞, 0 at -∞) and whether x
// is infinite.
func infSlope(x float64) (float64, bool) {
	if math.IsInf(x, 0) {
		return math.Max(math.Copysign(1, x), 0), true
	}
	return 0, false
}

// blocks32 runs f over o, x (and dy where not nil) in blocks of 256 with
// two scratch blocks.
func blocks32(o, x, dy []float32, f func(o, x, dy, p, q []float32)) {
	x = x[:len(o)]
	var pb, qb [256]float32
	for lo := 0; lo < len(o); lo += len(pb) {
		hi := min(lo+len(pb), len(o))
		var ds []float32
		if dy != nil {
			ds = dy[lo:hi]
		}
		f(o[lo:hi], x[lo:hi], ds, pb[:hi-lo], qb[:hi-lo])
	}
}

// fixups32 sets o[i] = f(x[i]) in float64 where the block's vector
// arithmetic could not give float64's value rounded: where o holds a NaN
// that x does not (a limit's ∞·0, an overflow's ∞/∞), and below -87,
// where e^x and σ(x) are subnormal in float32 and keep few digits (the
// block's least x found by the vector maximum of -x, in scratch).
func fixups32(o, x, scratch []float32, f func(float64) float64) {
	smuls(&scratch[0], &x[0], -1, len(x))
	if !hasNaN(o) && smax(&scratch[0], len(x)) <= 87 {
		return
	}
	for i, v := range o {
		if v != v && x[i] == x[i] || x[i] < -87 {
			o[i] = float32(f(float64(x[i])))
		}
	}
}

// The float32 loops of Silu and Mish, forward and backward: the vector
// sigmoid and exp, the rest vector arithmetic over the block (in the
// order the float64 rules above write it), the limits and overflows
// through those rules; without the vector kernels, those rules rounded.

// smoothLoop is a smooth unit's float32 loop: value sets a block's
// values o from x (p, q scratch) with the vector kernels, f's float64
// rule fixing what they cannot give (fixups32); without them, f rounded.
func smoothLoop(f func(float64) float64, value func(o, x, p, q []float32)) func(o, x []float32) {
	return func(o, x []float32) {
		if !haveVecKernels {
			mapLoop(via64(f))(o, x)
			return
		}
		blocks32(o, x, nil, func(o, x, _, p, q []float32) {
			value(o, x, p, q)
			fixups32(o, x, p, f)
		})
	}
}

// smoothGradLoop is a smooth unit's float32 backward loop, o = dy·s:
// slope sets a block's slopes s from x (p scratch) with the vector
// kernels, the float64 rule f fixing them as smoothLoop's; without them,
// slopeLoop(f).
func smoothGradLoop(f func(float64) float64, slope func(s, x, p []float32)) func(o, x, dy []float32) {
	return func(o, x, dy []float32) {
		if !haveVecKernels {
			slopeLoop(f)(o, x, dy)
			return
		}
		blocks32(o, x, dy, func(o, x, dy, s, p []float32) {
			slope(s, x, p)
			fixups32(s, x, p, f)
			smul(&o[0], &dy[0], &s[0], len(o))
		})
	}
}

// silu32Loop: x·σ(x).
var silu32Loop = smoothLoop(siluOf, func(o, x, s, _ []float32) {
	sigmoid32Loop(s, x)
	smul(&o[0], &x[0], &s[0], len(o))
})

// siluGrad32Loop: σ(x)·(1 + x·σ(-x)), both sigmoids by the vector kernel.
var siluGrad32Loop = smoothGradLoop(siluSlope, func(q, x, p []float32) {
	n := len(q)
	sigmoid32Loop(p, x)
	smuls(&q[0], &x[0], -1, n)
	sigmoid32Loop(q, q)
	smul(&q[0], &x[0], &q[0], n)
	sadds(&q[0], &q[0], 1, n)
	smul(&q[0], &p[0], &q[0], n)
})

// mishTanh sets t = n/(n + 2) = tanh(softplus(x)) from e = e^x, n =
// e(e + 2) in m and n + 2 in d.
func mishTanh(t, e, m, d []float32) {
	k := len(t)
	sadds(&m[0], &e[0], 2, k)
	smul(&m[0], &e[0], &m[0], k)
	sadds(&d[0], &m[0], 2, k)
	sdiv(&t[0], &m[0], &d[0], k)
}

// mish32Loop: x·t, e^x by the vector exp.
var mish32Loop = smoothLoop(mishOf, func(o, x, e, m []float32) {
	var db [256]float32
	exp32Loop(e, x)
	mishTanh(e, e, m, db[:len(o)])
	smul(&o[0], &x[0], &e[0], len(o))
})

// mishGrad32Loop: t + x·σ(x)·4(n + 1)/(n + 2)², σ(x) = e/(1 + e).
var mishGrad32Loop = smoothGradLoop(mishSlope, func(s, x, e []float32) {
	var mb, db [256]float32
	k := len(s)
	m, d := mb[:k], db[:k]
	exp32Loop(e, x)
	sadds(&s[0], &e[0], 1, k)
	sdiv(&s[0], &e[0], &s[0], k) // σ(x)
	mishTanh(e, e, m, d)         // e = t
	sadds(&m[0], &m[0], 1, k)
	smuls(&m[0], &m[0], 4, k)
	smul(&d[0], &d[0], &d[0], k)
	sdiv(&m[0], &m[0], &d[0], k) // 1 - t²
	smul(&s[0], &x[0], &s[0], k)
	smul(&s[0], &s[0], &m[0], k)
	sadd(&s[0], &e[0], &s[0], k)
})

// slopeLoop is the float32 loop o = dy·slope(x), slope in float64,
// rounded once.
func slopeLoop(slope func(float64) float64) func(o, x, dy []float32) {
	return func(o, x, dy []float32) {
		for i := range o {
			o[i] = dy[i] * float32(slope(float64(x[i])))
		}
	}
}

func init() {
	floatLoopsOf("Softsign", unit32(ssoftsign, softsignOf[float32]), 1, mapLoop(softsignOf[float64]), 1)
	for op, u := range map[string]expUnit{"Elu": eluUnit, "Selu": seluUnit} {
		floatLoops(op, u.loop32, trigCost32, u.of64)
		gradKernels(op+"Grad", 2*expCost32, expUnitGradOf[float64](u), u.grad32)
	}
	floatLoops("Silu", silu32Loop, 2*expCost32, siluOf)
	floatLoops("Mish", mish32Loop, 2*expCost32, mishOf)
	gradKernels("SiluGrad", 3*expCost32, func(x, dy float64) float64 { return dy * siluSlope(x) }, siluGrad32Loop)
	gradKernels("MishGrad", 3*expCost32, func(x, dy float64) float64 { return dy * mishSlope(x) }, mishGrad32Loop)
}
