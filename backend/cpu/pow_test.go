package cpu_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Pow of float32 by a scalar 1, 2 or 3 (loops of their own) gives the
// bits math.Pow in float64, rounded, gives: over random values of every
// magnitude, subnormals, ±0, ±Inf, NaN and the overflowing.
func TestPowSmallIntegerPowersAsMathPow(t *testing.T) {
	r := tensor.NewRNG(71)
	u := tensor.ToSlice[float64](tensor.RandUniform(r, tensor.Float64, -1, 1, 20000))
	x := make([]float32, 0, len(u)+12)
	for i, v := range u {
		x = append(x, float32(v*math.Pow(2, float64(i%260-140)))) // 2^-140 (subnormal) to 2^119
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1, -1, math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 3e12, -5e13)
	xt := tensor.FromSlice(x, len(x))
	for _, b := range []float32{1, 2, 3} {
		got := tensor.ToSlice[float32](ops.Pow(xt, tensor.Scalar(b)))
		for i, v := range x {
			want := float32(math.Pow(float64(v), float64(b)))
			if math.Float32bits(got[i]) != math.Float32bits(want) && !(want != want && got[i] != got[i]) {
				t.Fatalf("Pow(%g, %g) = %g (%#x), math.Pow's %g (%#x)", v, b, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
		}
	}
}
