package mathx

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Igamma and Igammac against closed forms: a = 1 (1 - e⁻ˣ), a = ½
// (erf √x, erfc √x, √x rounded: the tolerance carries its half ulp),
// integer a (Q(n, x) = e⁻ˣ·Σₖ₍<ₙ₎ xᵏ/k!, a Poisson's CDF); P + Q = 1; the
// recurrence P(a+1, x) = P(a, x) - D(a, x); the special cases; NaN where
// the steps do not converge.
func TestIncompleteGammaClosedForms(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 43))
	rel := func(got, want float64) float64 {
		if got == want {
			return 0
		}
		return math.Abs(got-want) / math.Abs(want)
	}
	for range 400 {
		x := math.Exp(r.Float64()*12 - 7)
		if e := rel(Igamma(1, x), -math.Expm1(-x)); e > 8e-16 {
			t.Errorf("P(1, %v) = %v, want %v", x, Igamma(1, x), -math.Expm1(-x))
		}
		if q := math.Exp(-x); rel(Igammac(1, x), q) > (4+x)*0x1p-52 {
			t.Errorf("Q(1, %v) = %v, want %v", x, Igammac(1, x), q)
		}
		s := math.Sqrt(x)
		if e := rel(Igamma(0.5, x), math.Erf(s)); e > 1e-15 {
			t.Errorf("P(½, %v) = %v, want erf(√x) = %v", x, Igamma(0.5, x), math.Erf(s))
		}
		if e := rel(Igammac(0.5, x), math.Erfc(s)); e > (32+2*x)*0x1p-52 { // the fraction near x = 2, and √x's rounding
			t.Errorf("Q(½, %v) = %v, want erfc(√x) = %v (%.3g)", x, Igammac(0.5, x), math.Erfc(s), e)
		}
		n := 1 + r.IntN(30)
		xn := float64(n) * math.Exp(r.NormFloat64()*0.5)
		sum, term := 0.0, 1.0
		for k := range n {
			sum += term
			term *= xn / float64(k+1)
		}
		poisson := math.Exp(-xn) * sum
		if e := rel(Igammac(float64(n), xn), poisson); e > (16+2*xn)*0x1p-52 {
			t.Errorf("Q(%d, %v) = %v, want %v (%.3g)", n, xn, Igammac(float64(n), xn), poisson, e)
		}
		a := math.Exp(r.Float64()*10 - 4)
		p, q := IncompleteGamma(a, x)
		if math.Abs(p+q-1) > 4*0x1p-52 {
			t.Errorf("P + Q at (%v, %v) = %v", a, x, p+q)
		}
		p1, _ := IncompleteGamma(a+1, x)
		if d := gammaPrefactor(a, x); math.Abs(p-d-p1) > 1e-14*max(p, 1e-300) && p > 1e-200 {
			t.Errorf("P(a+1, x) ≠ P(a, x) - D at (%v, %v): %v, %v", a, x, p1, p-d)
		}
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct{ a, x, p, q float64 }{
		{0, 0, nan, nan}, {0, 1, 1, 0}, {1, 0, 0, 1}, {1, inf, 1, 0}, {inf, 1, 0, 1}, {inf, inf, nan, nan},
		{-1, 1, nan, nan}, {1, -1, nan, nan}, {nan, 1, nan, nan}, {2, nan, nan, nan}, {0, inf, 1, 0}, {inf, 0, 0, 1},
		{1e12, 1e12, nan, nan}, // past IgammaSteps: not converged
	} {
		p, q := IncompleteGamma(c.a, c.x)
		same := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
		if !same(p, c.p) || !same(q, c.q) {
			t.Errorf("IncompleteGamma(%v, %v) = %v, %v; want %v, %v", c.a, c.x, p, q, c.p, c.q)
		}
	}
}

// Log1pmx matches ln(1+u) - u computed in two steps where that does not
// cancel, and its Taylor series u²/2 - ... where it does.
func TestLog1pmx(t *testing.T) {
	for _, u := range []float64{-0.9, -0.6, 0.7, 3} {
		if got, want := Log1pmx(u), math.Log1p(u)-u; got != want {
			t.Errorf("Log1pmx(%v) = %v, want %v", u, got, want)
		}
	}
	for _, u := range []float64{1e-9, -1e-9, 1e-3, -0.3, 0.45} {
		want := 0.0
		for k := 60; k >= 2; k-- { // Σ (-1)ᵏ⁺¹·uᵏ/k from k = 2
			want += math.Pow(-1, float64(k+1)) * math.Pow(u, float64(k)) / float64(k)
		}
		if math.Abs(Log1pmx(u)-want) > 4*0x1p-52*math.Abs(want) {
			t.Errorf("Log1pmx(%v) = %v, want %v", u, Log1pmx(u), want)
		}
	}
}
