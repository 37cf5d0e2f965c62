package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// unitInputs are float32 values around the activations' kinks (0, ±3, 6
// and their neighbours), of every magnitude, ±0, infinities and NaN of
// both signs, shuffled.
func unitInputs() []float32 {
	r := rand.New(rand.NewPCG(5, 6))
	xs := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		-float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 1e-45, -1e-45}
	for _, k := range []float32{0, 3, -3, 6, -1.5} {
		xs = append(xs, k, math.Nextafter32(k, 10), math.Nextafter32(k, -10))
	}
	for range 5000 {
		xs = append(xs, float32(math.Ldexp(1+r.Float64(), r.IntN(80)-60)*float64(1-2*r.IntN(2))), float32(r.NormFloat64()*4))
	}
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs
}

// The piecewise-linear units' vector kernels (units_amd64.s) against
// their Go rules, bit for bit (NaN's payload aside): the forward ones,
// the backward ones of (x, dy), Prelu and its slope with one alpha, of
// x's shape and tiled, and the select the exponential units use.
func TestUnitKernelsAreTheirRules(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels on this CPU or build")
	}
	xs := unitInputs()
	n := len(xs) &^ 7
	dy := make([]float32, len(xs))
	for i := range dy {
		dy[i] = float32(i%7) - 2.5
	}
	same := func(name string, got []float32, want func(i int) float32) {
		t.Helper()
		for i := range n {
			w := want(i)
			if math.Float32bits(got[i]) != math.Float32bits(w) && !(got[i] != got[i] && w != w) {
				t.Errorf("%s at %v (dy %v) = %v, want %v", name, xs[i], dy[i], got[i], w)
				return
			}
		}
	}
	o := make([]float32, len(xs))
	for _, u := range []struct {
		name string
		kern func(dst, x *float32, n int)
		rule func(float32) float32
	}{{"relu6", srelu6, relu6Of[float32]}, {"hardsigmoid", shardsigmoid, hardSigmoidOf[float32]},
		{"hardswish", shardswish, hardSwishOf[float32]}, {"softsign", ssoftsign, softsignOf[float32]}} {
		u.kern(&o[0], &xs[0], n)
		same(u.name, o, func(i int) float32 { return u.rule(xs[i]) })
	}
	for _, u := range []struct {
		name string
		kern func(dst, x, dy *float32, n int)
		rule func(x, dy float32) float32
	}{{"relu6grad", srelu6grad, relu6GradOf[float32]}, {"hardsigmoidgrad", shardsigmoidgrad, hardSigmoidGradOf[float32]},
		{"hardswishgrad", shardswishgrad, hardSwishGradOf[float32]}} {
		u.kern(&o[0], &xs[0], &dy[0], n)
		same(u.name, o, func(i int) float32 { return u.rule(xs[i], dy[i]) })
	}
	for _, a := range []float32{0.2, -0.5, 0} {
		preluLoops32.vs(o, xs, a)
		same("prelu", o, func(i int) float32 { return preluOf(xs[i], a) })
		preluSlopeLoops32.vs(o, xs, a)
		same("preluslope", o, func(i int) float32 { return preluSlopeOf(xs[i], a) })
	}
	preluLoops32.vv(o, xs, dy)
	same("prelu of a full alpha", o, func(i int) float32 { return preluOf(xs[i], dy[i]) })
	preluSlopeLoops32.vv(o, xs, dy)
	same("preluslope of a full alpha", o, func(i int) float32 { return preluSlopeOf(xs[i], dy[i]) })
	selectPositive(o, xs, dy, xs)
	same("select", o, func(i int) float32 {
		if xs[i] > 0 {
			return dy[i]
		}
		return xs[i]
	})
}
