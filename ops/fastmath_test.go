package ops

import (
	"math"
	"testing"
)

// ulps is the distance between two float32s in units in the last place.
func ulps(a, b float32) int64 {
	ia, ib := int64(int32(math.Float32bits(a))), int64(int32(math.Float32bits(b)))
	if ia < 0 {
		ia = math.MinInt32 - ia
	}
	if ib < 0 {
		ib = math.MinInt32 - ib
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

func tanh32(x float32) float32 {
	o := []float32{0}
	tanh32Loop(o, []float32{x})
	return o[0]
}

func TestFastMath32(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(float32) float32
		ref  func(float64) float64
		lo   float32
		hi   float32
	}{
		{"exp32", exp32, math.Exp, -110, 90},
		{"tanh32", tanh32, math.Tanh, -12, 12},
	} {
		worst, at := int64(0), float32(0)
		check := func(x float32) {
			want := float32(c.ref(float64(x)))
			if d := ulps(c.f(x), want); d > worst {
				worst, at = d, x
			}
		}
		// Every float32 in the range would be 2^31 points; a dense grid plus
		// every float32 near zero and near the branch points covers it.
		const steps = 2_000_000
		for i := range steps + 1 {
			check(c.lo + (c.hi-c.lo)*float32(i)/steps)
		}
		for _, x0 := range []float32{0, 0.55, -0.55, 9.1, -9.1, expMax32, expMin32} {
			x := x0
			for range 5000 {
				check(x)
				x = math.Nextafter32(x, float32(math.Inf(1)))
			}
			x = x0
			for range 5000 {
				check(x)
				x = math.Nextafter32(x, float32(math.Inf(-1)))
			}
		}
		if worst > 1 {
			t.Errorf("%s: %d ulps at %v: got %v, want %v", c.name, worst, at, c.f(at), float32(c.ref(float64(at))))
		}
		for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 1e-30, -1e-30, 100, -100, 1e-45} {
			if got, want := c.f(x), float32(c.ref(float64(x))); got != want {
				t.Errorf("%s(%v) = %v, want %v", c.name, x, got, want)
			}
		}
		if nan := c.f(float32(math.NaN())); nan == nan {
			t.Errorf("%s(NaN) = %v", c.name, nan)
		}
	}
	if z := tanh32(float32(math.Copysign(0, -1))); z != 0 || !math.Signbit(float64(z)) {
		t.Errorf("tanh32(-0) = %v, want -0", z)
	}
}
