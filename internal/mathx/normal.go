package mathx

import (
	"math"
	"math/big"
)

// The complementary error function's relatives and the standard normal
// distribution: Erfc, Erfcx = e^(x²)·erfc(x), Ndtr = Φ, LogNdtr = ln Φ
// and Ndtri = Φ⁻¹, in float64. The GPU's kernels take the same steps.

// Rational is a ratio of polynomials P(x)/Q(x), coefficients from the
// constant term up.
type Rational struct{ P, Q []float64 }

// At is P(x)/Q(x), each by Horner's rule (FMA steps, as the GPU's).
func (r Rational) At(x float64) float64 { return poly(x, r.P) / poly(x, r.Q) }

// The rational approximations of Sun's fdlibm (s_erf.c, as Go's math
// package uses them): erf(x) = x + x·ErfcSmall(x²) on [0, 0.84375];
// erf(x) = ErfcErx + ErfcOne(x - 1) on [0.84375, 1.25]; and erfc(x) =
// e^(-x² - 0.5625 + R(1/x²))/x past 1.25, R ErfcNear up to 1/0.35, then
// ErfcFar (fitted to 28, where erfc underflows; as a function of 1/x²
// it holds beyond: TestErfcxAgainstReference).
var (
	ErfcSmall = Rational{
		P: []float64{1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
			-5.77027029648944159157e-03, -2.37630166566501626084e-05},
		Q: []float64{1, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
			1.32494738004321644526e-04, -3.96022827877536812320e-06},
	}
	ErfcOne = Rational{
		P: []float64{-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
			3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
			-2.16637559486879084300e-03},
		Q: []float64{1, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
			1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02},
	}
	ErfcNear = Rational{
		P: []float64{-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
			-6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
			-8.12874355063065934246e+01, -9.81432934416914548592e+00},
		Q: []float64{1, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
			6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
			6.57024977031928170135e+00, -6.04244152148580987438e-02},
	}
	ErfcFar = Rational{
		P: []float64{-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
			-1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
			-4.83519191608651397019e+02},
		Q: []float64{1, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
			3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
			-2.24409524465858183362e+01},
	}
)

// ErfcErx is erf(1) to 32 bits (so that 1 - ErfcErx is exact); ErfcOne
// approximates erf(x) - ErfcErx.
const ErfcErx = 8.45062911510467529297e-01

// ErfcFarFrom is where ErfcFar takes over from ErfcNear (1/0.35).
const ErfcFarFrom = 1 / 0.35

// Erfc is the complementary error function 1 - erf(x), by fdlibm's
// approximations (within an ulp of math.Erfc, which evaluates them
// without FMA): 2 - erfc(-x) for x < 0; erfc underflows past 27.2. NaN
// for NaN, 0 at +∞, 2 at -∞.
func Erfc(x float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	r := erfcPositive(math.Abs(x))
	if x < 0 {
		return 2 - r
	}
	return r
}

// erfcPositive is erfc(a) for a ≥ 0: 1 - erf(a) below 0.84375 (as ½ -
// (erf(a) - ½) from ¼, so that nothing rounds before the difference),
// 1 - erf(1) - (erf(a) - erf(1)) below 1.25, and past it e^(-a² - 0.5625
// + R)/a, a² as z² + (a-z)(a+z) with z a's upper 21 bits (z² exact).
// a is held to 40 (erfc is 0 from 27.3; the parts stay finite).
func erfcPositive(a float64) float64 {
	switch {
	case a < 0.25:
		return 1 - (a + a*ErfcSmall.At(a*a))
	case a < 0.84375:
		return 0.5 - (a*ErfcSmall.At(a*a) + (a - 0.5))
	case a < 1.25:
		return (1 - ErfcErx) - ErfcOne.At(a-1)
	}
	a = math.Min(a, 40)
	z := math.Float64frombits(math.Float64bits(a) &^ (1<<32 - 1))
	return Exp(-z*z-0.5625) * Exp((z-a)*(z+a)+erfcTail(a)) / a
}

// erfcTail is R(1/x²) for x ≥ 1.25, ErfcNear's or ErfcFar's.
func erfcTail(x float64) float64 {
	r := ErfcNear
	if x >= ErfcFarFrom {
		r = ErfcFar
	}
	return r.At(1 / (x * x))
}

// ErfcTailLog is ln(x·erfc(x)) + x² for x ≥ 1.25: -0.5625 + R(1/x²).
// It is ln(x·Erfcx(x)), and tends to -ln √π as x grows.
func ErfcTailLog(x float64) float64 { return erfcTail(x) - 0.5625 }

// ExpSquare is e^(x²) with x² carried in two parts (x² = h + l exactly,
// by FMA), so that its rounding, an ulp of up to 709, does not become
// the result's relative error: e^h·(1 + l). +∞ beyond |x| ≈ 26.64.
func ExpSquare(x float64) float64 {
	x = math.Min(math.Abs(x), 40) // past 26.7 it is +∞; l stays finite
	h := x * x
	return Exp(h) * (1 + math.FMA(x, x, -h))
}

// Erfcx is the scaled complementary error function e^(x²)·erfc(x)
// (SciPy's and PyTorch's erfcx): about 1/(x√π) for large x, where erfc
// underflows. For x ≥ 1.25, e^(R(1/x²) - 0.5625)/x, erfc's own
// approximation with its e^(-x²) left out (no exponential of x² to
// round); below, ExpSquare(x)·erfc(x); for x < 0, 2·e^(x²) - Erfcx(-x),
// +∞ below about -26.63. NaN for NaN, 0 at +∞.
func Erfcx(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x >= 1.25:
		return Exp(ErfcTailLog(x)) / x
	case x >= 0:
		return ExpSquare(x) * Erfc(x)
	}
	return 2*ExpSquare(x) - Erfcx(-x)
}

// halfSqrt2Hi and halfSqrt2Lo are 1/√2 in two parts: the first rounded,
// the second the rest rounded.
var halfSqrt2Hi, halfSqrt2Lo = func() (float64, float64) {
	s := new(big.Float).SetPrec(200).Sqrt(big.NewFloat(0.5).SetPrec(200))
	hi, _ := s.Float64()
	lo, _ := s.Sub(s, big.NewFloat(hi)).Float64()
	return hi, lo
}()

// HalfSqrt2 returns 1/√2 in two parts, as Ndtr splits x/√2.
func HalfSqrt2() (hi, lo float64) { return halfSqrt2Hi, halfSqrt2Lo }

// overSqrt2 is x/√2 in two parts, zh + zl, to about 2⁻¹⁰⁵ of it.
func overSqrt2(x float64) (zh, zl float64) {
	zh = x * halfSqrt2Hi
	return zh, math.FMA(x, halfSqrt2Hi, -zh) + x*halfSqrt2Lo
}

// twoOverSqrtPi is erfc's derivative at 0, negated: 2/√π.
const twoOverSqrtPi = 1.1283791670955126

// Ndtr is the standard normal distribution function Φ(x) = erfc(-x/√2)/2.
// -x/√2 is carried in two parts and erfc corrected to first order in the
// second: erfc(zh + zl) = erfc(zh) - zl·(2/√π)·e^(-zh²). Otherwise its
// rounding, magnified 2z² times in the lower tail, would cost 500 ulps
// at x = -30. x is held to [-60, 60] (Φ is 0 and 1 past it). NaN for
// NaN.
func Ndtr(x float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	zh, zl := overSqrt2(-math.Max(math.Min(x, 60), -60))
	return (Erfc(zh) - zl*twoOverSqrtPi*expNegSquare(zh)) / 2
}

// expNegSquare is e^(-x²), x² in two parts as ExpSquare's: e^-h·(1 - l).
func expNegSquare(x float64) float64 { return expNegScaledSquare(x, 1) }

// expNegScaledSquare is e^(-a·x²) for a = 1 or ½ (a·x² exact where x² is),
// x² in two parts: e^(-a·h)·(1 - a·l). 0 past |x| ≈ 27.3/√a.
func expNegScaledSquare(x, a float64) float64 {
	x = math.Min(math.Abs(x), 40) // l stays finite
	h := x * x
	return Exp(-a*h) * (1 - a*math.FMA(x, x, -h))
}

// LogNdtr is ln Φ(x), finite wherever Φ is not 0 in exact arithmetic
// (SciPy's and PyTorch's log_ndtr): log1p(-Φ(-x)) for x > -1, and below
// -x²/2 + ln(Erfcx(-x/√2)/2), x² in two parts (both terms negative: no
// cancellation, and no underflow: ln Φ(-40) = -804.6). -∞ at -∞, 0 at
// +∞, NaN for NaN.
func LogNdtr(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > -1:
		return math.Log1p(-Ndtr(-x))
	case math.IsInf(x, -1):
		return x
	}
	h := x * x
	l := math.FMA(x, x, -h)
	if math.IsInf(h, 1) {
		l = 0
	}
	zh, _ := overSqrt2(-x)
	return (Log(Erfcx(zh)/2) - l/2) - h/2
}

// Wichura's rational approximations of the normal distribution's
// quantiles (Algorithm AS241, PPND16, Applied Statistics 37(3), 1988):
// Φ⁻¹(p) = q·NdtriCenter(0.180625 - q²), q = p - ½, for |q| ≤ 0.425;
// beyond, with r = √(-ln min(p, 1-p)), NdtriNear(r - 1.6) for r ≤ 5 and
// NdtriFar(r - 5) past it, signed as q. About 1e-16 relative.
var (
	NdtriCenter = Rational{
		P: []float64{3.3871328727963666080e0, 1.3314166789178437745e+2, 1.9715909503065514427e+3,
			1.3731693765509461125e+4, 4.5921953931549871457e+4, 6.7265770927008700853e+4,
			3.3430575583588128105e+4, 2.5090809287301226727e+3},
		Q: []float64{1, 4.2313330701600911252e+1, 6.8718700749205790830e+2, 5.3941960214247511077e+3,
			2.1213794301586595867e+4, 3.9307895800092710610e+4, 2.8729085735721942674e+4,
			5.2264952788528545610e+3},
	}
	NdtriNear = Rational{
		P: []float64{1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0,
			3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1,
			2.27238449892691845833e-2, 7.74545014278341407640e-4},
		Q: []float64{1, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1,
			1.48103976427480074590e-1, 1.51986665636164571966e-2, 5.47593808499534494600e-4,
			1.05075007164441684324e-9},
	}
	NdtriFar = Rational{
		P: []float64{6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0,
			2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
			2.71155556874348757815e-5, 2.01033439929228813265e-7},
		Q: []float64{1, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2,
			7.86869131145613259100e-4, 1.84631831751005468180e-5, 1.42151175831644588870e-7,
			2.04426310338993978564e-15},
	}
)

// Ndtri is Φ⁻¹(p), the standard normal distribution's quantile (SciPy's
// ndtri, TensorFlow's and PyTorch's): AS241 from p itself, so that the
// lower tail keeps its digits to the smallest p (Φ⁻¹(1e-300) = -37.0471);
// in the upper tail 1 - p is exact but p's own rounding limits it. -∞ at
// 0, +∞ at 1, NaN outside [0, 1] and for NaN.
func Ndtri(p float64) float64 {
	switch {
	case !(p >= 0 && p <= 1):
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	}
	q := p - 0.5
	if math.Abs(q) <= 0.425 {
		return q * NdtriCenter.At(0.180625-q*q)
	}
	r := p
	if q > 0 {
		r = 1 - p
	}
	r = math.Sqrt(-Log(r))
	var x float64
	if r <= 5 {
		x = NdtriNear.At(r - 1.6)
	} else {
		x = NdtriFar.At(r - 5)
	}
	if q < 0 {
		return -x
	}
	return x
}

// The derivatives the gradients take, each without the cancellation or
// the rounded square that its formula in ops would carry.

// ErfcDeriv is erfc'(x) = -(2/√π)·e^(-x²), x² in two parts.
func ErfcDeriv(x float64) float64 { return -twoOverSqrtPi * expNegSquare(x) }

// NdtrDeriv is Φ'(x) = φ(x) = e^(-x²/2)/√(2π), x² in two parts.
func NdtrDeriv(x float64) float64 { return expNegScaledSquare(x, 0.5) / math.Sqrt(2*math.Pi) }

// ErfcxDeriv is erfcx'(x) = 2x·erfcx(x) - 2/√π, which cancels 2x² times
// as x grows (about -1/(x²√π)). From x = 1 on, by Laplace's continued
// fraction erfcx(x) = 1/(√π·(x + K)), K = ½/(x + 1/(x + (3/2)/(x + ...))):
// erfcx'(x) = -(2/√π)·K/(x + K), no difference taken; evaluated from its
// ErfcxTerms(x)th term back (converged to an ulp). Below 1 the formula
// (it cancels two bits at most there; none for x < 0).
func ErfcxDeriv(x float64) float64 {
	if !(x >= 1) {
		return 2*x*Erfcx(x) - twoOverSqrtPi
	}
	frac := x
	for nh := float64(ErfcxTerms(x)) / 2; nh > 0.5; nh -= 0.5 {
		frac = nh/frac + x
	}
	k := 0.5 / frac
	return -twoOverSqrtPi * (k / (x + k))
}

// ErfcxTerms is how many terms of the continued fraction ErfcxDeriv takes
// at x ≥ 1: 200 below 2, 60 from there (each to an ulp).
func ErfcxTerms(x float64) int {
	if x < 2 {
		return 200
	}
	return 60
}

// NdtriDeriv is (Φ⁻¹)'(p) as a function of y = Φ⁻¹(p): 1/φ(y) =
// √(2π)·e^(y²/2), y² in two parts (e^(h/2)·(1 + l/2)); +∞ past |y| ≈
// 37.5. Its own derivative in y is y·NdtriDeriv(y), so that a second
// derivative multiplies, never divides by φ² (which underflows at y =
// -30: 1/φ² is ∞ where the product it belongs to is finite).
func NdtriDeriv(y float64) float64 {
	a := math.Min(math.Abs(y), 40)
	h := a * a
	return Exp(h/2) * (1 + math.FMA(a, a, -h)/2) * math.Sqrt(2*math.Pi)
}

// LogNdtrDeriv is (ln Φ)'(x) = φ(x)/Φ(x): above 0 the quotient (Φ near 1,
// φ from x² in two parts); below, √(2/π)/Erfcx(-x/√2), where neither
// underflows (the quotient's terms do past x ≈ -38, and -x/√2 rounded
// costs Erfcx only its own rounding). About -x toward -∞, 0 at +∞.
func LogNdtrDeriv(x float64) float64 {
	if x > 0 {
		return NdtrDeriv(x) / Ndtr(x)
	}
	zh, _ := overSqrt2(-x)
	return math.Sqrt(2/math.Pi) / Erfcx(zh)
}
