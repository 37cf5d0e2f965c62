package ops

import "github.com/eagerflow/eagerflow/tensor"

// Floor division and the modulo with the divisor's sign, as Python's //
// and % compute them (NumPy's floor_divide and mod, torch.div with
// rounding_mode "floor" and torch.remainder, TensorFlow's floordiv and
// floormod), composed of Div, Rem and selections: every device and
// numeric dtype, broadcast as Add.

// FloorDiv returns ⌊a/b⌋ elementwise: integers rounded toward -∞ (Div
// truncates toward 0: FloorDiv(-7, 2) is -4, Div -3), an integer divided
// by 0 -1 as Div gives; floats by Python's divmod, the quotient (a -
// Mod(a, b))/b floored (so that b·FloorDiv + Mod is a as nearly as
// floats allow), ±Inf or NaN where b is 0 (a/b), NaN where a is
// infinite; the half types computed in float32 and rounded once.
// Numeric dtypes, one dtype; no gradient (it is piecewise constant).
// Panics with a *tensor.Error on mismatched dtypes or shapes.
func FloorDiv(a, b *tensor.Tensor) *tensor.Tensor {
	return floorDivision("FloorDiv", a, b, FloorDiv, func(t *temps, r, adjust, a, b *tensor.Tensor) *tensor.Tensor {
		if !r.DType().IsFloat() {
			q := t.keep(Div(a, b))
			return Where(adjust, t.keep(Sub(q, t.keep(ScalarLike(q, 1)))), q)
		}
		one := t.keep(ScalarLike(r, 1))
		div := t.keep(Div(t.keep(Sub(a, r)), b))
		div = t.keep(Where(adjust, t.keep(Sub(div, one)), div))
		fd := t.keep(Floor(div))
		up := t.keep(Gt(t.keep(Sub(div, fd)), t.keep(ScalarLike(r, 0.5))))
		fd = t.keep(Where(up, t.keep(Add(fd, one)), fd))
		quotient := t.keep(Div(a, b))
		zero := t.keep(Mul(t.keep(Sign(quotient)), t.keep(ScalarLike(r, 0)))) // 0 signed as a/b
		fd = t.keep(Where(t.keep(Eq(div, t.keep(ScalarLike(r, 0)))), zero, fd))
		fd = t.keep(Where(t.keep(Eq(b, t.keep(ScalarLike(b, 0)))), quotient, fd))
		return StopGradient(fd)
	})
}

// Mod returns a - b·⌊a/b⌋, the remainder with the divisor's sign (Rem,
// C's fmod, keeps the dividend's): Mod(-7, 3) is 2, Rem -1; Mod(7, -3) is
// -2. An integer's Mod by 0 is a, as Rem's; a float's is NaN. A float
// remainder of 0 takes b's sign; a tiny negative remainder plus b can
// round to b (Mod(-1e-20, 1) is 1, as in Python); the half types
// computed in float32 and rounded once. Numeric dtypes, one dtype.
// Differentiable in floats: 1 in a, -⌊a/b⌋ in b. Panics with a
// *tensor.Error on mismatched dtypes or shapes.
func Mod(a, b *tensor.Tensor) *tensor.Tensor {
	return floorDivision("Mod", a, b, Mod, func(t *temps, r, adjust, a, b *tensor.Tensor) *tensor.Tensor {
		m := Where(adjust, t.keep(Add(r, b)), r)
		if !r.DType().IsFloat() {
			return m
		}
		t.keep(m)
		// A zero remainder takes b's sign: signed - (m - m), the
		// difference +0 and carrying m's gradient, so that the gradient
		// is 1 and -⌊a/b⌋ there too.
		signed := t.keep(Mul(t.keep(Sign(b)), t.keep(ScalarLike(b, 0))))
		signed = t.keep(Sub(signed, t.keep(Sub(t.keep(StopGradient(m)), m))))
		return Where(t.keep(Eq(m, t.keep(ScalarLike(m, 0)))), signed, m)
	})
}

// floorDivision runs FloorDiv's or Mod's steps, body, on a's remainder by
// b and where floor division adjusts it (floorParts); the half types
// through float32 (again, the op itself).
func floorDivision(op string, a, b *tensor.Tensor, again func(a, b *tensor.Tensor) *tensor.Tensor,
	body func(t *temps, r, adjust, a, b *tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	needInputs(op, a, b)
	defer asOp(op)
	var t temps
	defer t.release()
	r, adjust, a, b := floorParts(&t, a, b)
	if dt := r.DType(); dt.IsHalf() {
		return Cast(t.keep(again(t.keep(Cast(a, tensor.Float32)), t.keep(Cast(b, tensor.Float32)))), dt)
	}
	return body(&t, r, adjust, a, b)
}

// floorParts are a's remainder by b (Rem) and where floor division
// differs from truncation: the remainder is nonzero, b is not 0, and
// their signs differ; and a and b as the remainder took them (a weak
// scalar in its dtype and on its device: the steps after would meet it
// as a tensor of its own). Intermediates go to t.
func floorParts(t *temps, a, b *tensor.Tensor) (r, adjust, sa, sb *tensor.Tensor) {
	r = t.keep(Rem(a, b))
	sa, sb = strongAs(t, a, r), strongAs(t, b, r)
	zr, zb := t.keep(ScalarLike(r, 0)), t.keep(ScalarLike(b, 0))
	signs := t.keep(Ne(t.keep(Lt(r, zr)), t.keep(Lt(b, zb))))
	nonzero := t.keep(LogicalAnd(t.keep(Ne(r, zr)), t.keep(Ne(b, zb))))
	return r, t.keep(LogicalAnd(nonzero, signs)), sa, sb
}

// strongAs is x, or where it is a weak scalar, x in like's dtype on its
// device.
func strongAs(t *temps, x, like *tensor.Tensor) *tensor.Tensor {
	if !x.IsWeak() {
		return x
	}
	return t.keep(ToDevice(t.keep(Cast(x, like.DType())), like.Device()))
}
