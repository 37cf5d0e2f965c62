package kernels

import (
	"math"

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
	for _, from := range All {
		for _, to := range All {
			if from == to {
				continue
			}
			out = append(out, elementwise1(Name("cast", string(from), string(to)), from, to, func(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
				return castOp(k, from, to, x)
			}))
		}
	}
	return out
}

func castOp(k *ptx.Kernel, from, to DType, x ptx.Reg) ptx.Reg {
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
