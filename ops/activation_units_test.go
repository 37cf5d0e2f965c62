package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// unitRef is an activation and its derivative in float64, written
// plainly from their definitions (the tails' limits spelled out);
// terms, where not nil, is the size of the derivative's largest term,
// to which its error is relative where the terms cancel (near the
// derivative's zero).
type unitRef struct {
	name        string
	op          func(T) T
	value, grad func(float64) float64
	terms       func(float64) float64
}

var (
	seluL, seluA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
	sigmoidRef   = func(x float64) float64 {
		if x < 0 {
			return math.Exp(x) / (1 + math.Exp(x))
		}
		return 1 / (1 + math.Exp(-x))
	}
	softplusRef = func(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }
)

// pick is a where x > 0, else b (NaN takes b).
func pick(x, a, b float64) float64 {
	if x > 0 {
		return a
	}
	return b
}

// atInf returns lo, hi at -∞, +∞ and f(x) elsewhere.
func atInf(f func(float64) float64, lo, hi float64) func(float64) float64 {
	return func(x float64) float64 {
		switch {
		case math.IsInf(x, -1):
			return lo
		case math.IsInf(x, 1):
			return hi
		}
		return f(x)
	}
}

var unitRefs = []unitRef{
	{"LeakyRelu", func(x T) T { return ops.LeakyRelu(x, 0.2) },
		func(x float64) float64 { return pick(x, x, 0.2*x) }, func(x float64) float64 { return pick(x, 1, 0.2) }, nil},
	{"Prelu", func(x T) T { return ops.Prelu(x, ops.ScalarLike(x, -0.5)) },
		func(x float64) float64 { return pick(x, x, -0.5*x) }, func(x float64) float64 { return pick(x, 1, -0.5) }, nil},
	{"Elu", ops.Elu, func(x float64) float64 { return pick(x, x, math.Expm1(x)) }, func(x float64) float64 { return pick(x, 1, math.Exp(x)) }, nil},
	{"Selu", ops.Selu, func(x float64) float64 { return seluL * pick(x, x, seluA*math.Expm1(x)) },
		func(x float64) float64 { return seluL * pick(x, 1, seluA*math.Exp(x)) }, nil},
	{"Celu", func(x T) T { return ops.Celu(x, 2) }, func(x float64) float64 { return pick(x, x, 2*math.Expm1(x/2)) },
		func(x float64) float64 { return pick(x, 1, math.Exp(x/2)) }, nil},
	{"Silu", ops.Silu, atInf(func(x float64) float64 { return x * sigmoidRef(x) }, math.Copysign(0, -1), math.Inf(1)),
		atInf(func(x float64) float64 { return sigmoidRef(x) * (1 + x*sigmoidRef(-x)) }, 0, 1),
		func(x float64) float64 { return sigmoidRef(x) * math.Max(1, math.Abs(x)) }},
	{"Mish", ops.Mish, atInf(func(x float64) float64 { return x * math.Tanh(softplusRef(x)) }, math.Copysign(0, -1), math.Inf(1)),
		atInf(func(x float64) float64 {
			sp := softplusRef(x)
			sech := 1 / math.Cosh(sp)
			return math.Tanh(sp) + x*sigmoidRef(x)*sech*sech
		}, 0, 1),
		func(x float64) float64 { return math.Max(math.Tanh(softplusRef(x)), math.Abs(x)*sigmoidRef(x)) }},
	{"Softsign", ops.Softsign, atInf(func(x float64) float64 { return x / (1 + math.Abs(x)) }, -1, 1),
		func(x float64) float64 { return 1 / ((1 + math.Abs(x)) * (1 + math.Abs(x))) }, nil},
	{"Relu6", ops.Relu6, func(x float64) float64 { return math.Min(math.Max(x, 0), 6) },
		func(x float64) float64 { return pick(x, pick(6-x, 1, 0), 0) }, nil},
	{"HardSigmoid", ops.HardSigmoid, func(x float64) float64 { return math.Min(math.Max(x+3, 0), 6) / 6 },
		func(x float64) float64 { return pick(x+3, pick(3-x, 1.0/6, 0), 0) }, nil},
	{"HardSwish", ops.HardSwish, func(x float64) float64 { return pick(x+3, x*math.Min(x+3, 6)/6, math.Copysign(0, -1)) },
		func(x float64) float64 {
			switch {
			case x < -3:
				return 0
			case x <= 3:
				return (2*x + 3) / 6
			}
			return 1
		}, nil},
}

// unitPoints are the values the units are checked at: the kinks and
// both sides of them, the tails, signed zeros and infinities, and
// enough random values (about 70000) for the float32 loops' vector
// blocks and for the work to be sharded.
func unitPoints() []float64 {
	xs := []float64{math.Inf(-1), -1e30, -200, -90, -20, -6, -3.5, -3, -2.5, -1, -0.5, -1e-3, math.Copysign(0, -1), 0,
		1e-3, 0.5, 1, 2.5, 3, 3.5, 5.5, 6, 6.5, 20, 90, 1e30, math.Inf(1)}
	rng := tensor.ToSlice[float64](tensor.RandNormal(tensor.NewRNG(41), tensor.Float64, 70000))
	for i, v := range rng {
		xs = append(xs, v*[]float64{1, 4, 30}[i%3])
	}
	return xs
}

// closeRel reports whether got is want within rel of |want| or within
// floor (a tail's denormals), NaN matching NaN and infinities exactly.
func closeRel(got, want, rel, floor float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= rel*math.Abs(want)+floor
}

// TestActivationUnits checks each unit's values and gradients against
// its definition in float64 (within 2⁻⁵⁰ relative: 4 to 8 ulps) and
// float32 (within 2⁻²¹ of the float64 value: 4 to 8 float32 ulps, the
// tails' denormals within 2⁻¹²⁶; the vector exponentials err by 2), a
// derivative's error relative to its largest term where they cancel,
// and that NaN stays NaN.
func TestActivationUnits(t *testing.T) {
	xs := unitPoints()
	for _, u := range unitRefs {
		for _, c := range []struct {
			dt         tensor.DType
			rel, floor float64
		}{{tensor.Float64, 0x1p-50, 0x1p-1060}, {tensor.Float32, 0x1p-21, 0x1p-126}} {
			x := ops.Cast(tensor.FromSlice(xs), c.dt)
			tp := tape.New()
			tp.Watch(x)
			y := u.op(x)
			g := tp.Gradient(ops.Sum(y), x)[0]
			in := tensor.ToSlice[float64](ops.Cast(x, tensor.Float64))
			ys, gs := tensor.ToSlice[float64](ops.Cast(y, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(g, tensor.Float64))
			bad := 0
			for i, v := range in {
				size := 0.0
				if u.terms != nil && !math.IsInf(v, 0) {
					size = u.terms(v)
				}
				for _, k := range []struct {
					what            string
					got, want, size float64
				}{{"value", ys[i], u.value(v), 0}, {"gradient", gs[i], u.grad(v), size}} {
					want := k.want
					if c.dt == tensor.Float32 {
						want = float64(float32(want))
					}
					if !closeRel(k.got, want, c.rel, c.floor+c.rel*k.size) && bad < 5 {
						bad++
						t.Errorf("%s %v %s at %v = %v, want %v", u.name, c.dt, k.what, v, k.got, want)
					}
				}
			}
			nan := u.op(ops.Cast(tensor.FromSlice([]float64{math.NaN()}), c.dt))
			if v := tensor.ToSlice[float64](ops.Cast(nan, tensor.Float64))[0]; !math.IsNaN(v) {
				t.Errorf("%s %v of NaN = %v", u.name, c.dt, v)
			}
		}
	}
}

// Prelu's slope per channel: broadcast along NHWC's last dimension, its
// gradient for alpha summed over the rest (min(x, 0) where it applies).
func TestPreluPerChannel(t *testing.T) {
	x := tensor.FromSlice([]float64{-1, 2, -3, 4, 5, -6, -0.5, 0, 1}, 1, 3, 3)
	alpha := tensor.FromSlice([]float64{0.1, 0.2, 0.3})
	tp := tape.New()
	tp.Watch(x, alpha)
	y := ops.Prelu(x, alpha)
	check(t, "prelu", y, tensor.Shape{1, 3, 3}, []float64{-0.1, 2, -0.9, 4, 5, -1.8, -0.05, 0, 1})
	g := tp.Gradient(ops.Sum(y), x, alpha)
	check(t, "dx", g[0], tensor.Shape{1, 3, 3}, []float64{0.1, 1, 0.3, 1, 1, 0.3, 0.1, 0.2, 1})
	check(t, "dalpha", g[1], tensor.Shape{3}, []float64{-1.5, 0, -9})
}

// The units' second derivatives against finite differences of the first
// (float64, away from the kinks), and Celu's alpha checked.
func TestActivationUnitsSecondDerivative(t *testing.T) {
	xs := []float64{-2.7, -1.3, -0.4, 0.3, 1.1, 2.2, 4.5}
	for _, u := range unitRefs {
		x := tensor.FromSlice(xs)
		outer := tape.New()
		outer.Watch(x)
		inner := tape.New()
		inner.Watch(x)
		g := inner.Gradient(ops.Sum(u.op(x)), x)[0]
		h := make([]float64, len(xs)) // none: the first derivative is piecewise constant
		if d := outer.Gradient(ops.Sum(g), x)[0]; d != nil {
			h = tensor.ToSlice[float64](d)
		}
		for i, v := range xs {
			const e = 1e-6
			want := (u.grad(v+e) - u.grad(v-e)) / (2 * e)
			if math.Abs(h[i]-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("%s'' at %v = %v, want %v", u.name, v, h[i], want)
			}
		}
	}
	for _, a := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		_, err := catch(func() *tensor.Tensor { return ops.Celu(tensor.FromSlice([]float64{1}), a) })
		wantErr(t, "Celu", err, tensor.ErrValue, fmt.Sprintf("alpha %v", a))
	}
}
