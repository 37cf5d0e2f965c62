package mathx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The normal family at values computed by mpmath 1.2.1 to 90 digits
// (mpmath.ncdf, mpmath.erfc; ln Φ through log1p where Φ nears 1; the
// quantiles by solving ln Φ(y) = ln p at p's float64 value), in the
// tails where 1 - erf and erfc(-x/√2) in one part lose every digit.
func TestNormalFamilyAtReferenceValues(t *testing.T) {
	for _, c := range []struct {
		name    string
		f       func(float64) float64
		x, want float64
		maxUlps float64
	}{
		{"Ndtr", Ndtr, -30, 4.9067139271481870595e-198, 2},
		{"Ndtr", Ndtr, -8, 6.2209605742717841235e-16, 2},
		{"Ndtr", Ndtr, 0.5, 0.69146246127401310364, 2},
		{"Ndtr", Ndtr, 3, 0.99865010196836990547, 2},
		{"LogNdtr", LogNdtr, -30, -454.32124395634319711, 2},
		{"LogNdtr", LogNdtr, -40, -804.60844201375378817, 2},
		{"LogNdtr", LogNdtr, 0.5, -0.36894641528865639307, 2},
		{"LogNdtr", LogNdtr, 10, -7.619853024160526066e-24, 2},
		{"Erfcx", Erfcx, 0.5, 0.61569034419292587487, 2},
		{"Erfcx", Erfcx, 3, 0.17900115118138995042, 2},
		{"Erfcx", Erfcx, 27, 0.020881607990420940674, 2},
		{"Erfcx", Erfcx, -8, 1.2470298161623233766e+28, 2},
		{"Erfc", Erfc, 0.5, 0.47950012218695346232, 1},
		{"Erfc", Erfc, 3, 0.000022090496998585441373, 1},
		{"Ndtri", Ndtri, 1e-300, -37.047096299361199237, 2},
		{"Ndtri", Ndtri, 1e-10, -6.3613409024040561991, 2},
		{"Ndtri", Ndtri, 0.975, 1.959963984540053855604, 2},
		{"Ndtri", Ndtri, 0.3, -0.5244005127080408159695, 2},
	} {
		if got := c.f(c.x); ulpsOff(got, c.want) > c.maxUlps {
			t.Errorf("%s(%v) = %v, want %v (%.1f ulps)", c.name, c.x, got, c.want, ulpsOff(got, c.want))
		}
	}
}

// Identities over a sweep: Erfc within 4 ulps of Go's math.Erfc
// (fdlibm's approximations either way, FMA steps here, each within about
// 2 ulps of erfc: 0.5 - (erf - 0.5) rounds its difference below 0.84375);
// Φ(x) + Φ(-x) = 1; ln Φ = ln(Φ) where Φ is not small; Erfcx = e^(x²)·erfc
// where both are in range; Φ⁻¹(Φ(x)) = x in the lower tail, where Φ
// keeps x's digits; and the special values.
func TestNormalFamilyIdentities(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	for range 20000 {
		x := r.Float64()*60 - 30
		if u := ulpsOff(Erfc(x), math.Erfc(x)); u > 4 {
			t.Errorf("Erfc(%v) = %v, math.Erfc %v (%.1f ulps)", x, Erfc(x), math.Erfc(x), u)
		}
		if s := Ndtr(x) + Ndtr(-x); math.Abs(s-1) > 0x1p-52 {
			t.Errorf("Φ(%v) + Φ(%v) = %v", x, -x, s)
		}
		if p := Ndtr(x); p > 0.1 && math.Abs(LogNdtr(x)-math.Log(p)) > 4*0x1p-52*math.Max(1, math.Abs(math.Log(p))) {
			t.Errorf("LogNdtr(%v) = %v, ln Φ = %v", x, LogNdtr(x), math.Log(p))
		}
		if math.Abs(x) < 5 && ulpsOff(Erfcx(x), math.Exp(x*x)*math.Erfc(x)) > 8+2*x*x {
			t.Errorf("Erfcx(%v) = %v, e^(x²)·erfc = %v", x, Erfcx(x), math.Exp(x*x)*math.Erfc(x))
		}
		if x < -1 {
			if y := Ndtri(Ndtr(x)); math.Abs(y-x) > 1e-14*math.Abs(x) {
				t.Errorf("Φ⁻¹(Φ(%v)) = %v", x, y)
			}
		}
	}
	for _, c := range []struct {
		name    string
		f       func(float64) float64
		x, want float64
	}{
		{"Erfc", Erfc, math.Inf(1), 0}, {"Erfc", Erfc, math.Inf(-1), 2}, {"Erfc", Erfc, 0, 1}, {"Erfc", Erfc, 30, 0},
		{"Erfcx", Erfcx, math.Inf(1), 0}, {"Erfcx", Erfcx, math.Inf(-1), math.Inf(1)}, {"Erfcx", Erfcx, 0, 1}, {"Erfcx", Erfcx, -27, math.Inf(1)},
		{"Ndtr", Ndtr, math.Inf(1), 1}, {"Ndtr", Ndtr, math.Inf(-1), 0}, {"Ndtr", Ndtr, 0, 0.5},
		{"LogNdtr", LogNdtr, math.Inf(1), 0}, {"LogNdtr", LogNdtr, math.Inf(-1), math.Inf(-1)},
		{"Ndtri", Ndtri, 0, math.Inf(-1)}, {"Ndtri", Ndtri, 1, math.Inf(1)}, {"Ndtri", Ndtri, 0.5, 0},
		{"Ndtri", Ndtri, -0.1, math.NaN()}, {"Ndtri", Ndtri, 1.5, math.NaN()},
	} {
		if got := c.f(c.x); !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s(%v) = %v, want %v", c.name, c.x, got, c.want)
		}
	}
	for _, f := range []func(float64) float64{Erfc, Erfcx, Ndtr, LogNdtr, Ndtri} {
		if !math.IsNaN(f(math.NaN())) {
			t.Errorf("a function of the family is not NaN at NaN")
		}
	}
	if got, want := Erfcx(1e300), 1/(1e300*math.SqrtPi); ulpsOff(got, want) > 2 {
		t.Errorf("Erfcx(1e300) = %v, want 1/(x√π) = %v", got, want)
	}
}
