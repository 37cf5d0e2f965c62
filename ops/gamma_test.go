package ops_test

import (
	"errors"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The gamma family at its closed forms (ln Γ of integers and halves, ψ
// as harmonic numbers less γ, ψ⁽ⁿ⁾(1) and ζ(s, 1) as Riemann's ζ),
// through its recurrences, float32 rounded once from float64, and its
// gradients, each the next function of the family, to the third order.
func TestGammaFamily(t *testing.T) {
	const euler = 0.5772156649015329
	zeta3 := 1.2020569031595942
	near := func(name string, got, want, rel float64) {
		t.Helper()
		if got != want && !(math.Abs(got-want) <= rel*math.Abs(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	at := func(f func(*tensor.Tensor) *tensor.Tensor, xs ...float64) []float64 {
		return tensor.ToSlice[float64](f(tensor.FromSlice(xs)))
	}
	lg := at(ops.Lgamma, 1, 2, 5, 0.5, -0.5, 20, 1e-300)
	for i, want := range []float64{0, 0, math.Log(24), math.Log(math.Sqrt(math.Pi)), math.Log(2 * math.Sqrt(math.Pi)), math.Log(121645100408832000), 690.7755278982137} {
		near("Lgamma", lg[i], want, 4e-16)
	}
	dg := at(ops.Digamma, 1, 2, 5, 0.5, -0.5)
	for i, want := range []float64{-euler, 1 - euler, 1 + 0.5 + 1.0/3 + 0.25 - euler, -euler - 2*math.Ln2, 0.03648997397857652} { // ψ(-½) = 2 - γ - 2 ln 2 (mpmath)
		near("Digamma", dg[i], want, 4e-16)
	}
	pg := func(n int, xs ...float64) []float64 {
		return at(func(x *tensor.Tensor) *tensor.Tensor { return ops.Polygamma(n, x) }, xs...)
	}
	near("Polygamma(1, 1)", pg(1, 1)[0], math.Pi*math.Pi/6, 4e-16)
	near("Polygamma(1, 0.5)", pg(1, 0.5)[0], math.Pi*math.Pi/2, 4e-16)
	near("Polygamma(2, 1)", pg(2, 1)[0], -2*zeta3, 4e-16)
	near("Polygamma(3, 1)", pg(3, 1)[0], math.Pow(math.Pi, 4)/15, 4e-16)
	near("Polygamma(0, 2)", pg(0, 2)[0], 1-euler, 4e-16)
	z := tensor.ToSlice[float64](ops.Zeta(tensor.FromSlice([]float64{2, 4, 3}), tensor.FromSlice([]float64{1})))
	for i, want := range []float64{math.Pi * math.Pi / 6, math.Pow(math.Pi, 4) / 90, zeta3} {
		near("Zeta(s, 1)", z[i], want, 4e-16)
	}
	// ψ⁽ⁿ⁾(x) - ψ⁽ⁿ⁾(x + 1) = (-1)ⁿ⁺¹·n!/xⁿ⁺¹ (ψ(x+1) - ψ(x) = 1/x).
	for n, fact := range []float64{1, 1, 2, 6} {
		for _, x := range []float64{0.3, 1.7, 4.2, -2.6} {
			v := pg(n, x, x+1)
			want := fact / math.Pow(x, float64(n+1))
			if n%2 == 0 {
				want = -want
			}
			if n == 0 {
				want = -1 / x
			}
			if d := v[0] - v[1]; math.Abs(d-want) > 1e-14*(math.Abs(v[0])+math.Abs(v[1])) {
				t.Errorf("ψ⁽%d⁾(%v) - ψ⁽%d⁾(%v) = %v, want %v", n, x, n, x+1, d, want)
			}
		}
	}
	xs := []float64{0.01, 0.4, 1.3, 2.7, 9.5, 33, -1.5, -3.25}
	x64 := tensor.FromSlice(xs)
	x32 := ops.Cast(x64, tensor.Float32)
	for name, f := range map[string]func(*tensor.Tensor) *tensor.Tensor{"Lgamma": ops.Lgamma, "Digamma": ops.Digamma,
		"Polygamma(2)": func(x *tensor.Tensor) *tensor.Tensor { return ops.Polygamma(2, x) }} {
		want := tensor.ToSlice[float32](ops.Cast(f(ops.Cast(x32, tensor.Float64)), tensor.Float32))
		if got := tensor.ToSlice[float32](f(x32)); !equalBits32(got, want) {
			t.Errorf("float32 %s = %v, want float64's rounded once %v", name, got, want)
		}
	}

	// d/dx ln Γ = ψ, d²/dx² = ψ⁽¹⁾, d³/dx³ = ψ⁽²⁾; d/dq ζ(s, q) = -s·ζ(s+1, q)
	// and nothing for s.
	t3, t2, t1 := tape.New(), tape.New(), tape.New() // nested: each records the next one's gradient
	t3.Watch(x64)
	t2.Watch(x64)
	t1.Watch(x64)
	g1 := t1.Gradient(ops.Sum(ops.Lgamma(x64)), x64)[0]
	g2 := t2.Gradient(ops.Sum(g1), x64)[0]
	g3 := t3.Gradient(ops.Sum(g2), x64)[0]
	for i, x := range xs {
		near("ln Γ'", tensor.ToSlice[float64](g1)[i], at(ops.Digamma, x)[0], 0)
		near("ln Γ''", tensor.ToSlice[float64](g2)[i], pg(1, x)[0], 0)
		near("ln Γ'''", tensor.ToSlice[float64](g3)[i], pg(2, x)[0], 0)
	}
	s, q := tensor.FromSlice([]float64{2.5, 3}), tensor.FromSlice([]float64{0.7, 4})
	tq := tape.New()
	tq.Watch(s, q)
	g := tq.Gradient(ops.Sum(ops.Zeta(s, q)), s, q)
	next := tensor.ToSlice[float64](ops.Zeta(tensor.FromSlice([]float64{3.5, 4}), q))
	for i, sv := range []float64{2.5, 3} {
		near("dζ/dq", tensor.ToSlice[float64](g[1])[i], -sv*next[i], 0)
	}
	if g[0] != nil && tensor.ToSlice[float64](ops.Sum(ops.Abs(g[0])))[0] != 0 {
		t.Errorf("Zeta's gradient in s = %v, want none", g[0])
	}
}

// Polygamma's order is checked: negative, or past 170 where n! overflows.
func TestPolygammaOrderErrors(t *testing.T) {
	for _, n := range []int{-1, 171} {
		_, err := catch(func() *tensor.Tensor { return ops.Polygamma(n, tensor.FromSlice([]float64{1})) })
		var te *tensor.Error
		if !errors.As(err, &te) || !errors.Is(err, tensor.ErrValue) {
			t.Errorf("Polygamma(%d, x): error %v, want a tensor.ErrValue", n, err)
		}
	}
}

// Igamma and Igammac: closed forms (P(1, x) = 1 - e⁻ˣ, Q(½, x) = erfc √x,
// Q(3, x) a Poisson's CDF), P + Q = 1 broadcast over a batch of a, float32
// as float64's rounded once, the x-gradient the Gamma density, and bad
// inputs.
func TestIncompleteGamma(t *testing.T) {
	x := tensor.FromSlice([]float64{0.01, 0.5, 2, 9}, 4)
	p1 := tensor.ToSlice[float64](ops.Igamma(tensor.Scalar(1.0), x))
	qh := tensor.ToSlice[float64](ops.Igammac(tensor.Scalar(0.5), x))
	q3 := tensor.ToSlice[float64](ops.Igammac(tensor.Scalar(3.0), x))
	for i, v := range tensor.ToSlice[float64](x) {
		if want := -math.Expm1(-v); math.Abs(p1[i]-want) > 4e-16*want {
			t.Errorf("P(1, %v) = %v, want %v", v, p1[i], want)
		}
		if want := math.Erfc(math.Sqrt(v)); math.Abs(qh[i]-want) > 1e-14*want {
			t.Errorf("Q(½, %v) = %v, want %v", v, qh[i], want)
		}
		if want := math.Exp(-v) * (1 + v + v*v/2); math.Abs(q3[i]-want) > 1e-14*want {
			t.Errorf("Q(3, %v) = %v, want %v", v, q3[i], want)
		}
	}
	a := tensor.FromSlice([]float64{0.1, 1, 4, 30}, 4, 1)
	sum := ops.Add(ops.Igamma(a, x), ops.Igammac(a, x)) // [4 4]
	if d := maxAbsDiff(sum, tensor.Ones(tensor.Float64, 4, 4)); d > 4e-16 {
		t.Errorf("P + Q is %g off 1", d)
	}
	a32, x32 := ops.Cast(a, tensor.Float32), ops.Cast(x, tensor.Float32)
	want32 := ops.Cast(ops.Igamma(ops.Cast(a32, tensor.Float64), ops.Cast(x32, tensor.Float64)), tensor.Float32)
	if d := maxAbsDiff(ops.Igamma(a32, x32), want32); d != 0 {
		t.Errorf("float32 is not float64's rounded once: %g", d)
	}
	tp := tape.New()
	tp.Watch(x)
	g := tp.Gradient(ops.Sum(ops.Igammac(tensor.Scalar(2.5), x)), x)[0] // -x^1.5·e⁻ˣ/Γ(2.5)
	for i, v := range tensor.ToSlice[float64](x) {
		want := -math.Pow(v, 1.5) * math.Exp(-v) / math.Gamma(2.5)
		if got := tensor.ToSlice[float64](g)[i]; math.Abs(got-want) > 1e-14*math.Abs(want) {
			t.Errorf("dQ(2.5, x)/dx at %v = %v, want %v", v, got, want)
		}
	}
	tp = tape.New()
	tp.Watch(x)
	if g := tensor.ToSlice[float64](tp.Gradient(ops.Sum(ops.Igamma(tensor.Scalar(1.0), ops.Sub(x, x))), x)[0]); g[0] != 0 {
		t.Errorf("the density at a = 1, x = 0 gave %v through x - x, want 0 (1 - 1)", g)
	}
	runBadInput(t, []badInput{
		{"int32", func() { ops.Igamma(tensor.Zeros(tensor.Int32, 2), tensor.Zeros(tensor.Int32, 2)) }, tensor.ErrDType, "int32"},
		{"dtypes differ", func() { ops.Igammac(tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Float64, 2)) }, tensor.ErrDType, ""},
		{"shapes", func() { ops.Igamma(tensor.Zeros(tensor.Float64, 2), tensor.Zeros(tensor.Float64, 3)) }, tensor.ErrShape, ""},
	})
}
