package mathx

import (
	"math"
	"math/big"
	"sync"
)

// The matrix exponential's scaling and squaring (Higham, "The scaling and
// squaring method for the matrix exponential revisited", SIAM J. Matrix
// Anal. Appl. 26(4), 2005): the [m/m] Padé approximant r_m(A) =
// q_m(A)⁻¹·p_m(A) for the first degree m whose θ_m bounds ‖A‖₁, or A
// scaled by 2⁻ˢ into θ₁₃ and r₁₃ squared s times. The CPU's and the
// GPU's kernels share these.

// ExpmDegrees are the degrees tried, in order; ExpmTheta their bounds
// on ‖A‖₁ for double precision (Higham's Table 2.3).
var (
	ExpmDegrees = []int{3, 5, 7, 9, 13}
	ExpmTheta   = []float64{1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1, 2.097847961257068, 5.371920351148152}
)

// ExpmPade returns the coefficients c₀ ... c_m of p_m(x) = Σ c_k·xᵏ (and
// q_m(x) = p_m(-x)) for degree m: c_k = (2m-k)!·m!/((2m)!·k!·(m-k)!),
// each the exact rational rounded once.
func ExpmPade(m int) []float64 { return expmPade()[m] }

var expmPade = sync.OnceValue(func() map[int][]float64 {
	fact := func(n int) *big.Int { return new(big.Int).MulRange(1, int64(max(n, 1))) }
	out := map[int][]float64{}
	for _, m := range ExpmDegrees {
		c := make([]float64, m+1)
		for k := range c {
			num := new(big.Int).Mul(fact(2*m-k), fact(m))
			den := new(big.Int).Mul(fact(2*m), new(big.Int).Mul(fact(k), fact(m-k)))
			c[k], _ = new(big.Rat).SetFrac(num, den).Float64()
		}
		out[m] = c
	}
	return out
})

// ExpmScaling is the degree and the number of squarings for ‖A‖₁ = norm
// (finite, not negative): the first degree whose θ bounds it, unscaled,
// else 13 and s = ⌈log₂(norm/θ₁₃)⌉ (held to 1000, so that 2⁻ˢ is a
// normal number), found from the quotient's bits as the GPU does.
func ExpmScaling(norm float64) (m, s int) {
	for i, t := range ExpmTheta[:len(ExpmTheta)-1] {
		if norm <= t {
			return ExpmDegrees[i], 0
		}
	}
	r := norm / ExpmTheta[len(ExpmTheta)-1]
	if r <= 1 {
		return 13, 0
	}
	return 13, min(Log2Ceil(r), 1000)
}

// Log2Ceil is ⌈log₂ r⌉ for a normal r > 1, exactly: the exponent of r's
// bits, less one where r is a power of 2.
func Log2Ceil(r float64) int {
	bits := math.Float64bits(r)
	e := int(bits>>52&0x7ff) - 1023
	if bits&(1<<52-1) != 0 {
		e++
	}
	return e
}
