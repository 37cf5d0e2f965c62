package kernels

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Cast kernels cast_<from>_<to> (out, x, n) convert as the CPU's Go
// conversions do on amd64: floats to integers truncate toward zero, and
// where the value does not fit (or is NaN) give the x86 "integer
// indefinite" (the lowest value of 32 or 64 bits; a byte takes the low
// byte of the 64-bit conversion); numbers to bool are x != 0; bools to
// numbers 0 or 1; integers narrow by keeping their low bits.

func castKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	every := slices.Concat(All, Halves, Floats8)
	for _, from := range every {
		for _, to := range every {
			if from == to {
				continue
			}
			out = append(out, elementwise1(Name("cast", string(from), string(to)), from, to, false, func(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
				return castOp(k, from, to, x)
			}))
		}
	}
	return out
}

func castOp(k *ptx.Kernel, from, to DType, x ptx.Reg) ptx.Reg {
	// The narrow floats go through float32, as the CPU's conversions do.
	switch {
	case from.narrow():
		f := halfToF32(k, from, x)
		if to == F32 {
			return f
		}
		return castOp(k, F32, to, f)
	case to.narrow():
		f := x
		if from != F32 {
			f = castOp(k, from, F32, x)
		}
		return f32ToHalf(k, to, f)
	}
	ft, tt := from.reg(), to.reg()
	if to == Bool {
		p := k.Reg(ptx.Pred)
		if from.float() {
			k.Op("setp.neu.%s %s, %s, %s", ft, p, x, ptx.Imm(ft, 0)) // NaN is nonzero
		} else {
			k.Op("setp.ne.%s %s, %s, 0", itype(from), p, x)
		}
		r := k.Reg(ptx.U32)
		k.Op("selp.u32 %s, 1, 0, %s", r, p)
		return r
	}
	if from == Bool || from == U8 {
		// A byte (0 or 1 for a bool) as an unsigned 32-bit integer.
		return fromU32(k, x, to)
	}
	r := k.Reg(tt)
	switch {
	case from.float() && to.float():
		if to == F32 {
			k.Op("cvt.rn.f32.f64 %s, %s", r, x)
		} else {
			k.Op("cvt.f64.f32 %s, %s", r, x)
		}
	case from.float():
		floatToInt(k, from, to, x, r)
	case to.float():
		k.Op("cvt.rn.%s.%s %s, %s", tt, itype(from), r, x)
	default: // integer to integer
		switch {
		case to == U8:
			if from == S64 {
				k.Op("cvt.u32.u64 %s, %s", r, x)
			} else {
				k.Op("mov.b32 %s, %s", r, x)
			}
			k.Op("and.b32 %s, %s, 255", r, r)
		case from == S32 && to == S64:
			k.Op("cvt.s64.s32 %s, %s", r, x)
		case from == S64 && to == S32:
			k.Op("cvt.u32.u64 %s, %s", r, x)
		}
	}
	return r
}

// fromU32 converts an unsigned 32-bit value (a byte) to dtype to.
func fromU32(k *ptx.Kernel, x ptx.Reg, to DType) ptx.Reg {
	r := k.Reg(to.reg())
	switch to {
	case F32, F64:
		k.Op("cvt.rn.%s.u32 %s, %s", to.reg(), r, x)
	case S64:
		k.Op("cvt.u64.u32 %s, %s", r, x)
	default: // s32, u8
		k.Op("mov.b32 %s, %s", r, x)
	}
	return r
}

// floatToInt truncates x toward zero into r (dtype to), x86-style where
// it does not fit.
func floatToInt(k *ptx.Kernel, from, to DType, x, r ptx.Reg) {
	ft := from.reg()
	wide := k.Reg(ptx.S64)
	k.Op("cvt.rzi.s64.%s %s, %s", ft, wide, x)
	p := k.Reg(ptx.Pred)
	a := k.Reg(ft)
	k.Op("abs.%s %s, %s", ft, a, x)
	// 64 bits: NaN or |x| >= 2^63 give the lowest int64.
	k.Op("setp.geu.%s %s, %s, %s", ft, p, a, ptx.Imm(ft, math.Ldexp(1, 63)))
	k.Op("selp.s64 %s, %s, %s, %s", wide, ptx.Imm(ptx.S64, math.MinInt64), wide, p)
	switch to {
	case S64:
		k.Op("mov.b64 %s, %s", r, wide)
	case U8:
		k.Op("cvt.u32.u64 %s, %s", r, wide)
		k.Op("and.b32 %s, %s, 255", r, r)
	case S32:
		// 32 bits: out of [-2^31, 2^31) (NaN included) gives the lowest int32.
		lo, hi := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("cvt.u32.u64 %s, %s", r, wide)
		k.Op("setp.lt.s64 %s, %s, %d", lo, wide, int64(math.MinInt32))
		k.Op("setp.gt.s64 %s, %s, %d", hi, wide, int64(math.MaxInt32))
		k.Op("or.pred %s, %s, %s", lo, lo, hi)
		k.Op("or.pred %s, %s, %s", lo, lo, p)
		k.Op("selp.s32 %s, %d, %s, %s", r, int64(math.MinInt32), r, lo)
	}
}

// narrowFormat is a float narrower than float32 as the conversions see
// it: its bits, mantissa bits and exponent bias; the code conversions clamp
// to (binary16's infinity; the 8-bit floats' largest finite value, which
// saturates as PTX's cvt.satfinite does); its NaN code, and whether a
// NaN keeps the top of its payload (binary16).
type narrowFormat struct {
	bits, mant, bias int
	limit, nan       uint32
	payload          bool
	// e4m3: no infinities, only S.1111.111 is NaN.
	e4m3 bool
}

var narrowFormats = map[DType]narrowFormat{
	F16:    {bits: 16, mant: 10, bias: 15, limit: 0x7c00, nan: 0x7e00, payload: true},
	F8E4M3: {bits: 8, mant: 3, bias: 7, limit: 0x7e, nan: 0x7f, e4m3: true},
	F8E5M2: {bits: 8, mant: 2, bias: 15, limit: 0x7b, nan: 0x7e},
}

// halfToF32 is the float32 value (exactly) of the narrow float of dtype d
// in the low bits of x, by integer arithmetic: bfloat16 is float32's upper
// half; the others move their exponent (rebiased) and mantissa into
// place, infinities and NaN keep their mantissa, subnormals are
// mantissa·2^(1-bias-mant).
func halfToF32(k *ptx.Kernel, d DType, x ptx.Reg) ptx.Reg {
	if d == F16 {
		return f16ToF32(k, x)
	}
	bits, f := k.Reg(ptx.U32), k.Reg(ptx.F32)
	if d == BF16 {
		k.Op("shl.b32 %s, %s, 16", bits, x)
		k.Op("mov.b32 %s, %s", f, bits)
		return f
	}
	nf := narrowFormats[d]
	emax := uint32(1)<<(nf.bits-1-nf.mant) - 1
	sign, exp, mant := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("shl.b32 %s, %s, %d", sign, x, 32-nf.bits)
	k.Op("and.b32 %s, %s, 2147483648", sign, sign)
	k.Op("shr.b32 %s, %s, %d", exp, x, nf.mant)
	k.Op("and.b32 %s, %s, %d", exp, exp, emax)
	k.Op("and.b32 %s, %s, %d", mant, x, uint32(1)<<nf.mant-1)
	normal, special, sub := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("add.u32 %s, %s, %d", normal, exp, 127-nf.bias)
	k.Op("shl.b32 %s, %s, 23", normal, normal)
	m := k.Reg(ptx.U32)
	k.Op("shl.b32 %s, %s, %d", m, mant, 23-nf.mant)
	k.Op("or.b32 %s, %s, %s", normal, normal, m)
	k.Op("or.b32 %s, %s, 2139095040", special, m) // 0x7f800000: an infinity, or a NaN keeping its mantissa
	sf := k.Reg(ptx.F32)
	k.Op("cvt.rn.f32.u32 %s, %s", sf, mant)
	k.Op("mul.rn.f32 %s, %s, 0f%08X", sf, sf, math.Float32bits(float32(math.Ldexp(1, 1-nf.bias-nf.mant))))
	k.Op("mov.b32 %s, %s", sub, sf)
	p := k.Reg(ptx.Pred)
	if nf.e4m3 { // S.1111.111 alone is NaN
		low := k.Reg(ptx.U32)
		k.Op("and.b32 %s, %s, 127", low, x)
		k.Op("setp.eq.u32 %s, %s, 127", p, low)
		k.Op("selp.b32 %s, 2143289344, %s, %s", bits, normal, p) // 0x7fc00000
	} else {
		k.Op("setp.eq.u32 %s, %s, %d", p, exp, emax)
		k.Op("selp.b32 %s, %s, %s, %s", bits, special, normal, p)
	}
	k.Op("setp.eq.u32 %s, %s, 0", p, exp)
	k.Op("selp.b32 %s, %s, %s, %s", bits, sub, bits, p)
	k.Op("or.b32 %s, %s, %s", bits, bits, sign)
	k.Op("mov.b32 %s, %s", f, bits)
	return f
}

// f32ToHalf rounds the float32 f to narrow dtype d (to nearest, ties to
// even) by integer arithmetic, in the low bits of the result: as
// tensor.ToBF16, ToF16, ToF8E4M3 and ToF8E5M2 (NaN stays a NaN; overflow
// is binary16's infinity, or the 8-bit floats' largest value of its
// sign; subnormals kept).
func f32ToHalf(k *ptx.Kernel, d DType, f ptx.Reg) ptx.Reg {
	u, r := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.b32 %s, %s", u, f)
	abs, nan := k.Reg(ptx.U32), k.Reg(ptx.Pred)
	k.Op("and.b32 %s, %s, 2147483647", abs, u)
	k.Op("setp.gt.u32 %s, %s, 2139095040", nan, abs) // above 0x7f800000
	if d == F16 {
		return f32ToF16(k, f, u, nan)
	}
	if d == BF16 {
		lsb, q := k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("shr.b32 %s, %s, 16", lsb, u)
		k.Op("and.b32 %s, %s, 1", lsb, lsb)
		k.Op("add.u32 %s, %s, 32767", r, u)
		k.Op("add.u32 %s, %s, %s", r, r, lsb)
		k.Op("shr.b32 %s, %s, 16", r, r)
		k.Op("shr.b32 %s, %s, 16", q, u)
		k.Op("or.b32 %s, %s, 64", q, q) // quiet NaN
		k.Op("selp.b32 %s, %s, %s, %s", r, q, r, nan)
		return r
	}
	nf := narrowFormats[d]
	sign, e, coef := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("shr.b32 %s, %s, %d", sign, u, 32-nf.bits)
	k.Op("and.b32 %s, %s, %d", sign, sign, uint32(1)<<(nf.bits-1))
	k.Op("shr.b32 %s, %s, 23", e, abs) // the biased exponent, 0-255
	k.Op("and.b32 %s, %s, 8388607", coef, u)
	// roundUp is 1 where the bits of c below round bit rb round c >> log2(2 rb)
	// up to nearest, ties to even: rb set, and a lower bit or the bit above
	// it set (c & (3 rb - 1) nonzero); else 0.
	roundUp := func(c, rb ptx.Reg) ptx.Reg {
		t, p, q := k.Reg(ptx.U32), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("and.b32 %s, %s, %s", t, c, rb)
		k.Op("setp.ne.u32 %s, %s, 0", p, t)
		k.Op("mul.lo.u32 %s, %s, 3", t, rb)
		k.Op("sub.u32 %s, %s, 1", t, t)
		k.Op("and.b32 %s, %s, %s", t, c, t)
		k.Op("setp.ne.u32 %s, %s, 0", q, t)
		k.Op("and.pred %s, %s, %s", p, p, q)
		k.Op("selp.u32 %s, 1, 0, %s", t, p)
		return t
	}
	constant := func(v uint32) ptx.Reg {
		r := k.Reg(ptx.U32)
		k.Op("mov.u32 %s, %d", r, v)
		return r
	}
	// Normal: exponent rebiased, mantissa cut, rounded (a carry moves into
	// the exponent, as it should).
	normal, t := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("sub.u32 %s, %s, %d", normal, e, 127-nf.bias)
	k.Op("shl.b32 %s, %s, %d", normal, normal, nf.mant)
	k.Op("shr.b32 %s, %s, %d", t, coef, 23-nf.mant)
	k.Op("or.b32 %s, %s, %s", normal, normal, t)
	k.Op("add.u32 %s, %s, %s", normal, normal, roundUp(coef, constant(1<<(22-nf.mant))))
	// Subnormal (or zero): the mantissa with its leading one shifted by
	// 151 - bias - mant - e (at most 31), rounded alike.
	sub, c, shift, rb := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("or.b32 %s, %s, 8388608", c, coef)
	k.Op("sub.u32 %s, %s, %s", shift, constant(uint32(151-nf.bias-nf.mant)), e)
	k.Op("min.u32 %s, %s, 31", shift, shift)
	k.Op("shr.b32 %s, %s, %s", sub, c, shift)
	k.Op("sub.u32 %s, %s, 1", t, shift)
	k.Op("shl.b32 %s, %s, %s", rb, constant(1), t)
	k.Op("add.u32 %s, %s, %s", sub, sub, roundUp(c, rb))
	p := k.Reg(ptx.Pred)
	// Choose by the exponent: subnormal below the least normal's, else
	// normal; clamped at the limit (infinity or the largest value: codes
	// rise with magnitudes), NaN last.
	k.Op("setp.lt.u32 %s, %s, %d", p, e, 128-nf.bias)
	k.Op("selp.b32 %s, %s, %s, %s", r, sub, normal, p)
	k.Op("min.u32 %s, %s, %d", r, r, nf.limit) // the normal code keeps rising past the format's bits: no wrap in 32
	nanBits := constant(nf.nan)
	if nf.payload {
		k.Op("shr.b32 %s, %s, %d", t, coef, 23-nf.mant)
		k.Op("or.b32 %s, %s, %s", nanBits, nanBits, t)
	}
	k.Op("selp.b32 %s, %s, %s, %s", r, nanBits, r, nan)
	k.Op("or.b32 %s, %s, %s", r, r, sign)
	return r
}

// f16ToF32 widens the float16 in the low bits of x by the hardware's
// conversion (exact), a NaN given the bits the host's widening (F16C's)
// gives it: its sign, quiet, its mantissa shifted up; the hardware's
// conversion need not keep them.
func f16ToF32(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
	h, f := k.Reg(ptx.B16), k.Reg(ptx.F32)
	k.Op("cvt.u16.u32 %s, %s", h, x)
	k.Op("cvt.f32.f16 %s, %s", f, h)
	abs, nan, m, sign := k.Reg(ptx.U32), k.Reg(ptx.Pred), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("and.b32 %s, %s, 32767", abs, x)
	k.Op("setp.gt.u32 %s, %s, 31744", nan, abs) // above 0x7c00
	k.Op("and.b32 %s, %s, 1023", m, x)
	k.Op("shl.b32 %s, %s, 13", m, m)
	k.Op("and.b32 %s, %s, 32768", sign, x)
	k.Op("shl.b32 %s, %s, 16", sign, sign)
	k.Op("or.b32 %s, %s, %s", m, m, sign)
	k.Op("or.b32 %s, %s, 2143289344", m, m) // 0x7fc00000: quiet
	bits := k.Reg(ptx.U32)
	k.Op("mov.b32 %s, %s", bits, f)
	k.Op("selp.b32 %s, %s, %s, %s", bits, m, bits, nan)
	k.Op("mov.b32 %s, %s", f, bits)
	return f
}

// f32ToF16 rounds the float32 f (of bits u) to float16 by the hardware's
// conversion (to nearest, ties to even, subnormals kept, beyond 65504 an
// infinity), in the low bits of the result; where nan (u a NaN) it is the
// NaN tensor.ToF16 makes: quiet, the top of the payload kept.
func f32ToF16(k *ptx.Kernel, f, u, nan ptx.Reg) ptx.Reg {
	h, r := k.Reg(ptx.B16), k.Reg(ptx.U32)
	k.Op("cvt.rn.f16.f32 %s, %s", h, f)
	k.Op("cvt.u32.u16 %s, %s", r, h)
	q, sign := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("shr.b32 %s, %s, 13", q, u)
	k.Op("and.b32 %s, %s, 1023", q, q)
	k.Op("or.b32 %s, %s, 32256", q, q) // 0x7e00: quiet
	k.Op("shr.b32 %s, %s, 16", sign, u)
	k.Op("and.b32 %s, %s, 32768", sign, sign)
	k.Op("or.b32 %s, %s, %s", q, q, sign)
	k.Op("selp.b32 %s, %s, %s, %s", r, q, r, nan)
	return r
}
