package tensor

import "math"

// The 8-bit floats of the OCP 8-bit floating point specification (OFP8,
// 2023), which Hopper's tensor cores multiply: F8E4M3 (E4M3: 4 exponent
// bits of bias 7, 3 of mantissa; no infinities, S.1111.111 the NaN;
// largest 448) for weights and activations, F8E5M2 (E5M2: 5 of bias 15, 2
// of mantissa; infinities and NaNs as binary16; largest 57344) for
// gradients. Both have subnormals. Conversions from float32 round to
// nearest, ties to even, and saturate, as PTX's cvt.satfinite does: a
// value beyond the largest finite one, infinities included, becomes that
// largest value of its sign; NaN stays NaN.

// F8E4M3 is an OCP E4M3 value.
type F8E4M3 uint8

// F8E5M2 is an OCP E5M2 value.
type F8E5M2 uint8

// f8Format describes an 8-bit float: mantissa bits, exponent bias, the
// code of the largest finite magnitude and of the NaN it converts to.
type f8Format struct {
	mant, bias int
	max, nan   uint8
}

var (
	e4m3 = f8Format{mant: 3, bias: 7, max: 0x7e, nan: 0x7f}
	e5m2 = f8Format{mant: 2, bias: 15, max: 0x7b, nan: 0x7e}
)

// magnitude is the value of code c (the sign bit clear; not a NaN or an
// infinity).
func (f f8Format) magnitude(c uint8) float64 {
	e, m := int(c>>f.mant), float64(c&(1<<f.mant-1))
	if e == 0 { // subnormal: m·2^(1-bias-mant)
		return math.Ldexp(m, 1-f.bias-f.mant)
	}
	return math.Ldexp(1+m/float64(int(1)<<f.mant), e-f.bias)
}

// encode rounds x to the nearest value of f (ties to even), saturating.
func (f f8Format) encode(x float32) uint8 {
	var sign uint8
	if math.Signbit(float64(x)) {
		sign = 0x80
	}
	if x != x {
		return sign | f.nan
	}
	a := math.Abs(float64(x))
	if a >= f.magnitude(f.max) { // infinities too
		return sign | f.max
	}
	if a == 0 {
		return sign
	}
	_, e := math.Frexp(a) // a in [2^(e-1), 2^e)
	e = max(e-1, 1-f.bias)
	quantum := math.Ldexp(1, e-f.mant)
	r := math.RoundToEven(a/quantum) * quantum
	if r >= f.magnitude(f.max) {
		return sign | f.max
	}
	if r < math.Ldexp(1, 1-f.bias) { // subnormal (or the least normal, reached by rounding: the same code)
		return sign | uint8(r/math.Ldexp(1, 1-f.bias-f.mant))
	}
	frac, er := math.Frexp(r) // r = frac·2^er, frac in [0.5, 1)
	return sign | uint8(er-1+f.bias)<<f.mant | uint8((2*frac-1)*float64(int(1)<<f.mant))
}

// decode is code c's value as a float32 (exactly).
func (f f8Format) decode(c uint8) float32 {
	mag := c & 0x7f
	v := float32(f.magnitude(mag))
	switch {
	case f == e4m3 && mag == 0x7f, f == e5m2 && mag > 0x7c:
		v = float32(math.NaN())
	case f == e5m2 && mag == 0x7c:
		v = float32(math.Inf(1))
	}
	if c&0x80 != 0 {
		v = -v
	}
	return v
}

// The values of every code, for conversions to float32.
var e4m3Values, e5m2Values = f8Table(e4m3), f8Table(e5m2)

func f8Table(f f8Format) (t [256]float32) {
	for c := range t {
		t[c] = f.decode(uint8(c))
	}
	return t
}

// ToF8E4M3 rounds f to the nearest E4M3 value (ties to even), saturating
// at ±448; NaN stays NaN.
func ToF8E4M3(f float32) F8E4M3 { return F8E4M3(e4m3.encode(f)) }

// Float32 returns v's value (exactly).
func (v F8E4M3) Float32() float32 { return e4m3Values[v] }

// String formats v as NumPy prints a scalar: the shortest decimal that
// converts back to it.
func (v F8E4M3) String() string { return scalarString(float64(v.Float32()), Float8E4M3) }

// ToF8E5M2 rounds f to the nearest E5M2 value (ties to even), saturating
// at ±57344; NaN stays NaN.
func ToF8E5M2(f float32) F8E5M2 { return F8E5M2(e5m2.encode(f)) }

// Float32 returns v's value (exactly).
func (v F8E5M2) Float32() float32 { return e5m2Values[v] }

// String formats v as NumPy prints a scalar: the shortest decimal that
// converts back to it.
func (v F8E5M2) String() string { return scalarString(float64(v.Float32()), Float8E5M2) }
