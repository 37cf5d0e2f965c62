package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// sameBits reports the first element where x and y differ in their
// float32 bits, or -1.
func sameBits(x, y T) int {
	a, b := tensor.ToSlice[float32](x), tensor.ToSlice[float32](y)
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// A gradient rule's elementwise chain runs as one kernel where its float32
// operands are full (one shape) or single values and nothing observes,
// bitwise the ops one by one; otherwise op by op.
func TestGradientChainsFuseWhereTheyCan(t *testing.T) {
	rng := tensor.NewRNG(3)
	x := tensor.RandNormal(rng, tensor.Float32, 37, 301) // two blocks of the workers' split, a tail
	dy := tensor.RandNormal(rng, tensor.Float32, 37, 301)
	k := tensor.Scalar(float32(-0.5))
	if !ops.FusesMulChain(k, x, dy) {
		t.Fatal("float32 [37 301] operands and a scalar: not fused")
	}
	want := ops.Mul(dy, ops.Mul(k, x))
	if i := sameBits(ops.MulChain(k, x, dy), want); i >= 0 {
		t.Errorf("fused chain differs from the ops at element %d", i)
	}
	for _, c := range []struct {
		name     string
		k, x, dy T
	}{
		{"float64", ops.Cast(k, tensor.Float64), ops.Cast(x, tensor.Float64), ops.Cast(dy, tensor.Float64)},
		{"a broadcast row", tensor.RandNormal(rng, tensor.Float32, 301), x, dy},
		{"a single value of higher rank", tensor.Full(float32(2), 1, 1, 1), x, dy},
		{"shapes that broadcast", k, x, tensor.RandNormal(rng, tensor.Float32, 1, 301)},
		{"no full operand first", k, k, dy},
		{"empty", k, tensor.Zeros(tensor.Float32, 0, 3), tensor.Zeros(tensor.Float32, 0, 3)},
	} {
		if ops.FusesMulChain(c.k, c.x, c.dy) {
			t.Errorf("%s: fused", c.name)
		}
		var got T
		if err := tensor.Catch(func() { got = ops.MulChain(c.k, c.x, c.dy) }); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if w := ops.Mul(c.dy, ops.Mul(c.k, c.x)); !got.Shape().Equal(w.Shape()) {
			t.Errorf("%s: shape %v, the ops' %v", c.name, got.Shape(), w.Shape())
		}
	}
	tp := tape.New()
	tp.Watch(x)
	if ops.FusesMulChain(k, x, dy) {
		t.Error("fused while a tape records")
	}
	tp.Stop()
}

// The rules that chain (Pow's, Square's, Sqrt's, Rsqrt's, Abs's, Sin's,
// Cos's, Log1p's, Expm1's, Erf's, Div's and Rem's) give
// bitwise the gradients they give op by op (under a second tape, which
// observes), on full and single exponents.
func TestChainedGradientsAreTheOpsOwn(t *testing.T) {
	rng := tensor.NewRNG(5)
	x := ops.Add(tensor.RandUniform(rng, tensor.Float32, 0.1, 3, 64, 129), tensor.Scalar(float32(0)))
	b := tensor.RandUniform(rng, tensor.Float32, -2, 3, 64, 129)
	for _, c := range []struct {
		name string
		f    func(x T) T
	}{
		{"Pow3", func(x T) T { return ops.Pow(x, tensor.Scalar(float32(3))) }},
		{"Pow0", func(x T) T { return ops.Pow(x, tensor.Scalar(float32(0))) }},
		{"PowFull", func(x T) T { return ops.Pow(x, b) }},
		{"Square", ops.Square},
		{"Sqrt", ops.Sqrt},
		{"Rsqrt", ops.Rsqrt},
		{"Abs", func(x T) T { return ops.Abs(ops.Sub(x, tensor.Scalar(float32(1)))) }},
		{"Sin", ops.Sin},
		{"Cos", ops.Cos},
		{"Log1p", ops.Log1p},
		{"Expm1", ops.Expm1},
		{"Erf", ops.Erf},
		{"DivBoth", func(x T) T { return ops.Div(x, ops.Add(x, tensor.Scalar(float32(1)))) }},
		{"DivByScalar", func(x T) T { return ops.Div(b, ops.Sum(x)) }},
		{"Rem", func(x T) T { return ops.Rem(b, x) }},
	} {
		grad := func(observed bool) T {
			if observed {
				outer := tape.New()
				outer.Watch(x)
				defer outer.Stop()
			}
			tp := tape.New()
			tp.Watch(x)
			return tp.Gradient(ops.Sum(c.f(x)), x)[0]
		}
		if i := sameBits(grad(false), grad(true)); i >= 0 {
			t.Errorf("%s: the fused gradient differs from the ops' at element %d", c.name, i)
		}
	}
}
