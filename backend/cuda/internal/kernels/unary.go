package kernels

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Unary kernels compute out[i] = f(x[i]) over n elements (out, x, n), as
// the CPU does: sign keeps 0, -0 and NaN; relu gives +0 for -0 and keeps
// NaN; rsqrt is 1/sqrt (both correctly rounded, so bitwise the CPU's);
// round halves away from zero (XLA's Round); isfinite writes a bool; not
// negates a bool.

// UnaryOps lists the ops per dtype.
func UnaryOps(d DType) []string {
	switch {
	case d == Bool:
		return []string{"not"}
	case d.float():
		return slices.Concat([]string{"neg", "abs", "sign", "square", "relu", "sqrt", "rsqrt", "ceil", "floor", "round", "isfinite"}, MathOps, UnitOps)
	}
	return []string{"neg", "abs", "sign", "square", "relu"}
}

func unaryKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(All, Halves) {
		cd := d.Compute()
		for _, op := range UnaryOps(cd) {
			res := d
			if op == "isfinite" {
				res = Bool
			}
			out = append(out, elementwise1(Name(op, string(d)), d, res, slices.Contains(LongOps, op), func(k *ptx.Kernel, x ptx.Reg) ptx.Reg {
				return fromCompute(k, res, unaryOp(k, op, cd, toCompute(k, d, x)))
			}))
		}
	}
	return out
}

// elementwise1 writes a one-input elementwise kernel (one element a
// thread where long).
func elementwise1(name string, in, res DType, long bool, f func(k *ptx.Kernel, x ptx.Reg) ptx.Reg) *ptx.Kernel {
	k := ptx.NewKernel(name)
	o, a := k.ParamPtr("out"), k.ParamPtr("x")
	n := k.Param("n", ptx.U64)
	elementwise(k, n, in, res, long, []ptx.Reg{a}, o, func(xs []ptx.Reg) ptx.Reg { return f(k, xs[0]) })
	return k
}

func unaryOp(k *ptx.Kernel, op string, d DType, x ptx.Reg) ptx.Reg {
	t := d.reg()
	r := k.Reg(t)
	p := k.Reg(ptx.Pred)
	if d == Bool {
		k.Op("setp.eq.u32 %s, %s, 0", p, x)
		k.Op("selp.u32 %s, 1, 0, %s", r, p)
		return r
	}
	if d.float() {
		if slices.Contains(UnitOps, op) {
			return unitOp(k, op, d, x)
		}
		zero, one := ptx.Imm(t, 0), ptx.Imm(t, 1)
		switch op {
		case "neg", "abs":
			k.Op("%s.%s %s, %s", op, t, r, x)
		case "square":
			k.Op("mul.rn.%s %s, %s, %s", t, r, x, x)
		case "sqrt":
			k.Op("sqrt.rn.%s %s, %s", t, r, x)
		case "rsqrt":
			k.Op("sqrt.rn.%s %s, %s", t, r, x)
			k.Op("div.rn.%s %s, %s, %s", t, r, one, r)
		case "ceil":
			k.Op("cvt.rpi.%s.%s %s, %s", t, t, r, x)
		case "floor":
			k.Op("cvt.rmi.%s.%s %s, %s", t, t, r, x)
		case "round":
			// trunc(x), plus one away from zero where |x - trunc(x)| >= 1/2.
			tr, diff, step := k.Reg(t), k.Reg(t), k.Reg(t)
			k.Op("cvt.rzi.%s.%s %s, %s", t, t, tr, x)
			k.Op("sub.rn.%s %s, %s, %s", t, diff, x, tr)
			k.Op("abs.%s %s, %s", t, diff, diff)
			k.Op("setp.ge.%s %s, %s, %s", t, p, diff, ptx.Imm(t, 0.5))
			k.Op("copysign.%s %s, %s, %s", t, step, x, one)
			k.Op("selp.%s %s, %s, %s, %s", t, step, step, zero, p)
			k.Op("add.rn.%s %s, %s, %s", t, r, tr, step)
			// keep the sign of a zero result (-0.3 rounds to -0)
			k.Op("copysign.%s %s, %s, %s", t, r, x, r)
		case "sign":
			// 1 or -1 with x's sign where x is nonzero and not NaN, else x.
			s := k.Reg(t)
			k.Op("copysign.%s %s, %s, %s", t, s, x, one)
			k.Op("setp.eq.%s %s, %s, %s", t, p, x, zero)
			k.Op("selp.%s %s, %s, %s, %s", t, r, x, s, p)
			k.Op("setp.nan.%s %s, %s, %s", t, p, x, x)
			k.Op("selp.%s %s, %s, %s, %s", t, r, x, r, p)
		case "relu":
			// x where x > 0 or NaN, else +0.
			k.Op("setp.gtu.%s %s, %s, %s", t, p, x, zero)
			k.Op("selp.%s %s, %s, %s, %s", t, r, x, zero, p)
		case "isfinite":
			a := k.Reg(t)
			k.Op("abs.%s %s, %s", t, a, x)
			k.Op("setp.lt.%s %s, %s, %s", t, p, a, ptx.Imm(t, math.Inf(1)))
			b := k.Reg(ptx.U32)
			k.Op("selp.u32 %s, 1, 0, %s", b, p)
			return b
		case "gelutanh":
			if d == F32 { // and the half types, computing in it
				return geluTanh32(k, x)
			}
			return inF64(k, d, x, mathFuncs[op])
		case "exp", "tanh", "sigmoid", "erf", "log", "expm1", "log1p", "softplus":
			if d == F32 { // and the half types, computing in it
				return math32Funcs[op](k, x)
			}
			return inF64(k, d, x, mathFuncs[op])
		case "gelu":
			if d == F32 { // and the half types, computing in it
				return gelu32(k, x)
			}
			return inF64(k, d, x, func(m fm, x ptx.Reg) ptx.Reg { return m.gelu(x, true) })
		default:
			return inF64(k, d, x, mathFuncs[op])
		}
		return r
	}
	it := itype(d)
	switch op {
	case "neg":
		k.Op("neg.%s %s, %s", signed(it), r, x)
	case "abs":
		if d == U8 {
			k.Op("mov.u32 %s, %s", r, x)
		} else {
			k.Op("abs.%s %s, %s", it, r, x)
		}
	case "square":
		k.Op("mul.lo.%s %s, %s, %s", it, r, x, x)
	case "sign":
		if d == U8 {
			k.Op("min.u32 %s, %s, 1", r, x)
			break
		}
		k.Op("setp.gt.%s %s, %s, 0", it, p, x)
		k.Op("selp.%s %s, 1, 0, %s", it, r, p)
		k.Op("setp.lt.%s %s, %s, 0", it, p, x)
		k.Op("selp.%s %s, -1, %s, %s", it, r, r, p)
	case "relu":
		if d == U8 {
			k.Op("mov.u32 %s, %s", r, x)
		} else {
			k.Op("max.%s %s, %s, 0", it, r, x)
		}
	default:
		panic("kernels: integer unary op " + op)
	}
	return r
}

// signed is the signed instruction type of the same size (neg wants one).
func signed(it string) string {
	if it == "s64" {
		return "s64"
	}
	return "s32"
}
