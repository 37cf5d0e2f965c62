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

// The constants of GeluTanh (ops/activation.go): √(2/π) and the cubic's
// coefficient.
const geluK, geluA = 0.7978845608028654, 0.044715

// geluTanhBlocks runs f over o, x (and dy, nil for the forward) in blocks
// of 256, with t = tanh(√(2/π)(x + 0.044715x³)) of the block computed by
// the vector tanh, and w a scratch block.
func geluTanhBlocks(o, x, dy []float32, f func(o, x, dy, t, w []float32)) {
	x = x[:len(o)]
	var buf, scratch [256]float32
	for lo := 0; lo < len(o); lo += len(buf) {
		hi := min(lo+len(buf), len(o))
		xs, t := x[lo:hi], buf[:hi-lo]
		if haveVecKernels {
			n := len(t)
			smul(&t[0], &xs[0], &xs[0], n)
			smuls(&t[0], &t[0], geluA, n)
			sadds(&t[0], &t[0], 1, n)
			smul(&t[0], &t[0], &xs[0], n)
			smuls(&t[0], &t[0], geluK, n)
		} else {
			for i, v := range xs {
				t[i] = geluK * (v + geluA*v*v*v)
			}
		}
		tanh32Loop(t, t)
		var ds []float32
		if dy != nil {
			ds = dy[lo:hi]
		}
		f(o[lo:hi], xs, ds, t, scratch[:hi-lo])
	}
}

// geluTanh32Loop sets o = x/2·(1 + t). o may be x.
func geluTanh32Loop(o, x []float32) {
	geluTanhBlocks(o, x, nil, func(o, x, _, t, _ []float32) {
		if haveVecKernels {
			n := len(o)
			sadds(&t[0], &t[0], 1, n)
			smul(&t[0], &t[0], &x[0], n)
			smuls(&o[0], &t[0], 0.5, n)
			return
		}
		for i, v := range x {
			o[i] = 0.5 * v * (1 + t[i])
		}
	})
}

// geluTanhGrad32 sets o = dy·g'(x) from t: g' = (1 + t)/2 + x/2·(1 -
// t²)·√(2/π)(1 + 3·0.044715x²); w is scratch. o may be x, not dy.
func geluTanhGrad32(o, x, dy, t, w []float32) {
	if !haveVecKernels {
		for i, v := range x {
			o[i] = dy[i] * geluTanhSlope(v, t[i])
		}
		return
	}
	n := len(o)
	smul(&w[0], &x[0], &x[0], n) // x²
	smuls(&w[0], &w[0], 3*geluA*geluK, n)
	sadds(&w[0], &w[0], geluK, n) // u'
	smul(&w[0], &w[0], &x[0], n)  // x·u'
	smuls(&w[0], &w[0], 0.5, n)
	smul(&o[0], &t[0], &t[0], n) // t², then x/2·u'·(1 - t²)
	smul(&o[0], &o[0], &w[0], n)
	ssub(&o[0], &w[0], &o[0], n)
	sadds(&t[0], &t[0], 1, n) // + (1 + t)/2
	smuls(&t[0], &t[0], 0.5, n)
	sadd(&o[0], &o[0], &t[0], n)
	smul(&o[0], &o[0], &dy[0], n)
}

func geluTanh64(v float64) float64 {
	return 0.5 * v * (1 + math.Tanh(geluK*(v+geluA*v*v*v)))
}

// geluTanhSlope is g'(x) = (1 + t)/2 + x/2·(1 - t²)·√(2/π)(1 + 3·0.044715x²).
func geluTanhSlope[T tensor.Float](x, t T) T {
	return 0.5*(1+t) + 0.5*x*(1-t*t)*geluK*(1+3*geluA*x*x)
}

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
			os[i] = ds[i] * geluTanhSlope(v, T(math.Tanh(float64(geluK*(v+geluA*v*v*v)))))
		}
	})
}

func softplus64(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }

func init() {
	floatLoops("Gelu", gelu32Loop, 2*expCost32, gelu64)
	floatLoops("GeluTanh", geluTanh32Loop, 2*expCost32, geluTanh64)
	kernels{f32: geluTanhGradKernel[float32], f64: geluTanhGradKernel[float64]}.register("GeluTanhGrad")
	floatLoops("Softplus", mapLoop(via64(softplus64)), 20, softplus64)
}
