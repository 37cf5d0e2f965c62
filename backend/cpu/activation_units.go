package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the rectifiers (ops/rectifiers.go) and the smooth units
// (ops/smooth_units.go). Each function is written once over the float
// type, in its own arithmetic, with PyTorch's rules at the kinks; the
// float32 loops take the AVX2 kernels (units_amd64.s: comparisons and
// blends, no branch an element) over multiples of eight and these
// functions over the rest, and the smooth units the vector exponentials
// and arithmetic in blocks of 256.

// vec8 is how many of n elements the vector kernels take: a multiple of
// eight, none without them.
func vec8(n int) int {
	if !haveVecKernels {
		return 0
	}
	return n &^ 7
}

// unit32 is the float32 loop of kern (n a multiple of 8) and f for the
// rest.
func unit32(kern func(dst, x *float32, n int), f func(float32) float32) func(o, x []float32) {
	return func(o, x []float32) {
		x = x[:len(o)]
		k := vec8(len(o))
		if k > 0 {
			kern(&o[0], &x[0], k)
		}
		for i := k; i < len(o); i++ {
			o[i] = f(x[i])
		}
	}
}

// unitGrad32 is unit32 for a backward op of (x, dy).
func unitGrad32(kern func(dst, x, dy *float32, n int), f func(x, dy float32) float32) func(o, x, dy []float32) {
	return func(o, x, dy []float32) {
		x, dy = x[:len(o)], dy[:len(o)]
		k := vec8(len(o))
		if k > 0 {
			kern(&o[0], &x[0], &dy[0], k)
		}
		for i := k; i < len(o); i++ {
			o[i] = f(x[i], dy[i])
		}
	}
}

func preluOf[T tensor.Float](x, a T) T {
	if x > 0 {
		return x
	}
	return x * a
}

func preluSlopeOf[T tensor.Float](x, a T) T {
	if x > 0 {
		return 1
	}
	return a
}

// ones256 is a block of ones (PreluSlope's 1 where x > 0, selected).
var ones256 = func() (b [256]float32) {
	for i := range b {
		b[i] = 1
	}
	return b
}()

// preluLoops32 and preluSlopeLoops32 are Prelu's and PreluSlope's float32
// loops: a slope alpha of one value (LeakyRelu), of x's shape, or of a
// channel tiled along it (binaryKernel's periodic rows) through the
// vector kernels; a single x (all on one side) through the Go rule.
var (
	preluLoops32 = binLoops[float32, float32]{
		vv: func(o, x, a []float32) {
			x, a = x[:len(o)], a[:len(o)]
			k := vec8(len(o))
			if k > 0 {
				smul(&o[0], &x[0], &a[0], k)
				sselpos(&o[0], &x[0], &x[0], &o[0], k)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluOf(x[i], a[i])
			}
		},
		vs: func(o, x []float32, a float32) {
			x = x[:len(o)]
			k := vec8(len(o))
			if k > 0 {
				sprelu(&o[0], &x[0], a, k)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluOf(x[i], a)
			}
		},
		sv: scalarLoops(preluOf[float32]).sv,
	}
	preluSlopeLoops32 = binLoops[float32, float32]{
		vv: func(o, x, a []float32) {
			x, a = x[:len(o)], a[:len(o)]
			k := vec8(len(o))
			for lo := 0; lo < k; lo += len(ones256) {
				n := min(len(ones256), k-lo)
				sselpos(&o[lo], &x[lo], &ones256[0], &a[lo], n)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluSlopeOf(x[i], a[i])
			}
		},
		vs: func(o, x []float32, a float32) {
			x = x[:len(o)]
			k := vec8(len(o))
			if k > 0 {
				spreluslope(&o[0], &x[0], a, k)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluSlopeOf(x[i], a)
			}
		},
		sv: scalarLoops(preluSlopeOf[float32]).sv,
	}
)

// Relu6, HardSigmoid and HardSwish clamp x (x + 3) to [0, 6] as
// PyTorch's kernels do, NaN kept (Go's min and max propagate it, and
// max(-0, 0) is +0); HardSwish is -0 all the way from -3 (at -∞ too,
// where x·0 would be NaN) and x from 3. Their backward ops pass dy (scaled) inside
// the kinks, NaN's dy too where PyTorch's do.

func relu6Of[T tensor.Float](x T) T       { return min(max(x, 0), 6) }
func hardSigmoidOf[T tensor.Float](x T) T { return min(max(x+3, 0), 6) / 6 }

func hardSwishOf[T tensor.Float](x T) T {
	switch {
	case x <= -3:
		return T(math.Copysign(0, -1))
	case x >= 3:
		return x // not x·6/6, which overflows past max/6
	}
	return x * min(max(x+3, 0), 6) / 6
}

func relu6GradOf[T tensor.Float](x, dy T) T {
	if x <= 0 || x >= 6 {
		return 0
	}
	return dy
}

func hardSigmoidGradOf[T tensor.Float](x, dy T) T {
	if x > -3 && x < 3 {
		return dy * (1.0 / 6)
	}
	return 0
}

// hardSwishGradOf is dy·h'(x), h' = 0 below -3, x/3 + 1/2 to 3 (both
// included, as PyTorch's), 1 above.
func hardSwishGradOf[T tensor.Float](x, dy T) T {
	switch {
	case x < -3:
		return 0
	case x <= 3:
		return dy * ((2*x + 3) / 6) // x/3 + 1/2 without cancelling near -3/2
	}
	return dy
}

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

func silu32Loop(o, x []float32) {
	if !haveVecKernels {
		mapLoop(via64(siluOf))(o, x)
		return
	}
	blocks32(o, x, nil, func(o, x, _, s, _ []float32) {
		sigmoid32Loop(s, x)
		smul(&o[0], &x[0], &s[0], len(o))
		fixups32(o, x, s, siluOf)
	})
}

// siluGrad32Loop: σ(x)·(1 + x·σ(-x)), both sigmoids by the vector kernel.
func siluGrad32Loop(o, x, dy []float32) {
	if !haveVecKernels {
		slopeLoop(siluSlope)(o, x, dy)
		return
	}
	blocks32(o, x, dy, func(o, x, dy, p, q []float32) {
		n := len(o)
		sigmoid32Loop(p, x)
		smuls(&q[0], &x[0], -1, n)
		sigmoid32Loop(q, q)
		smul(&q[0], &x[0], &q[0], n)
		sadds(&q[0], &q[0], 1, n)
		smul(&q[0], &p[0], &q[0], n)
		fixups32(q, x, p, siluSlope)
		smul(&o[0], &dy[0], &q[0], n)
	})
}

// mishTanh sets t = n/(n + 2) = tanh(softplus(x)) from e = e^x, n =
// e(e + 2) in m and n + 2 in d.
func mishTanh(t, e, m, d []float32) {
	k := len(t)
	sadds(&m[0], &e[0], 2, k)
	smul(&m[0], &e[0], &m[0], k)
	sadds(&d[0], &m[0], 2, k)
	sdiv(&t[0], &m[0], &d[0], k)
}

func mish32Loop(o, x []float32) {
	if !haveVecKernels {
		mapLoop(via64(mishOf))(o, x)
		return
	}
	blocks32(o, x, nil, func(o, x, _, e, m []float32) {
		var db [256]float32
		d := db[:len(o)]
		exp32Loop(e, x)
		mishTanh(e, e, m, d)
		smul(&o[0], &x[0], &e[0], len(o))
		fixups32(o, x, m, mishOf)
	})
}

// mishGrad32Loop: t + x·σ(x)·4(n + 1)/(n + 2)², σ(x) = e/(1 + e).
func mishGrad32Loop(o, x, dy []float32) {
	if !haveVecKernels {
		slopeLoop(mishSlope)(o, x, dy)
		return
	}
	blocks32(o, x, dy, func(o, x, dy, e, m []float32) {
		var db, sb [256]float32
		k := len(o)
		d, s := db[:k], sb[:k]
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
		fixups32(s, x, m, mishSlope)
		smul(&o[0], &dy[0], &s[0], k)
	})
}

// slopeLoop is the float32 loop o = dy·slope(x), slope in float64,
// rounded once.
func slopeLoop(slope func(float64) float64) func(o, x, dy []float32) {
	return func(o, x, dy []float32) {
		for i := range o {
			o[i] = dy[i] * float32(slope(float64(x[i])))
		}
	}
}

// backwardKernel computes a backward op from the function's input or
// output x, o[i] = f(x[i], dy[i]) in one pass, sharded (cost an
// element); loop32 (where not nil) is its float32 loop, f then unused.
func backwardKernel[T tensor.Float](cost float64, f func(x, dy T) T, loop32 func(o, x, dy []float32)) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, dy, o := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
		deviceOf(c).Parallel(len(o), cost, func(lo, hi int) {
			xs, ds, os := x[lo:hi], dy[lo:hi], o[lo:hi]
			if loop32 != nil {
				if o32, ok := any(os).([]float32); ok {
					loop32(o32, any(xs).([]float32), any(ds).([]float32))
					return
				}
			}
			for i := range os {
				os[i] = f(xs[i], ds[i])
			}
		})
	}
}

// gradKernels registers a backward op's float kernels: f64 float64's
// rule, loop32 float32's loop, cost an element.
func gradKernels(op string, cost float64, f64 func(x, dy float64) float64, loop32 func(o, x, dy []float32)) {
	kernels{f32: backwardKernel[float32](cost, nil, loop32), f64: backwardKernel(cost, f64, nil)}.register(op)
}

func init() {
	kernels{f32: binaryKernel(preluLoops32), f64: binaryKernel(scalarLoops(preluOf[float64])),
		elementwise: &eager.ElementwiseF32{VV: preluLoops32.vv, VS: preluLoops32.vs, SV: preluLoops32.sv}}.register("Prelu")
	kernels{f32: binaryKernel(preluSlopeLoops32), f64: binaryKernel(scalarLoops(preluSlopeOf[float64])),
		elementwise: &eager.ElementwiseF32{VV: preluSlopeLoops32.vv, VS: preluSlopeLoops32.vs, SV: preluSlopeLoops32.sv}}.register("PreluSlope")

	floatLoopsOf("Relu6", unit32(srelu6, relu6Of[float32]), 1, mapLoop(relu6Of[float64]), 1)
	floatLoopsOf("HardSigmoid", unit32(shardsigmoid, hardSigmoidOf[float32]), 1, mapLoop(hardSigmoidOf[float64]), 1)
	floatLoopsOf("HardSwish", unit32(shardswish, hardSwishOf[float32]), 1, mapLoop(hardSwishOf[float64]), 1)
	floatLoopsOf("Softsign", unit32(ssoftsign, softsignOf[float32]), 1, mapLoop(softsignOf[float64]), 1)
	gradKernels("Relu6Grad", 1, relu6GradOf[float64], unitGrad32(srelu6grad, relu6GradOf[float32]))
	gradKernels("HardSigmoidGrad", 1, hardSigmoidGradOf[float64], unitGrad32(shardsigmoidgrad, hardSigmoidGradOf[float32]))
	gradKernels("HardSwishGrad", 1, hardSwishGradOf[float64], unitGrad32(shardswishgrad, hardSwishGradOf[float32]))

	for op, u := range map[string]expUnit{"Elu": eluUnit, "Selu": seluUnit} {
		floatLoops(op, u.loop32, trigCost32, u.of64)
		gradKernels(op+"Grad", 2*expCost32, expUnitGradOf[float64](u), u.grad32)
	}
	floatLoops("Silu", silu32Loop, 2*expCost32, siluOf)
	floatLoops("Mish", mish32Loop, 2*expCost32, mishOf)
	gradKernels("SiluGrad", 3*expCost32, func(x, dy float64) float64 { return dy * siluSlope(x) }, siluGrad32Loop)
	gradKernels("MishGrad", 3*expCost32, func(x, dy float64) float64 { return dy * mishSlope(x) }, mishGrad32Loop)
}
