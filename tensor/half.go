package tensor

import (
	"math"

	"github.com/x448/float16"

	"github.com/eagerflow/eagerflow/internal/plumb"
)

// Half-precision element types: BF16 (bfloat16: float32's sign and 8-bit
// exponent with 7 bits of mantissa, Google Brain's format, what TPUs and
// tensor cores train in) and F16 (IEEE 754 binary16: 5-bit exponent, 10
// bits of mantissa, subnormals). Both are stored as their 16 bits; their
// values are float32 values, and conversions from float32 round to
// nearest, ties to even, keeping NaN (quiet), infinities and signed zeros
// (and, for F16, subnormals; values beyond 65504 round to infinity).
// Conversions from float64 go through float32, as PyTorch's do.

// BF16 is a bfloat16 value: the upper 16 bits of a float32.
type BF16 uint16

// F16 is an IEEE 754 binary16 value.
type F16 uint16

// ToBF16 rounds f to the nearest bfloat16 (ties to even); NaN stays a
// (quiet) NaN of the same sign.
func ToBF16(f float32) BF16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep the sign and the top of the payload, set quiet
		return BF16(b>>16 | 0x0040)
	}
	b += 0x7fff + (b>>16)&1 // round to nearest, ties to even (carries into the exponent as it should)
	return BF16(b >> 16)
}

// Float32 returns b's value (exactly).
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// String formats b as NumPy prints a scalar: the shortest decimal that
// converts back to it.
func (b BF16) String() string { return scalarString(float64(b.Float32()), BFloat16) }

// ToF16 rounds f to the nearest binary16 value (ties to even): beyond
// 65504 to an infinity, below 2^-24 to a signed zero, subnormals kept;
// NaN stays a quiet NaN.
func ToF16(f float32) F16 {
	b := math.Float32bits(f)
	sign, abs := uint16(b>>16)&0x8000, b&0x7fffffff
	switch {
	case abs > 0x7f800000: // NaN: quiet, the top of the payload kept
		return F16(sign | 0x7e00 | uint16(abs>>13)&0x3ff)
	case abs >= 0x477ff000: // 65520 and beyond (infinity too) round to infinity
		return F16(sign | 0x7c00)
	case abs >= 0x38800000: // a normal: rebias the exponent by -112, round the mantissa's low 13 bits to even
		return F16(sign | uint16((abs+0xc8000fff+(abs>>13)&1)>>13))
	}
	// A subnormal or zero: adding 0.5 puts |f| in units of 2^-24 (0.5's
	// last place) in the low bits, rounded to nearest even by the FPU.
	return F16(sign | uint16(math.Float32bits(math.Float32frombits(abs)+0.5)-0x3f000000))
}

// Float32 returns h's value (exactly).
func (h F16) Float32() float32 { return f16Values[h] }

// f16Values is every binary16 pattern's float32 value (256 KiB: a lookup
// is what widening a float16 tensor costs).
var f16Values = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
}()

// String formats h as NumPy prints a scalar: the shortest decimal that
// converts back to it.
func (h F16) String() string { return scalarString(float64(h.Float32()), Float16) }

// roundHalf rounds f to dt, a half or 8-bit float dtype, and back.
func roundHalf(dt DType, f float32) float32 {
	switch dt {
	case BFloat16:
		return ToBF16(f).Float32()
	case Float8E4M3:
		return ToF8E4M3(f).Float32()
	case Float8E5M2:
		return ToF8E5M2(f).Float32()
	}
	return ToF16(f).Float32()
}

// floatValues returns the elements of t, of a float dtype, as float64.
func floatValues(t *Tensor) []float64 {
	switch t.dtype {
	case Float32:
		return mapSlice(toSlice[float32](t), func(x float32) float64 { return float64(x) })
	case BFloat16:
		return mapSlice(toSlice[BF16](t), func(x BF16) float64 { return float64(x.Float32()) })
	case Float16:
		return mapSlice(toSlice[F16](t), func(x F16) float64 { return float64(x.Float32()) })
	case Float8E4M3:
		return mapSlice(toSlice[F8E4M3](t), func(x F8E4M3) float64 { return float64(x.Float32()) })
	case Float8E5M2:
		return mapSlice(toSlice[F8E5M2](t), func(x F8E5M2) float64 { return float64(x.Float32()) })
	}
	return toSlice[float64](t)
}

// FromFloat32s returns a tensor of dtype dt (a float dtype, or an 8-bit
// one) and the given shape holding data converted to dt (rounded to
// nearest, ties to even, for the half and 8-bit types), on the host. It panics with an *Error if dt is not
// a float dtype or data does not fill the shape.
func FromFloat32s(dt DType, data []float32, shape ...int) *Tensor {
	switch dt {
	case Float32:
		return FromSlice(append([]float32(nil), data...), shape...)
	case Float64:
		return FromSlice(mapSlice(data, func(f float32) float64 { return float64(f) }), shape...)
	case BFloat16:
		return FromSlice(mapSlice(data, ToBF16), shape...)
	case Float16:
		return FromSlice(mapSlice(data, ToF16), shape...)
	case Float8E4M3:
		return FromSlice(mapSlice(data, ToF8E4M3), shape...)
	case Float8E5M2:
		return FromSlice(mapSlice(data, ToF8E5M2), shape...)
	}
	panicf("tensor", "FromFloat32s", ErrDType, nil, "", "%s is not a float dtype", plumb.WithArticle(dt.String()))
	return nil
}
