// Package mathx holds float64 functions that package math gets wrong,
// corrected: on amd64 (Go 1.26) math.Exp overflows to +Inf from x ≈
// 709.436 on although e^x is finite up to 709.7827, and math.Log of a
// subnormal number is off by up to 35 (its assembly takes the exponent
// field as is); everywhere math.Pow errs by hundreds of ulps where
// |y·ln x| is large, math.Tan by as many near its poles and for large
// arguments, math.Log10 misses the powers of 10, math.Sinh and math.Cosh
// overflow early, and math.Asin and math.Acos cancel near ±1.
package mathx

import "math"

// overflow is the largest x whose e^x is finite.
const overflow = 7.09782712893383973096e+02

// SeluScale and SeluAlpha are SELU's λ and α, the self-normalizing
// constants (Klambauer et al. 2017), as Keras and PyTorch take them.
const SeluScale, SeluAlpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717

// Exp is e^x, finite up to x = 709.7827 as it should be.
func Exp(x float64) float64 {
	if x > 709 && x <= overflow {
		return math.Exp(x-1) * math.E
	}
	return math.Exp(x)
}

// Log is the natural logarithm, right for subnormal x too.
func Log(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}

// Pow is x**y with math.Pow's special cases (C99's: Pow(x, ±0) = 1,
// Pow(1, y) = 1, NaN in, NaN out, zeros and infinities as the standard
// says) and about one unit in the last place elsewhere: math.Pow takes
// x**frac(y) as Exp(frac·Log(x)) and the integer part by squarings, so its
// error grows with |y·log x| (190 ulps at 4.8e178**-0.447) and it is off
// by a factor for subnormal x (its Log on amd64). Here log x is computed
// to about 2⁻⁶³ as a double-double, times y exactly (FMA), and e^t·(1 +
// the low part).
func Pow(x, y float64) float64 {
	switch {
	case y == 0 || x == 1:
		return 1
	case y == 1:
		return x
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == 0 || math.IsInf(x, 0) || math.IsInf(y, 0):
		return math.Pow(x, y)
	case y == 2:
		return x * x
	case y == 0.5 && x > 0:
		return math.Sqrt(x)
	case y == -1:
		return 1 / x
	}
	neg := false
	if x < 0 {
		yi, yf := math.Modf(y)
		if yf != 0 {
			return math.NaN() // a negative base's non-integer power
		}
		neg = math.Abs(yi) < 1<<53 && math.Mod(yi, 2) != 0
		x = -x
	}
	hi, lo := logDD(x)
	th := y * hi
	tl := math.FMA(y, hi, -th) + y*lo
	var r float64
	switch {
	case th > overflow+1:
		r = math.Inf(1)
	case th < -746:
		r = 0
	default:
		r = Exp(th)
		if !math.IsInf(r, 1) { // ∞·tl + ∞ would be NaN for a negative tl
			r = math.FMA(r, tl, r)
		}
	}
	if neg {
		return -r
	}
	return r
}

// ln2Hi is ln 2 to 32 bits (k·ln2Hi is exact for |k| < 2²¹); ln2Lo the
// rest, rounded.
const (
	ln2Hi = 0x1.62e42fefp-1
	ln2Lo = math.Ln2 - ln2Hi
)

// twoThirds is 2/3 as a double-double.
var twoThirdsHi, twoThirdsLo = func() (float64, float64) {
	hi := 2.0 / 3
	return hi, math.FMA(-3, hi, 2) / 3
}()

// logDD is ln x for finite x > 0 as hi + lo, to about 2⁻⁶³ relative: x
// = 2^k·m with m in [√½, √2), ln m = 2·atanh(s), s = (m-1)/(m+1) (|s| ≤
// 0.172), 2s and the cubic term as double-doubles and the series' rest
// (2s⁵/5 + ..., below 6e-5 of the whole) in float64.
func logDD(x float64) (hi, lo float64) {
	m, k := math.Frexp(x) // m in [½, 1)
	if m < math.Sqrt2/2 {
		m, k = 2*m, k-1
	}
	f := m - 1 // exact (Sterbenz)
	// s = f/(2 + f): the sum's rounding kept, s's remainder by FMA.
	d := 2 + f
	dl := (2 - d) + f
	s := f / d
	sl := (math.FMA(-s, d, f) - s*dl) / d
	z := s * s
	// The series' rest, 2s³·(1/3 + s²/5 + ...) less its first term.
	rest := z * (2.0/5 + z*(2.0/7+z*(2.0/9+z*(2.0/11+z*(2.0/13+z*(2.0/15+z*(2.0/17+z*(2.0/19+z*(2.0/21+z*(2.0/23))))))))))
	c := twoThirdsHi + rest // (2/3 + rest) as c + cl
	cl := (twoThirdsHi - c) + rest + twoThirdsLo
	zl := math.FMA(s, s, -z)
	cube := z * s // s³ as cube + cubel
	cubel := math.FMA(z, s, -cube) + zl*s + 3*z*sl
	t := cube * c // s³·(2/3 + rest) as t + tl
	tl := math.FMA(cube, c, -t) + cube*cl + cubel*c
	// ln m = 2s + 2sl + t + tl; then k·ln 2.
	a, b := 2*s, t
	h1 := a + b
	e1 := b - (h1 - a) // |a| ≥ |b|
	low := e1 + 2*sl + tl
	kf := float64(k)
	a2 := kf * ln2Hi
	h2 := a2 + h1
	var e2 float64
	if math.Abs(a2) >= math.Abs(h1) {
		e2 = h1 - (h2 - a2)
	} else {
		e2 = a2 - (h2 - h1)
	}
	low += e2 + kf*ln2Lo
	hi = h2 + low
	return hi, low - (hi - h2)
}

// Log2 and Log10 are the base-2 and base-10 logarithms, within about half
// an ulp (ln x as a double-double times 1/ln b as one): exact where the
// result is an integer (a power of the base), which math.Log10's ln x
// times 1/ln 10 misses (math.Log10(1000) is 2.9999999999999996). Their
// special cases are math.Log's: -Inf at ±0, NaN below 0 and for NaN,
// +Inf at +Inf.
func Log2(x float64) float64 { return logBase(x, InvLn2Hi, InvLn2Lo) }

// Log10 is the base-10 logarithm (see Log2).
func Log10(x float64) float64 { return logBase(x, InvLn10Hi, InvLn10Lo) }

// 1/ln 2 and 1/ln 10 as double-doubles (hi + lo, lo the rest of the
// 300-bit value past hi, rounded; TestInverseLogConstants checks them),
// for the GPU's kernels too.
const (
	InvLn2Hi, InvLn2Lo   = 1.4426950408889634, 2.0355273740931033e-17
	InvLn10Hi, InvLn10Lo = 0.4342944819032518, 1.098319650216765e-17
)

func logBase(x, invHi, invLo float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	}
	hi, lo := logDD(x)
	p := hi * invHi
	return p + (math.FMA(hi, invHi, -p) + hi*invLo + lo*invHi)
}

// Sinh and Cosh are the hyperbolic sine and cosine, finite up to |x| ≈
// 710.4758 as they should be (math.Sinh and math.Cosh take e^x/2, whose
// e^x overflows from 709.78, and from 709.44 on amd64): past 709 as
// (e^(x/2)·½)·e^(x/2).
func Sinh(x float64) float64 {
	a := math.Abs(x)
	if a > 21 {
		return math.Copysign(halfExp(a), x)
	}
	return math.Sinh(x)
}

// Cosh is the hyperbolic cosine (see Sinh).
func Cosh(x float64) float64 {
	a := math.Abs(x)
	if a > 21 {
		return halfExp(a)
	}
	return math.Cosh(x)
}

// halfExp is e^a/2 for a > 21 (where e^-a is below half an ulp of it).
func halfExp(a float64) float64 {
	if a > 709 {
		e := Exp(a / 2)
		return e * 0.5 * e
	}
	return Exp(a) * 0.5
}

// Asin and Acos are arcsine and arccosine as atan2(x, √((1-x)(1+x)))
// and atan2(√((1-x)(1+x)), x): (1-x) is exact near ±1, where 1 - x²
// (math.Asin's and math.Acos's) cancels.
func Asin(x float64) float64 { return math.Atan2(x, math.Sqrt((1-x)*(1+x))) }

// Acos is the arccosine (see Asin).
func Acos(x float64) float64 { return math.Atan2(math.Sqrt((1-x)*(1+x)), x) }

// LogAddExp is log(e^a + e^b): max(a, b) + log1p(e^-|a-b|), a + ln 2
// where a = b (so ±∞ with itself is ±∞, not NaN).
func LogAddExp(a, b float64) float64 {
	if a == b {
		return a + math.Ln2
	}
	return math.Max(a, b) + math.Log1p(math.Exp(-math.Abs(a-b)))
}
