package mathx

import (
	"math"
	"math/big"
	"math/bits"
)

// TwoOverPiWords are the bits of 2/π after the binary point, 64 to a
// word, after one word of zeros (standing for the bits before the point,
// so a reduction's window may start before it: Tan's, and the GPU's
// sines and cosines, backend/cuda): computed here in fixed
// point from Machin's formula, π = 16·atan(1/5) - 4·atan(1/239).
var TwoOverPiWords = func() [20]uint64 {
	const frac = 64 * 19     // fraction bits of 2/π kept
	const scale = frac + 128 // π's fixed-point bits (guard bits beyond)
	pi := new(big.Int).Sub(new(big.Int).Mul(big.NewInt(16), atanInv(5, scale)), new(big.Int).Mul(big.NewInt(4), atanInv(239, scale)))
	q := new(big.Int).Quo(new(big.Int).Lsh(big.NewInt(2), frac+scale), pi) // ⌊2/π·2^frac⌋
	var w [20]uint64
	mask := new(big.Int).SetUint64(^uint64(0))
	for j := 1; j < 20; j++ {
		w[j] = new(big.Int).And(new(big.Int).Rsh(q, uint(64*(19-j))), mask).Uint64()
	}
	return w
}()

// atanInv is atan(1/n)·2^scale, truncated (its series' terms each
// truncated: a few units of the last bit off).
func atanInv(n int64, scale uint) *big.Int {
	sum, term := new(big.Int), new(big.Int).Quo(new(big.Int).Lsh(big.NewInt(1), scale), big.NewInt(n))
	n2 := big.NewInt(n * n)
	for k := int64(0); term.Sign() != 0; k++ {
		t := new(big.Int).Quo(term, big.NewInt(2*k+1))
		if k%2 == 0 {
			sum.Add(sum, t)
		} else {
			sum.Sub(sum, t)
		}
		term.Quo(term, n2)
	}
	return sum
}

// π/2 in three parts (the GPU kernels' split): A the float64 nearest,
// B and C the rest's.
const pio2A, pio2B, pio2C = 1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33

// largeArgument is where Tan's reduction takes 2/π's bits (Payne and
// Hanek's) instead of π/2 in three parts.
const largeArgument = 0x1p28

// Tan is the tangent, within 2 ulps over the whole range: x is
// reduced by its nearest multiple q of π/2 to r as a double-double (to
// about 2⁻¹⁰⁰ absolute), so that near the poles, where tan x is ±1/r
// (and math.Tan errs by up to a hundred ulps: 11 at π/2, 135 at
// 6.9e78), r keeps its digits; then sin r / cos r, or -cos r / sin r
// for odd q. tan(±0) is ±0, NaN at ±Inf and NaN.
func Tan(x float64) float64 {
	if x == 0 || math.IsNaN(x) {
		return x
	}
	if math.IsInf(x, 0) {
		return math.NaN()
	}
	var rh, rl float64
	var q uint64
	if math.Abs(x) < largeArgument {
		rh, rl, q = reduceSmall(x)
	} else {
		rh, rl, q = reduceLarge(math.Abs(x))
		if x < 0 {
			rh, rl, q = -rh, -rl, -q
		}
	}
	s, c := sinCos(rh, rl)
	if q&1 == 1 {
		return -c / s
	}
	return s / c
}

// reduceSmall is x - k·π/2 = rh + rl for k = round(x·2/π), |x| < 2²⁸: k·A
// exactly (as a product and its FMA remainder), x - k·A exactly (Sterbenz:
// the two are within a factor of 2 for k ≠ 0), the rest summed as
// double-doubles; q = k.
func reduceSmall(x float64) (rh, rl float64, q uint64) {
	k := math.RoundToEven(x * (2 / math.Pi))
	if k == 0 {
		return x, 0, 0
	}
	ph := k * pio2A
	pl := math.FMA(k, pio2A, -ph)
	t := x - ph
	bh := k * pio2B
	bl := math.FMA(k, pio2B, -bh)
	s, e1 := twoSum(t, -pl)
	s, e2 := twoSum(s, -bh)
	lo := e1 + e2 - bl - k*pio2C
	rh = s + lo
	return rh, lo - (rh - s), uint64(int64(k))
}

// twoSum is a + b as s + e exactly.
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	return s, (a - (s - bb)) + (b - bb)
}

// reduceLarge is ax·2/π mod 4 for finite ax ≥ 2²⁸, from the 192 bits of
// 2/π that matter at ax's exponent (the GPU's reduction: a 53-bit
// mantissa times three words): the quadrant q and r = f·π/2 as rh + rl,
// f the fraction in [-½, ½).
func reduceLarge(ax float64) (rh, rl float64, q uint64) {
	b := math.Float64bits(ax)
	e := b >> 52 & 2047
	mant := b&(1<<52-1) | 1<<52 // ax = mant·2^(e-1075)
	pos := e - 1013             // the window starts at 2/π's bit e - 1076, the zero word first
	idx, sh := pos>>6, uint(pos&63)
	word := func(i uint64) uint64 {
		if int(i) < len(TwoOverPiWords) {
			return TwoOverPiWords[i]
		}
		return 0
	}
	var win [3]uint64
	for j := range win { // Go's shift by 64 (sh 0) gives 0
		win[j] = word(idx+uint64(j))<<sh | word(idx+uint64(j)+1)>>(64-sh)
	}
	h2, l2 := bits.Mul64(mant, win[2])
	h1, l1 := bits.Mul64(mant, win[1])
	_, l0 := bits.Mul64(mant, win[0])
	p0 := l2
	p1, c1 := bits.Add64(h2, l1, 0)
	p2, _ := bits.Add64(h1, l0, c1)
	q = p2 >> 62
	f64 := int64(p2<<2 | p1>>62)
	next := p1<<2 | p0>>62
	if f64 < 0 {
		q++
	}
	// f = f64·2⁻⁶⁴ + next·2⁻¹²⁸ as a double-double, times π/2 (A + B).
	fh := float64(f64>>11) * 0x1p-53
	fl := float64(f64&2047)*0x1p-64 + float64(next)*0x1p-128
	ph := fh * pio2A
	pl := math.FMA(fh, pio2A, -ph) + fh*pio2B + fl*pio2A
	rh = ph + pl
	return rh, pl - (rh - ph), q
}

// sinCos is sin and cos of r = rh + rl, |r| ≤ π/4 (and a little): the
// Taylor series of rh (to r¹⁹ and r²⁰: below 2⁻⁶⁰), and rl to first
// order.
func sinCos(rh, rl float64) (s, c float64) {
	z := rh * rh
	// sin rh = rh + rh·z·(-1/3! + z/5! - ...), cos rh = 1 - z/2 + z²·(1/4! - ...).
	sp := poly(z, sinCoef[:])
	cp := poly(z, cosCoef[:])
	s = math.FMA(rh*z, sp, rh)
	c = math.FMA(z, cp, 1)
	return s + rl*c, c - rl*s
}

// poly is c[0] + z·c[1] + z²·c[2] + ... by Horner's rule.
func poly(z float64, c []float64) float64 {
	r := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		r = math.FMA(r, z, c[i])
	}
	return r
}

// sinCoef are sin's Taylor coefficients after the first, -1/3!, 1/5!,
// ..., -1/19!; cosCoef cos's after the first, -1/2!, 1/4!, ..., 1/20!.
var sinCoef, cosCoef = func() (s [9]float64, c [10]float64) {
	f, sign := 1.0, -1.0
	for n := 2; n <= 20; n++ {
		f *= float64(n)
		if n%2 == 1 {
			s[(n-3)/2] = sign / f
		} else {
			c[(n-2)/2] = sign / f
			continue
		}
		sign = -sign
	}
	return
}()
