package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the fused activations (ops/activation.go).

// gelu32Loop computes Gelu in blocks: Φ(x) into a block on the stack by
// the AVX2 kernel sphi8 (which keeps both tails accurate), then x·Φ(x);
// the rest in float64, Φ(x) = erfc(-x/√2)/2. o may be x.
func gelu32Loop(o, x []float32) {
	x = x[:len(o)]
	var buf [256]float32
	for lo := 0; lo < len(o); lo += len(buf) {
		xs, os := x[lo:min(lo+len(buf), len(o))], o[lo:min(lo+len(buf), len(o))]
		phi := buf[:len(xs)]
		start := vecPrefix(phi, xs, haveVecKernels, 8, sphi8)
		for i := range start {
			os[i] = xs[i] * phi[i]
			if phi[i] == 0 {
				os[i] = float32(math.Copysign(0, -1)) // -Inf too: the limit, not -Inf·0
			}
		}
		for i := start; i < len(xs); i++ {
			os[i] = float32(gelu64(float64(xs[i])))
		}
	}
}

// gelu64 is x·Φ(x), Φ(x) = erfc(-x/√2)/2 (accurate in the lower tail, where
// 1 + erf cancels), and -0 where Φ is 0, the limit at -Inf, as the float32
// loop.
func gelu64(v float64) float64 {
	if p := 0.5 * math.Erfc(-v/math.Sqrt2); p > 0 || p != p {
		return v * p
	}
	return math.Copysign(0, -1)
}

// Gelu's gradient is dy·(Φ(x) + x·φ(x)), φ(x) = e^(-x²/2)/√(2π), with Φ's
// lower tail as such (as the forward's): (1 + erf)/2 cancels for x < 0,
// to a relative error of 1e-3 in float32 by x = -4 and 5e-8 in float64
// by -7. Its limits at ±∞ are 1 and 0 (not ∞·0).

// geluGrad32Loop sets o = dy·g'(x) in blocks: Φ by the vector sphi8, φ's
// exponential by the vector exp. o may be x, not dy.
func geluGrad32Loop(o, x, dy []float32) {
	x, dy = x[:len(o)], dy[:len(o)]
	var pb, eb [256]float32
	for lo := 0; lo < len(o); lo += len(pb) {
		hi := min(lo+len(pb), len(o))
		xs, ds, os, phi, e := x[lo:hi], dy[lo:hi], o[lo:hi], pb[:hi-lo], eb[:hi-lo]
		start := vecPrefix(phi, xs, haveVecKernels, 8, sphi8)
		for i, v := range xs {
			e[i] = -0.5 * v * v
		}
		exp32Loop(e, e)
		for i, v := range xs {
			g := phi[i] + v*(e[i]*(1/sqrtTwoPi))
			if i >= start {
				g = float32(geluSlope64(float64(v)))
			} else if g != g && v == v { // ±∞: ∞·0
				g = float32(geluSlope64(float64(v)))
			}
			os[i] = ds[i] * g
		}
	}
}

// sqrtTwoPi is √(2π).
const sqrtTwoPi = 2.5066282746310002

// geluSlope64 is Φ(x) + x·φ(x), its limits at ±∞.
func geluSlope64(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return 1
	case math.IsInf(v, -1):
		return 0
	}
	return 0.5*math.Erfc(-v/math.Sqrt2) + v*math.Exp(-0.5*v*v)/sqrtTwoPi
}

// geluGradKernel sets o = dy·g'(x) from x and dy, sharded.
func geluGradKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x, dy, o := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
	deviceOf(c).Parallel(len(o), 3*expCost32, func(lo, hi int) {
		xs, ds, os := x[lo:hi], dy[lo:hi], o[lo:hi]
		if x32, ok := any(xs).([]float32); ok {
			geluGrad32Loop(any(os).([]float32), x32, any(ds).([]float32))
			return
		}
		for i, v := range xs {
			os[i] = ds[i] * T(geluSlope64(float64(v)))
		}
	})
}

// The constants of GeluTanh (ops/activation.go): √(2/π) and the cubic's
// coefficient.
const geluK, geluA = 0.7978845608028654, 0.044715

// GeluTanh is x/2·(1 + tanh u), u = √(2/π)(x + 0.044715x³), computed as
// x·σ(2u): 1 + tanh u cancels where tanh u nears -1 (float64 lost all
// digits by x = -7, float32 by -4), σ(2u) does not. Its gradient is
// σ + 2x·u'·σ·(1 - σ), u' = √(2/π)(1 + 3·0.044715x²), with 1 - σ as
// σ(-2u), never 1 minus a number near 1. At -∞ the value is -0 and the
// gradient 0 (their limits, not -∞·0); where x·u' overflows (|x| past
// about 10¹²) the gradient is its limit, 1 or 0.

// geluTanhBlocks runs f over o, x (and dy, nil for the forward) in blocks
// of 256 with s = σ(2u) and w = 2u of the block (f may overwrite w), by
// the vector sigmoid, and p a scratch block.
func geluTanhBlocks(o, x, dy []float32, f func(o, x, dy, s, w, p []float32)) {
	x = x[:len(o)]
	var sb, wb, pb [256]float32
	for lo := 0; lo < len(o); lo += len(sb) {
		hi := min(lo+len(sb), len(o))
		xs, s, w := x[lo:hi], sb[:hi-lo], wb[:hi-lo]
		if haveVecKernels {
			n := len(w)
			smul(&w[0], &xs[0], &xs[0], n)
			smuls(&w[0], &w[0], geluA, n)
			sadds(&w[0], &w[0], 1, n)
			smul(&w[0], &w[0], &xs[0], n)
			smuls(&w[0], &w[0], 2*geluK, n)
		} else {
			for i, v := range xs {
				w[i] = 2 * geluK * (v + geluA*v*v*v)
			}
		}
		sigmoid32Loop(s, w)
		var ds []float32
		if dy != nil {
			ds = dy[lo:hi]
		}
		f(o[lo:hi], xs, ds, s, w, pb[:hi-lo])
	}
}

// geluTanh32Loop sets o = x·σ(2u). o may be x.
func geluTanh32Loop(o, x []float32) {
	geluTanhBlocks(o, x, nil, func(o, x, _, s, _, _ []float32) {
		if haveVecKernels {
			smul(&o[0], &x[0], &s[0], len(o))
		} else {
			for i, v := range x {
				o[i] = v * s[i]
			}
		}
		if !hasNaN(o) {
			return
		}
		for i, v := range o {
			if v != v && s[i] == 0 { // -∞·0: the limit
				o[i] = float32(math.Copysign(0, -1))
			}
		}
	})
}

// geluTanhGrad32 sets o = dy·g'(x), g' = s + 2x·u'·s·σ(-2u), from s and
// w = 2u; p is scratch. o may be x, not dy.
func geluTanhGrad32(o, x, dy, s, w, p []float32) {
	if !haveVecKernels {
		for i, v := range x {
			o[i] = dy[i] * float32(geluTanhSlope64(float64(v)))
		}
		return
	}
	n := len(o)
	smuls(&w[0], &w[0], -1, n)
	sigmoid32Loop(w, w) // 1 - s
	smul(&w[0], &w[0], &s[0], n)
	smul(&p[0], &x[0], &x[0], n)
	smuls(&p[0], &p[0], 6*geluA*geluK, n)
	sadds(&p[0], &p[0], 2*geluK, n) // 2u'
	smul(&p[0], &p[0], &x[0], n)
	smul(&p[0], &p[0], &w[0], n)
	sadd(&p[0], &p[0], &s[0], n)
	if hasNaN(p) {
		for i, v := range p {
			if v != v && x[i] == x[i] { // x·u' overflowed against s·(1 - s) = 0
				p[i] = float32(geluTanhSlope64(float64(x[i])))
			}
		}
	}
	smul(&o[0], &p[0], &dy[0], n)
}

// hasNaN reports whether a block holds a NaN, by its vector sum (a sum
// of infinities of both signs says yes too: the caller's scan finds
// none then).
func hasNaN(b []float32) bool {
	if !haveVecKernels {
		return true
	}
	sum := ssum(&b[0], len(b))
	return sum != sum
}

// geluTanh64 is x·σ(2u) (-0 at -∞).
func geluTanh64(v float64) float64 {
	s := sigmoid64(2 * geluK * (v + geluA*v*v*v))
	if s == 0 {
		return math.Copysign(0, -1)
	}
	return v * s
}

// geluTanhSlope64 is g'(x) = s + 2x·u'·s·σ(-2u), s = σ(2u); 0 or 1 where
// |x| is past geluSaturates64 (x·u' would overflow against s·(1 - s) =
// 0; the slope is within float64's rounding of its limit from 22 on).
func geluTanhSlope64(v float64) float64 {
	switch {
	case v != v:
		return v
	case v > geluSaturates64:
		return 1
	case v < -geluSaturates64:
		return 0
	}
	u2 := 2 * geluK * (v + geluA*v*v*v)
	s := sigmoid64(u2)
	return s + 2*v*geluK*(1+3*geluA*v*v)*s*sigmoid64(-u2)
}

// geluSaturates64 is where σ(2u) is 0 or 1 in float64 (2|u| past 745).
const geluSaturates64 = 22

// geluTanhGradKernel sets o = dy·g'(x) from x and dy, sharded.
func geluTanhGradKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x, dy, o := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
	deviceOf(c).Parallel(len(o), 3*expCost32, func(lo, hi int) {
		xs, ds, os := x[lo:hi], dy[lo:hi], o[lo:hi]
		if x32, ok := any(xs).([]float32); ok {
			geluTanhBlocks(any(os).([]float32), x32, any(ds).([]float32), geluTanhGrad32)
			return
		}
		for i, v := range xs {
			os[i] = ds[i] * T(geluTanhSlope64(float64(v)))
		}
	})
}

func softplus64(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }

func init() {
	floatLoops("Gelu", gelu32Loop, 2*expCost32, gelu64)
	floatLoops("GeluTanh", geluTanh32Loop, 2*expCost32, geluTanh64)
	kernels{f32: geluTanhGradKernel[float32], f64: geluTanhGradKernel[float64]}.register("GeluTanhGrad")
	kernels{f32: geluGradKernel[float32], f64: geluGradKernel[float64]}.register("GeluGrad")
	floatLoops("Softplus", lanesLoop(ssoftplus4, softplus64), trigCost32, softplus64)
}
