package cpu

import "math"

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

func softplus64(v float64) float64 { return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) }

func init() {
	floatLoops("Gelu", gelu32Loop, 2*expCost32, gelu64)
	floatLoops("Softplus", mapLoop(via64(softplus64)), 20, softplus64)
}
