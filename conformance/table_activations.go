package conformance

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// activationSamples are the samples of the rectifiers' and the smooth
// units' ops (ops/rectifiers.go, ops/smooth_units.go), their backward
// ops through the tape. The kinked functions' gradients are checked by
// finite differences only between their kinks (a difference across one
// measures neither side).
func activationSamples(add func(name string, s ...sample)) {
	// Between the kinks, on each side.
	for _, side := range [][2]float64{{-2, -0.2}, {0.2, 2}} {
		add("Prelu", binary(ops.Prelu, floats, side[0], side[1], -1, 1, true, true)...)
		add("PreluSlope", one("through Prelu", func() {
			underTape(func(x []T) T { return ops.Prelu(x[0], x[1]) }, r(side[0], side[1], 6), r(-1, 1, 6))
		}, true, true))
	}
	add("Prelu", one("LeakyRelu float32", func() { ops.LeakyRelu(ops.Cast(r(-2, 2, 9), tensor.Float32), 0.2) }, false, false))
	add("Prelu", one("per channel of NHWC", func() {
		underTape(func(x []T) T { return ops.Prelu(x[0], x[1]) }, ops.Mul(ops.Sign(r(-1, 1, 2, 3, 3, 4)), r(0.2, 1, 2, 3, 3, 4)), r(0, 0.5, 4))
	}, true, true))
	for _, k := range []struct {
		name   string
		fn     func(T) T
		pieces [][2]float64 // the ranges between kinks
	}{
		{"Relu6", ops.Relu6, [][2]float64{{-2, -0.2}, {0.2, 5.8}, {6.2, 8}}},
		{"HardSigmoid", ops.HardSigmoid, [][2]float64{{-5, -3.2}, {-2.8, 2.8}, {3.2, 5}}},
		{"HardSwish", ops.HardSwish, [][2]float64{{-5, -3.2}, {-2.8, 2.8}, {3.2, 5}}},
	} {
		for _, p := range k.pieces {
			add(k.name, unary(k.fn, floats, p[0], p[1], true, true)...)
			add(k.name+"Grad", one("through "+k.name, func() {
				underTape(func(x []T) T { return ops.Mul(k.fn(x[0]), x[1]) }, r(p[0], p[1], 6), r(-1, 1, 6))
			}, true, true))
		}
		add(k.name+"Grad", one("float32 [3 4]", func() {
			underTape(func(x []T) T { return k.fn(x[0]) }, ops.Cast(of(tensor.Float64, -8, 8, 3, 4), tensor.Float32))
		}, false, false))
	}
	for _, s := range []struct {
		name string
		fn   func(T) T
	}{{"Elu", ops.Elu}, {"Selu", ops.Selu}, {"Silu", ops.Silu}, {"Mish", ops.Mish}} {
		add(s.name, unary(s.fn, floats, -3, 3, true, true)...)
		add(s.name+"Grad", one("through "+s.name, func() {
			underTape(func(x []T) T { return ops.Mul(s.fn(x[0]), x[1]) }, r(-3, 3, 6), r(-1, 1, 6))
		}, true, true))
		add(s.name+"Grad", one("float32 [3 4]", func() {
			underTape(func(x []T) T { return s.fn(x[0]) }, ops.Cast(of(tensor.Float64, -3, 3, 3, 4), tensor.Float32))
		}, false, false))
	}
	add("Elu", one("Celu of alpha 2", func() { ops.Celu(r(-3, 3, 7), 2) }, true, true))
	add("Softsign", unary(ops.Softsign, floats, -3, 3, true, true)...)
}
