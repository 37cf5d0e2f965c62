package mathx

import "math"

// The modified Bessel functions of the first kind of orders 0 and 1,
// I₀ and I₁, and their exponentially scaled forms e^-|x|·I₀(x) and
// e^-|x|·I₁(x) (SciPy's i0, i1, i0e, i1e; torch.special's; TensorFlow's
// bessel_i0e, bessel_i1e): below BesselAsymptoticFrom the power series,
// all of whose terms are positive, Σ (x²/4)ᵏ/(k!·(k+ν)!)·(x/2)^ν; from it
// the asymptotic expansion e^x/√(2πx)·Σ (-1)ᵏ·aₖ(ν)/xᵏ, aₖ = Πⱼ (4ν² -
// (2j-1)²)/(k!·8ᵏ), whose terms after the first share one sign, summed
// until they stop shrinking (at 20 the smallest is below 2⁻⁵⁶ of the
// sum). The GPU's kernels take the same steps.

// BesselAsymptoticFrom is where the asymptotic expansion takes over.
const BesselAsymptoticFrom = 20

// BesselOverflow is past where I₀ and I₁ overflow (713.98): +∞ from it
// (e^(a/2) itself overflows from 1419.6).
const BesselOverflow = 720

// BesselTerms bounds both sums' terms (the series needs about 60 at 20,
// the expansion about 40 there and fewer beyond).
const BesselTerms = 90

// besselSeries is Σ (a²/4)ᵏ/(k!·(k+ν)!)·(a/2)^ν for a ≥ 0, ν 0 or 1.
// a² = h + l exactly (FMA): the terms are of h/4, and the k-th's share of
// l, k·(l/h) of it, is added at the end (a² rounded would move the terms
// k half-ulps each, about 5 ulps of the sum at 20).
func besselSeries(nu int, a float64) float64 {
	h := a * a
	r := math.FMA(a, a, -h) / h
	q := h / 4
	term := 1.0
	if nu == 1 {
		term = a / 2
	}
	sum, moment := term, 0.0
	for k := 1; k <= BesselTerms; k++ {
		term *= q / float64(k*(k+nu))
		sum += term
		moment += float64(k) * term
		if term <= sum*0x1p-56 {
			break
		}
	}
	if h == 0 {
		return sum
	}
	return sum + r*moment
}

// besselExpansion is the asymptotic expansion's sum Σ (-1)ᵏ·aₖ(ν)/aᵏ
// for a ≥ BesselAsymptoticFrom (e^-a·√(2πa)·I_ν(a) to its last digits).
func besselExpansion(nu int, a float64) float64 {
	mu := float64(4 * nu * nu)
	term, sum := 1.0, 1.0
	for k := 1; k <= BesselTerms; k++ {
		odd := float64(2*k - 1)
		next := term * (odd*odd - mu) / (8 * float64(k) * a)
		if math.Abs(next) >= math.Abs(term) { // past the smallest term
			break
		}
		term = next
		sum += term
		if math.Abs(term) <= math.Abs(sum)*0x1p-56 {
			break
		}
	}
	return sum
}

// besselIe is e^-a·I_ν(a) for a ≥ 0 (+∞ gives 0).
func besselIe(nu int, a float64) float64 {
	if a < BesselAsymptoticFrom {
		return besselSeries(nu, a) * Exp(-a)
	}
	return besselExpansion(nu, a) * invSqrt2Pi / math.Sqrt(a)
}

// invSqrt2Pi is 1/√(2π): the expansion's factor taken apart from 1/√a,
// so that 2π·a does not overflow.
const invSqrt2Pi = 0.3989422804014327

// besselI is I_ν(a) for a ≥ 0: the series, or e^(a/2)·(e^(a/2)·sum/√(2πa))
// (e^a in two halves: e^(a - ½ln 2πa) would round a 700-sized exponent,
// 700 ulps), +∞ past about 713.98.
func besselI(nu int, a float64) float64 {
	switch {
	case a < BesselAsymptoticFrom:
		return besselSeries(nu, a)
	case a > BesselOverflow:
		return math.Inf(1)
	}
	h := Exp(a / 2)
	return h * (besselExpansion(nu, a) * invSqrt2Pi / math.Sqrt(a)) * h
}

// BesselI0 is I₀(x), even: 1 at 0, +∞ at ±∞ and past |x| ≈ 713.98.
func BesselI0(x float64) float64 { return besselI(0, math.Abs(x)) }

// BesselI1 is I₁(x), odd: ±0 at ±0, ±∞ at ±∞.
func BesselI1(x float64) float64 { return math.Copysign(besselI(1, math.Abs(x)), x) }

// BesselI0e is e^-|x|·I₀(x): 1 at 0, about 1/√(2π|x|) for large |x|, 0
// at ±∞.
func BesselI0e(x float64) float64 { return besselIe(0, math.Abs(x)) }

// BesselI1e is e^-|x|·I₁(x), odd; 0 at ±∞.
func BesselI1e(x float64) float64 { return math.Copysign(besselIe(1, math.Abs(x)), x) }
