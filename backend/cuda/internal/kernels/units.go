package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// The activations of ops/rectifiers.go and ops/smooth_units.go, with the
// CPU kernels' rules (backend/cpu/activation_units.go) in the compute
// dtype, F32 (the half types too) or F64, their arithmetic in the same
// order:
//   - relu6, hardsigmoid, hardswish, softsign (unary), their kinks'
//     conventions PyTorch's, NaN kept;
//   - elu, selu (λx or λα(e^x - 1)), silu (x·σ(x)), mish (x·n/(n + 2),
//     n = e^x(e^x + 2)), their limits at -∞ -0;
//   - the binary prelu and preluslope (x, alpha), and the backward ops of
//     (x, dy): relu6grad, hardsigmoidgrad, hardswishgrad, elugrad,
//     selugrad (dy·λ or dy·(λα·e^x)), silugrad (dy·σ(x)(1 + x·σ(-x))) and
//     mishgrad (dy·(t + x·σ(x)·4(n + 1)/(n + 2)²)), their slopes' limits
//     0 and 1 at ∓∞.
// Float32's exponentials and sigmoid are math32.go's, float64's math.go's.

// UnitOps and UnitBinaryOps list the unary and binary ops of the
// activations (of the float dtypes).
var (
	UnitOps       = []string{"relu6", "hardsigmoid", "hardswish", "softsign", "elu", "selu", "silu", "mish"}
	UnitBinaryOps = []string{"prelu", "preluslope", "relu6grad", "hardsigmoidgrad", "hardswishgrad", "elugrad", "selugrad",
		"silugrad", "mishgrad"}
)

// unitMath is the exponentials and the sigmoid of m's float type.
type unitMath struct{ fm }

func newUnitMath(k *ptx.Kernel, d DType) unitMath { return unitMath{fm{k: k, t: d.reg()}} }

func (u unitMath) f32() bool { return u.t == ptx.F32 }

func (u unitMath) exp(x ptx.Reg) ptx.Reg {
	if u.f32() {
		return expAny32(u.k, x)
	}
	return fm{k: u.k}.exp(x)
}

func (u unitMath) expm1(x ptx.Reg) ptx.Reg {
	if u.f32() {
		return expm1_32(u.k, x)
	}
	return fm{k: u.k}.expm1(x)
}

func (u unitMath) sigmoid(x ptx.Reg) ptx.Reg {
	if u.f32() {
		return sigmoid32(u.k, x)
	}
	return fm{k: u.k}.sigmoid(x)
}

// clamp6 is min(max(v, 0), 6), +0 for v <= 0 (and for NaN: callers keep
// NaN by fixNaN).
func (u unitMath) clamp6(v ptx.Reg) ptx.Reg {
	return u.sel(u.cmp("gt", v, u.c(0)), u.min(v, u.c(6)), u.c(0))
}

// limits is r, or lo at x = -∞ and hi at +∞.
func (u unitMath) limits(r, x ptx.Reg, lo, hi float64) ptx.Reg {
	r = u.sel(u.cmp("eq", x, u.c(math.Inf(1))), u.c(hi), r)
	return u.sel(u.cmp("eq", x, u.c(math.Inf(-1))), u.c(lo), r)
}

// tail32 is r, or for float32 op's value computed in float64 (by f64 of
// the widened x) where x < -87: below, e^x and σ(x) are subnormal in
// float32 and keep few digits. A branch: few threads take it.
func (u unitMath) tail32(r, x ptx.Reg, f64 func(x64 ptx.Reg) ptx.Reg) ptx.Reg {
	if !u.f32() {
		return r
	}
	skip := u.k.Label("tail")
	u.k.Op("@!%s bra %s", u.cmp("lt", x, u.c(-87)), skip)
	u.k.Op("mov.f32 %s, %s", r, narrow(u.k, F32, f64(widen(u.k, F32, x))))
	u.k.Place(skip)
	return r
}

// expUnit is Elu's (scale 1) or Selu's scale and scale·alpha.
func expUnit(op string) (scale, scaleAlpha float64) {
	if op == "selu" || op == "selugrad" {
		return mathx.SeluScale, mathx.SeluScale * mathx.SeluAlpha
	}
	return 1, 1
}

// unitOp computes the unary activation op of x in compute dtype d.
func unitOp(k *ptx.Kernel, op string, d DType, x ptx.Reg) ptx.Reg {
	u := newUnitMath(k, d)
	negZero := math.Copysign(0, -1)
	switch op {
	case "relu6":
		return u.fixNaN(u.clamp6(x), x)
	case "hardsigmoid":
		return u.fixNaN(u.div(u.clamp6(u.add(x, u.c(3))), u.c(6)), x)
	case "hardswish":
		r := u.div(u.mul(x, u.clamp6(u.add(x, u.c(3)))), u.c(6))
		r = u.sel(u.cmp("ge", x, u.c(3)), x, r) // not x·6/6, which overflows past max/6
		return u.sel(u.cmp("le", x, u.c(-3)), u.c(negZero), r)
	case "softsign":
		r := u.div(x, u.add(u.abs(x), u.c(1)))
		return u.sel(u.cmp("eq", u.abs(x), u.c(math.Inf(1))), u.copysign(u.c(1), x), r)
	case "elu", "selu":
		s, sa := expUnit(op)
		neg, pos := u.expm1(x), x
		if op == "selu" {
			neg, pos = u.mul(neg, u.c(sa)), u.mul(x, u.c(s))
		}
		return u.sel(u.cmp("gt", x, u.c(0)), pos, neg)
	case "silu", "mish":
		var r ptx.Reg
		if op == "silu" {
			r = u.mul(x, u.sigmoid(x))
		} else {
			t, _, _ := u.mishParts(u.exp(x), false)
			r = u.mul(x, t)
		}
		r = u.limits(r, x, negZero, math.Inf(1))
		return u.tail32(r, x, func(x64 ptx.Reg) ptx.Reg { return unitOp(k, op, F64, x64) })
	}
	panic("kernels: activation " + op)
}

// mishParts returns t = n/(n + 2) = tanh(softplus(x)) from e = e^x (1
// where n overflows) and, where slope, 1 - t² = 4(n + 1)/(n + 2)² (0
// there) and σ(x) = e/(1 + e) (1 where e overflows).
func (u unitMath) mishParts(e ptx.Reg, slope bool) (t, sech2, sig ptx.Reg) {
	inf := u.c(math.Inf(1))
	n := u.mul(e, u.add(e, u.c(2)))
	d := u.add(n, u.c(2))
	over := u.cmp("eq", n, inf)
	t = u.sel(over, u.c(1), u.div(n, d))
	if !slope {
		return t, ptx.Reg{}, ptx.Reg{}
	}
	sig = u.sel(u.cmp("eq", e, inf), u.c(1), u.div(e, u.add(e, u.c(1))))
	sech2 = u.sel(over, u.c(0), u.div(u.mul(u.add(n, u.c(1)), u.c(4)), u.mul(d, d)))
	return t, sech2, sig
}

// unitBinaryOp computes the binary activation op of (x, y) in compute
// dtype d: (x, alpha) for prelu and preluslope, (x, dy) for the rest.
func unitBinaryOp(k *ptx.Kernel, op string, d DType, x, y ptx.Reg) ptx.Reg {
	u := newUnitMath(k, d)
	zero := u.c(0)
	switch op {
	case "prelu":
		return u.sel(u.cmp("gt", x, zero), x, u.mul(x, y))
	case "preluslope":
		return u.sel(u.cmp("gt", x, zero), u.c(1), y)
	case "relu6grad":
		return u.sel(u.or(u.cmp("le", x, zero), u.cmp("ge", x, u.c(6))), zero, y)
	case "hardsigmoidgrad":
		inside := u.and(u.cmp("gt", x, u.c(-3)), u.cmp("lt", x, u.c(3)))
		return u.sel(inside, u.mul(y, u.c(1.0/6)), zero)
	case "hardswishgrad":
		mid := u.mul(y, u.div(u.add(u.add(x, x), u.c(3)), u.c(6)))
		r := u.sel(u.cmp("le", x, u.c(3)), mid, y)
		return u.sel(u.cmp("lt", x, u.c(-3)), zero, r)
	case "elugrad", "selugrad":
		s, sa := expUnit(op)
		return u.sel(u.cmp("gt", x, zero), u.mul(y, u.c(s)), u.mul(u.mul(u.exp(x), u.c(sa)), y))
	case "silugrad", "mishgrad":
		var q ptx.Reg
		if op == "silugrad" {
			q = u.mul(u.sigmoid(x), u.add(u.mul(x, u.sigmoid(u.sub(zero, x))), u.c(1)))
		} else {
			t, sech2, sig := u.mishParts(u.exp(x), true)
			q = u.add(t, u.mul(u.mul(x, sig), sech2))
		}
		q = u.limits(q, x, 0, 1)
		q = u.tail32(q, x, func(x64 ptx.Reg) ptx.Reg {
			one := k.Reg(ptx.F64)
			k.Op("mov.f64 %s, %s", one, ptx.Imm(ptx.F64, 1))
			return unitBinaryOp(k, op, F64, x64, one) // the slope: dy = 1
		})
		return u.mul(y, q)
	}
	panic("kernels: activation " + op)
}
