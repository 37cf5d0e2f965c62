package mathx

import (
	"math"
	"math/big"
	"sync"
)

// The gamma family: Lgamma, Digamma (ψ), Polygamma (ψ⁽ⁿ⁾) and the
// Hurwitz zeta function ζ(s, q), float64, C's and SciPy's special cases.
// Digamma and Lgamma take Taylor series about the points where the
// functions vanish or turn (GammaSeries); elsewhere recurrences move
// x into those ranges without cancelling, and asymptotic series take
// large x. The series' coefficients are values of ζ computed to 192 bits
// at first use.

// Decimal values, from mpmath at 50 digits.
const (
	eulerGamma         = "0.57721566490153286060651209008240243104215933593992"
	digammaRoot        = "1.4616321449683623412626595423257213284681962040064"   // ψ's positive zero
	lgammaThreeHalves  = "-0.1207822376352452223455184457816472122518527279026"  // ln(√π/2)
	digammaThreeHalves = "0.036489973978576520559023667001244432806840395339566" // 2 - γ - 2 ln 2
)

// seriesPrec is the precision, in bits, the series' coefficients are
// computed to.
const seriesPrec = 192

func decimal(s string) *big.Float {
	f, _, err := big.ParseFloat(s, 10, seriesPrec, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	return f
}

// bernoulli returns the Bernoulli numbers B₀ ... Bₙ (B₁ = -½), by
// Σₖ C(m+1, k)·Bₖ = 0 over k ≤ m.
func bernoulli(n int) []*big.Rat {
	b := make([]*big.Rat, n+1)
	b[0] = big.NewRat(1, 1)
	for m := 1; m <= n; m++ {
		sum, binom := new(big.Rat), big.NewInt(1) // C(m+1, k)
		for k := range m {
			sum.Add(sum, new(big.Rat).Mul(new(big.Rat).SetInt(binom), b[k]))
			binom.Mul(binom, big.NewInt(int64(m+1-k)))
			binom.Quo(binom, big.NewInt(int64(k+1)))
		}
		b[m] = sum.Neg(sum.Quo(sum, big.NewRat(int64(m+1), 1)))
	}
	return b
}

// bigZeta is ζ(s, c) for an integer s ≥ 2 and c > 0 to seriesPrec bits:
// forty terms summed, then Euler and Maclaurin's tail at a = c + 40,
// a^(1-s)/(s-1) + a^-s/2 + Σⱼ B₂ⱼ/(2j)!·s(s+1)···(s+2j-2)·a^(1-s-2j), to
// j = 20 (its last terms far below 2⁻¹⁹² of the sum for the orders used,
// s ≤ 37).
func bigZeta(s int, c *big.Float, b []*big.Rat) *big.Float {
	const direct, terms = 40, 20
	f := func() *big.Float { return new(big.Float).SetPrec(seriesPrec) }
	powNeg := func(a *big.Float, e int) *big.Float { // a^-e
		p := f().SetInt64(1)
		for range e {
			p.Mul(p, a)
		}
		return p.Quo(f().SetInt64(1), p)
	}
	sum := f()
	for k := direct - 1; k >= 0; k-- {
		sum.Add(sum, powNeg(f().Add(c, f().SetInt64(int64(k))), s))
	}
	a := f().Add(c, f().SetInt64(direct))
	as := powNeg(a, s)
	sum.Add(sum, f().Quo(f().Mul(as, a), f().SetInt64(int64(s-1))))
	sum.Add(sum, f().Quo(as, f().SetInt64(2)))
	term := f().Quo(f().Mul(as, f().SetInt64(int64(s))), a) // s·a^(-s-1)
	fact := f().SetInt64(2)                                 // (2j)!
	a2 := f().Mul(a, a)
	for j := 1; j <= terms; j++ {
		bj := f().SetRat(b[2*j])
		sum.Add(sum, f().Quo(f().Mul(bj, term), fact))
		term.Mul(term, f().SetInt64(int64((s+2*j-1)*(s+2*j))))
		term.Quo(term, a2)
		fact.Mul(fact, f().SetInt64(int64((2*j+1)*(2*j+2))))
	}
	return sum
}

// Series is a Taylor expansion Σ Coef[k]·dᵏ about the center Hi + Lo, d
// = x - Hi - Lo (x - Hi exact near the center, and Lo below 2⁻⁵³ of Hi).
type Series struct {
	Hi, Lo float64
	Coef   []float64
}

// At is the series' value at x: in d = x - Hi (exact) by Horner's rule
// in two chains (polyEvenOdd), Lo's share taken to first order, Coef[0] -
// Lo·Coef[1], in the last step.
func (s Series) At(x float64) float64 {
	d := x - s.Hi
	return math.FMA(d, polyEvenOdd(d, s.Coef[1:]), s.Coef[0]-s.Lo*s.Coef[1])
}

// polyEvenOdd is Σ c[k]·zᵏ: the first two terms by Horner's rule, the
// rest as E(z²) + z·O(z²), E of their even-indexed coefficients and O of
// the odd, each by Horner's rule: two independent chains of half the
// length, so that a long series takes about half poly's latency, their
// rounding damped by z² as Horner's alone would. The GPU's kernels take
// the same steps.
func polyEvenOdd(z float64, c []float64) float64 {
	if len(c) < 4 {
		return poly(z, c)
	}
	t := c[2:]
	w := z * z
	top := (len(t) - 1) &^ 1 // the highest even index
	e, o := t[top], 0.0
	if top+1 < len(t) {
		o = t[top+1]
	}
	for i := top - 2; i >= 0; i -= 2 {
		e = math.FMA(e, w, t[i])
		o = math.FMA(o, w, t[i+1])
	}
	return math.FMA(math.FMA(math.FMA(z, o, e), z, c[1]), z, c[0])
}

// GammaTables are the series Digamma and Lgamma evaluate, each
// with the range of x it serves and its terms enough for 2⁻⁶⁰ there:
// ψ about its zero x₀ = 1.4616... ([1, 1.76)) and about 2 ([1.76,
// 2.5)); ln Γ about 1 ([0.75, 1.25)), 3/2 ([1.25, 1.75)) and 2 ([1.75,
// 2.5)). About c, ψ(c + d) = ψ(c) + Σₖ (-1)^(k+1)·ζ(k+1, c)·dᵏ and ln
// Γ(c + d) = ln Γ(c) + ψ(c)·d + Σₖ₍≥₂₎ (-1)ᵏ·ζ(k, c)/k·dᵏ.
type GammaTables struct {
	DigammaRoot, DigammaTwo          Series
	LgammaOne, LgammaHalf, LgammaTwo Series
}

// GammaSeries returns the tables, computed at the first call.
var GammaSeries = sync.OnceValue(func() *GammaTables {
	b := bernoulli(2 * 20)
	gamma := decimal(eulerGamma)
	one := new(big.Float).SetPrec(seriesPrec).SetInt64(1)
	oneMinusGamma := new(big.Float).SetPrec(seriesPrec).Sub(one, gamma)
	// series builds the expansion about c: value and slope given, then
	// the zeta terms from ζ(first, c) on, each divided by its power's
	// order where lgamma's are.
	series := func(c *big.Float, coef0, coef1 *big.Float, lgamma bool, terms int) Series {
		hi, _ := c.Float64()
		lo, _ := new(big.Float).SetPrec(seriesPrec).Sub(c, new(big.Float).SetFloat64(hi)).Float64()
		out := Series{Hi: hi, Lo: lo, Coef: make([]float64, terms+1)}
		out.Coef[0], _ = coef0.Float64()
		out.Coef[1], _ = coef1.Float64()
		for k := 2; k <= terms; k++ {
			var v float64
			if lgamma { // (-1)ᵏ·ζ(k, c)/k
				v, _ = new(big.Float).Quo(bigZeta(k, c, b), new(big.Float).SetInt64(int64(k))).Float64()
				v *= float64(1 - 2*(k%2))
			} else { // (-1)^(k+1)·ζ(k+1, c)
				v, _ = bigZeta(k+1, c, b).Float64()
				v *= float64(2*(k%2) - 1)
			}
			out.Coef[k] = v
		}
		return out
	}
	root, two := decimal(digammaRoot), new(big.Float).SetPrec(seriesPrec).SetInt64(2)
	zero := new(big.Float)
	return &GammaTables{
		DigammaRoot: series(root, zero, bigZeta(2, root, b), false, 36),
		DigammaTwo:  series(two, oneMinusGamma, bigZeta(2, two, b), false, 30),
		LgammaOne:   series(one, zero, new(big.Float).Neg(gamma), true, 30),
		LgammaHalf:  series(decimal("1.5"), decimal(lgammaThreeHalves), decimal(digammaThreeHalves), true, 22),
		LgammaTwo:   series(two, zero, oneMinusGamma, true, 30),
	}
})

// Bernoulli's numbers as float64 for the asymptotic series: DigammaTail
// are B₂ₖ/(2k) (ψ(x) ~ ln x - 1/(2x) - Σ B₂ₖ/(2k·x²ᵏ)), StirlingTail
// B₂ₖ/(2k(2k-1)) (ln Γ(x) ~ (x - ½)ln x - x + ½ln 2π + Σ
// B₂ₖ/(2k(2k-1)·x²ᵏ⁻¹)), both for k = 1..8 (below 2⁻⁵⁵ from x = 10), and
// ZetaTail B₂ⱼ/(2j)! for j = 1..12 (Euler and Maclaurin's).
var DigammaTail, StirlingTail, ZetaTail = func() (d, s, z []float64) {
	b := bernoulli(24)
	fact := big.NewRat(1, 1)
	for k := 1; k <= 12; k++ {
		b2k := b[2*k]
		fact.Mul(fact, big.NewRat(int64((2*k-1)*(2*k)), 1))
		v, _ := new(big.Rat).Quo(b2k, fact).Float64()
		z = append(z, v)
		if k <= 8 {
			v, _ = new(big.Rat).Quo(b2k, big.NewRat(int64(2*k), 1)).Float64()
			d = append(d, v)
			v, _ = new(big.Rat).Quo(b2k, big.NewRat(int64(2*k*(2*k-1)), 1)).Float64()
			s = append(s, v)
		}
	}
	return
}()

// LnPi and HalfLn2Pi are ln π and ½·ln 2π (Stirling's constant),
// correctly rounded.
const (
	LnPi      = 1.1447298858494001741434273513530587116472948129153
	HalfLn2Pi = 0.91893853320467274178032973640561763986139747363778
)

// Lgamma is ln|Γ(x)|: +∞ at 0, the negative integers and ±∞ (C's
// lgamma), NaN for NaN; within 2 ulps for x > 0, about its zeros at 1
// and 2 too (math.Lgamma errs there by hundreds: 323 ulps at 1.1929, and
// its logarithm of subnormal x by a factor on amd64). Below 0.75 by ln
// Γ(x + 1) - ln x, [2.5, 10) down to [1.5, 2.5) by ln Γ(x) = ln Γ(x - n)
// + ln((x-1)···(x-n)), the series about 1, 3/2 and 2 below 2.5
// (GammaSeries) and Stirling's series from 10; for x < 0 the reflection
// ln π - ln|sin πx| - ln Γ(1 - x), which cancels near ln|Γ|'s negative
// zeros (a few ulps of its terms there). The GPU's kernel takes the same
// steps.
func Lgamma(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case math.IsInf(x, 0):
		return math.Inf(1)
	case math.Abs(x) < 0x1p-60: // -ln|x| - γx, γx below its last place
		return -Log(math.Abs(x))
	case x < 0:
		r := x - math.Round(x)
		if r == 0 {
			return math.Inf(1)
		}
		return LnPi - Log(math.Abs(math.Sin(math.Pi*r))) - lgammaPositive(1-x)
	}
	return lgammaPositive(x)
}

// lgammaPositive is ln Γ(x) for x ≥ 2⁻⁶⁰ (+∞ included).
func lgammaPositive(x float64) float64 {
	acc := 0.0
	if x < 0.75 {
		acc, x = -Log(x), x+1
	}
	if x >= 10 {
		iy := 1 / x
		return math.FMA(x-0.5, Log(x), -x) + math.FMA(iy, poly(iy*iy, StirlingTail), HalfLn2Pi)
	}
	if x >= 2.5 { // x ≥ 0.75 here: acc is 0
		prod := 1.0
		for x >= 2.5 {
			x--
			prod *= x
		}
		acc = Log(prod)
	}
	t := GammaSeries()
	switch {
	case x < 1.25:
		return t.LgammaOne.At(x) + acc
	case x < 1.75:
		return t.LgammaHalf.At(x) + acc
	}
	return t.LgammaTwo.At(x) + acc
}

// Digamma is ψ(x) = Γ'(x)/Γ(x): ψ(±0) = ∓∞ (PyTorch's and SciPy's), NaN
// at the negative integers and -∞, +∞ at +∞. Within 2 ulps for x > 0
// (about its zero x₀ too, where the usual recurrence from large x loses
// every digit); for x < 0 by the reflection ψ(1 - x) - π/tan(πx), whose
// difference cancels near ψ's negative zeros (there the error is a few
// ulps of the terms).
func Digamma(x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, -1):
		return math.NaN()
	case x == 0:
		return math.Copysign(math.Inf(1), -x)
	case x < 0:
		if x == math.Trunc(x) {
			return math.NaN()
		}
		return digammaPositive(1-x) - piCotPi(x-math.Round(x))
	}
	return digammaPositive(x)
}

// piCotPi is π·cot(πr) for |r| ≤ ½ (r exact, the reduced argument): 1/r
// below 2⁻²⁸ (the next term, π²r/3, is below its last place; πr would be
// subnormal for subnormal r), π/tan(πr) to |r| = ¼, π·tan(π(½ - |r|))
// past it (½ - |r| exact), so that it is 0 at ±½ and accurate near them.
func piCotPi(r float64) float64 {
	a := math.Abs(r)
	switch {
	case a < 0x1p-28:
		return 1 / r
	case a > 0.25:
		return math.Pi * math.Copysign(Tan(math.Pi*(0.5-a)), r)
	}
	return math.Pi * (1 / Tan(math.Pi*r))
}

// digammaPositive is ψ(x) for x > 0 (+∞ included): x < 1 moved up by
// ψ(x) = ψ(x+1) - 1/x, [2.5, 10) down by ψ(x) = ψ(x-1) + 1/(x-1) (sums
// of one sign), [1, 2.5) by the series, and the asymptotic series from 10.
func digammaPositive(x float64) float64 {
	acc := 0.0
	if x < 1 {
		acc, x = -1/x, x+1
	}
	if x >= 10 {
		return acc + digammaLarge(x)
	}
	for x >= 2.5 {
		x--
		acc += 1 / x
	}
	t := GammaSeries()
	if x < 1.76 {
		return t.DigammaRoot.At(x) + acc
	}
	return t.DigammaTwo.At(x) + acc
}

// digammaLarge is ψ(x) for x ≥ 10 by its asymptotic series.
func digammaLarge(x float64) float64 {
	z := 1 / (x * x)
	return Log(x) - 0.5/x - z*poly(z, DigammaTail)
}

// Zeta is the Hurwitz zeta function ζ(s, q) = Σₖ₍≥₀₎ (q + k)^-s, s > 1
// (ζ(s, 1) is Riemann's): +∞ at s = 1 and at q = 0 and the negative
// integers, NaN for s < 1, for q < 0 unless s is an integer (the sum's
// terms are not real otherwise), and at q = -∞; 0 at q = +∞; q^-s at s =
// +∞. Nine terms are summed and Euler and Maclaurin's tail taken from q
// + 9 (within a few ulps for q > 0); q < 0 goes through three sums of
// positive q, ζ(s, f) + (-1)ˢ·(ζ(s, 1 - f) - ζ(s, 1 - q)) with f = q +
// ⌈-q⌉, so that no q needs more than nine terms (q in (-1, 0) as q^-s +
// ζ(s, q + 1)).
func Zeta(s, q float64) float64 {
	switch {
	case math.IsNaN(s) || math.IsNaN(q) || s < 1 || math.IsInf(q, -1):
		return math.NaN()
	case s == 1 || q <= 0 && q == math.Floor(q):
		return math.Inf(1)
	case q < 0 && (s != math.Trunc(s) || math.IsInf(s, 1)):
		return math.NaN()
	case math.IsInf(q, 1):
		return 0
	case math.IsInf(s, 1):
		return Pow(q, -s)
	case q > 0:
		return zetaPositive(s, q)
	case q > -1: // q^-s + ζ(s, q + 1): f below would round to 1 for tiny q
		return Pow(q, -s) + zetaPositive(s, q+1)
	}
	f := q + math.Ceil(-q) // exact for q < -1
	sign := 1.0
	if math.Mod(s, 2) != 0 {
		sign = -1
	}
	return zetaPositive(s, f) + sign*(zetaPositive(s, 1-f)-zetaPositive(s, 1-q))
}

// zetaDirect is how many of ζ's terms are summed before its tail.
const zetaDirect = 9

// zetaPositive is ζ(s, q) for finite s > 1 and q > 0: the tail at a = q
// + 9, a^(1-s)/(s-1) + a^-s·(½ + Σⱼ B₂ⱼ/(2j)!·s(s+1)···(s+2j-2)/a^(2j-1))
// (a^(1-s) apart, so that it does not underflow where a^-s does; the
// Bernoulli terms left out where s ≥ 2πa: they no longer fall there, and
// the whole tail is below 2⁻⁸⁰ of the sum), then the nine terms from the
// smallest.
func zetaPositive(s, q float64) float64 {
	a := q + zetaDirect
	bern, term := 0.0, s/a
	for j, c := range ZetaTail {
		bern += c * term
		term *= (s + float64(2*j+1)) / a * ((s + float64(2*j+2)) / a)
	}
	if s >= 2*math.Pi*a {
		bern = 0
	}
	sum := Pow(a, 1-s)/(s-1) + Pow(a, -s)*(0.5+bern)
	for k := zetaDirect - 1; k >= 0; k-- {
		sum += Pow(q+float64(k), -s)
	}
	return sum
}

// Polygamma is ψ⁽ⁿ⁾(x), the nth derivative of Digamma, for an integer
// n ≥ 0 (NaN otherwise): Digamma for n = 0, (-1)ⁿ⁺¹·n!·ζ(n+1, x) past
// it, (-1)ⁿ⁺¹·∞ at 0 and the negative integers (PyTorch's), NaN at -∞,
// ±0 at +∞. n! is finite to n = 170; beyond, the result is ±∞ or NaN.
func Polygamma(n, x float64) float64 {
	switch {
	case math.IsNaN(n) || math.IsNaN(x) || n < 0 || n != math.Floor(n) || math.IsInf(n, 1):
		return math.NaN()
	case n == 0:
		return Digamma(x)
	}
	sign := -1.0
	if math.Mod(n, 2) != 0 {
		sign = 1
	}
	return sign * Factorial(n) * Zeta(n+1, x)
}

// Factorial is n! rounded to float64 for an integer n ≥ 0 (+∞ past 170).
func Factorial(n float64) float64 {
	if n > 170 {
		return math.Inf(1)
	}
	return factorials()[int(n)]
}

var factorials = sync.OnceValue(func() []float64 {
	out := make([]float64, 171)
	f := big.NewInt(1)
	for n := range out {
		if n > 1 {
			f.Mul(f, big.NewInt(int64(n)))
		}
		out[n], _ = new(big.Float).SetInt(f).Float64()
	}
	return out
})
