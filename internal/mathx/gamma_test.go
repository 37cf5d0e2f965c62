package mathx

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"testing"
)

// bigLogOf is ln y for y > 0 to the reference's precision.
func bigLogOf(y *big.Float) *big.Float {
	m := new(big.Float).SetPrec(prec)
	e := y.MantExp(m) // y = m·2^e, m in [½, 1)
	s := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Sub(m, bigf(1)), new(big.Float).SetPrec(prec).Add(m, bigf(1)))
	r := new(big.Float).SetPrec(prec).Mul(bigf(2), atanhSeries(s))
	return r.Add(r, new(big.Float).SetPrec(prec).Mul(bigf(float64(e)), bigLn2))
}

// refDigamma is ψ(x) for x > 0 to the reference's precision: ψ(x + 60)
// by forty terms of its asymptotic series, less Σ 1/(x + k).
func refDigamma(x float64) float64 {
	b := refBernoulli()
	y := new(big.Float).SetPrec(prec).Add(bigf(x), bigf(60))
	sum := bigLogOf(y)
	sum.Sub(sum, new(big.Float).SetPrec(prec).Quo(bigf(0.5), y))
	y2 := new(big.Float).SetPrec(prec).Mul(y, y)
	pow := new(big.Float).SetPrec(prec).Set(y2)
	for k := 1; k <= 40; k++ {
		t := new(big.Float).SetPrec(prec).SetRat(b[2*k])
		t.Quo(t, new(big.Float).SetPrec(prec).Mul(bigf(float64(2*k)), pow))
		sum.Sub(sum, t)
		pow.Mul(pow, y2)
	}
	for k := 59; k >= 0; k-- {
		sum.Sub(sum, new(big.Float).SetPrec(prec).Quo(bigf(1), new(big.Float).SetPrec(prec).Add(bigf(x), bigf(float64(k)))))
	}
	v, _ := sum.Float64()
	return v
}

var refBernoulli = sync.OnceValue(func() []*big.Rat { return bernoulli(80) })

// refZeta is ζ(s, q) for an integer s ≥ 2 and any non-integer q > -30:
// the terms of negative q + k summed, bigZeta past them.
func refZeta(s int, q float64) float64 {
	b := bernoulli(40)
	sum := new(big.Float).SetPrec(seriesPrec)
	c := new(big.Float).SetPrec(seriesPrec).SetFloat64(q)
	for c.Sign() < 0 {
		p := new(big.Float).SetPrec(seriesPrec).SetInt64(1)
		for range s {
			p.Mul(p, c)
		}
		sum.Add(sum, p.Quo(new(big.Float).SetInt64(1), p))
		c.Add(c, new(big.Float).SetInt64(1))
	}
	v, _ := sum.Add(sum, bigZeta(s, c, b)).Float64()
	return v
}

// bigPi is π to the reference's precision: 16·atan(1/5) - 4·atan(1/239)
// (Machin's).
var bigPi = func() *big.Float {
	atanInv := func(n float64) *big.Float { // Σ (-1)ᵏ/((2k+1)·n^(2k+1))
		x := new(big.Float).SetPrec(prec).Quo(bigf(1), bigf(n))
		x2 := new(big.Float).SetPrec(prec).Mul(x, x)
		sum, pow := new(big.Float).SetPrec(prec).Set(x), new(big.Float).SetPrec(prec).Set(x)
		for k := 1; k < 250; k++ {
			pow.Mul(pow, x2)
			t := new(big.Float).SetPrec(prec).Quo(pow, bigf(float64(2*k+1)))
			if k%2 == 1 {
				t.Neg(t)
			}
			sum.Add(sum, t)
		}
		return sum
	}
	p := new(big.Float).SetPrec(prec).Mul(bigf(16), atanInv(5))
	return p.Sub(p, new(big.Float).SetPrec(prec).Mul(bigf(4), atanInv(239)))
}()

// refPiCotPi is π·cot(πx) to the reference's precision (sine and cosine
// by their series of πx reduced by the nearest integer).
func refPiCotPi(x float64) float64 {
	y := new(big.Float).SetPrec(prec).Mul(bigPi, bigf(x-math.Round(x)))
	y2 := new(big.Float).SetPrec(prec).Mul(y, y)
	sin, cos := new(big.Float).SetPrec(prec).Set(y), bigf(1)
	ts, tc := new(big.Float).SetPrec(prec).Set(y), bigf(1)
	for k := 1; k < 80; k++ {
		tc.Mul(tc, y2).Quo(tc, bigf(float64(-(2*k-1)*(2*k))))
		ts.Mul(ts, y2).Quo(ts, bigf(float64(-(2*k)*(2*k+1))))
		cos.Add(cos, tc)
		sin.Add(sin, ts)
	}
	v, _ := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Mul(bigPi, cos), sin).Float64()
	return v
}

func TestBernoulliNumbers(t *testing.T) {
	b := bernoulli(12)
	for n, want := range map[int]*big.Rat{1: big.NewRat(-1, 2), 2: big.NewRat(1, 6), 4: big.NewRat(-1, 30),
		5: new(big.Rat), 12: big.NewRat(-691, 2730)} {
		if b[n].Cmp(want) != 0 {
			t.Errorf("B%d = %v, want %v", n, b[n], want)
		}
	}
}

// Digamma is within 2 ulps of ψ computed to 300 bits for x > 0: about
// its zero x₀ (where ψ(x₀ + d) ≈ 0.97d), at the series' and
// recurrences' boundaries, and over magnitudes from 1e-300 to 1e300.
func TestDigammaWithinTwoUlps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	xs := []float64{1, 1.5, 2, 2.5, 1.76, math.Nextafter(1.76, 0), 10, math.Nextafter(10, 0), 0.75, 1e-300, 3, 4.5}
	x0 := GammaSeries().DigammaRoot.Hi
	for i := -20; i <= 20; i++ {
		xs = append(xs, x0+float64(i)*0x1p-52, x0*(1+float64(i)*1e-6))
	}
	for range 600 {
		xs = append(xs, r.Float64()*3, r.Float64()*12, math.Exp(r.Float64()*80-40), x0+r.NormFloat64()*1e-3)
	}
	for range 40 {
		xs = append(xs, math.Exp(r.Float64()*1380-690))
	}
	worst := 0.0
	for _, x := range xs {
		want := refDigamma(x)
		u := ulpsOff(Digamma(x), want)
		if u > 2 {
			t.Errorf("Digamma(%v) = %v, want %v (%.1f ulps)", x, Digamma(x), want, u)
		}
		worst = max(worst, u)
	}
	t.Logf("%d values, worst %.2f ulps", len(xs), worst)
}

// Negative x: the reflection, within a few ulps of its largest term
// (ψ's negative zeros cancel it).
func TestDigammaOfNegativeX(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	for range 300 {
		x := -r.Float64() * 20
		if x == math.Trunc(x) {
			continue
		}
		cot := refPiCotPi(x)
		want := refDigamma(1-x) - cot
		scale := math.Max(math.Abs(cot), math.Abs(refDigamma(1-x)))
		if got := Digamma(x); math.Abs(got-want) > 4*scale*0x1p-52 {
			t.Errorf("Digamma(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestGammaFamilySpecialValues(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"Digamma(+0)", Digamma(0), -inf},
		{"Digamma(-0)", Digamma(math.Copysign(0, -1)), inf},
		{"Digamma(-2)", Digamma(-2), nan},
		{"Digamma(-inf)", Digamma(-inf), nan},
		{"Digamma(+inf)", Digamma(inf), inf},
		{"Digamma(nan)", Digamma(nan), nan},
		{"Digamma(1)", Digamma(1), -0.5772156649015329},
		{"Digamma(0.5)", Digamma(0.5), -1.9635100260214235},
		{"Digamma(-0.5)", Digamma(-0.5), 0.03648997397857652},
		{"Lgamma(0)", Lgamma(0), inf},
		{"Lgamma(-3)", Lgamma(-3), inf},
		{"Lgamma(-inf)", Lgamma(-inf), inf},
		{"Lgamma(inf)", Lgamma(inf), inf},
		{"Lgamma(5e-324)", Lgamma(5e-324), 744.4400719213812},
		{"Lgamma(-1e-310)", Lgamma(-1e-310), 713.8013788281542},
		{"Lgamma(0.5)", Lgamma(0.5), 0.5723649429247001},
		{"Lgamma(-5e-324)", Lgamma(-5e-324), 744.4400719213812},
		{"Lgamma(-1e300)", Lgamma(-1e300), inf},
		{"Lgamma(nan)", Lgamma(nan), nan},
		{"Digamma(-5e-324)", Digamma(-5e-324), inf},
		{"Digamma(-1e-300)", Digamma(-1e-300), 1e300},
		{"Zeta(1, 2)", Zeta(1, 2), inf},
		{"Zeta(0.5, 2)", Zeta(0.5, 2), nan},
		{"Zeta(2, 0)", Zeta(2, 0), inf},
		{"Zeta(2, -3)", Zeta(2, -3), inf},
		{"Zeta(2.5, -1.5)", Zeta(2.5, -1.5), nan},
		{"Zeta(2, inf)", Zeta(2, inf), 0},
		{"Zeta(2, -inf)", Zeta(2, -inf), nan},
		{"Zeta(inf, 1)", Zeta(inf, 1), 1},
		{"Zeta(inf, 2)", Zeta(inf, 2), 0},
		{"Zeta(inf, 0.5)", Zeta(inf, 0.5), inf},
		{"Zeta(2, 1)", Zeta(2, 1), math.Pi * math.Pi / 6},
		{"Zeta(4, -2.5)", Zeta(4, -2.5), 32.4579793698646},
		{"Polygamma(1, 0)", Polygamma(1, 0), inf},
		{"Polygamma(2, -1)", Polygamma(2, -1), -inf},
		{"Polygamma(2, inf)", Polygamma(2, inf), math.Copysign(0, -1)},
		{"Polygamma(1, inf)", Polygamma(1, inf), 0},
		{"Polygamma(1, -inf)", Polygamma(1, -inf), nan},
		{"Polygamma(1.5, 1)", Polygamma(1.5, 1), nan},
		{"Polygamma(-1, 1)", Polygamma(-1, 1), nan},
		{"Polygamma(1, 1)", Polygamma(1, 1), math.Pi * math.Pi / 6},
		{"Polygamma(0, 1)", Polygamma(0, 1), -0.5772156649015329},
		{"Factorial(170)", Factorial(170), 7.257415615307999e+306},
	} {
		same := c.got == c.want && math.Signbit(c.got) == math.Signbit(c.want) || math.IsNaN(c.got) && math.IsNaN(c.want)
		if !same && !(math.Abs(c.got-c.want) <= 2e-16*math.Abs(c.want)) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// Zeta is within a few ulps of ζ(s, q) computed to 192 bits for integer
// s (Polygamma's orders) and q of both signs; Polygamma is its multiple.
func TestZetaAndPolygammaAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	worst := 0.0
	for range 400 {
		s := 2 + r.IntN(8)
		q := math.Exp(r.Float64()*12 - 6)
		if r.IntN(3) == 0 {
			q = -r.Float64() * 25
		}
		want := refZeta(s, q)
		u := ulpsOff(Zeta(float64(s), q), want)
		limit := 4.0
		if q < 0 {
			// The sum of terms of both signs (odd s) cancels between
			// poles: within a few ulps of its largest term.
			limit = 4 * math.Max(1, math.Abs(refZeta(s, q-math.Floor(q)))/math.Abs(want))
		}
		if u > limit {
			t.Errorf("Zeta(%d, %v) = %v, want %v (%.1f ulps)", s, q, Zeta(float64(s), q), want, u)
		}
		if q > 0 {
			worst = max(worst, u)
		}
		n := float64(s - 1)
		sign := 1.0
		if s%2 == 1 {
			sign = -1
		}
		if pu := ulpsOff(Polygamma(n, q), sign*Factorial(n)*want); pu > limit+1 {
			t.Errorf("Polygamma(%v, %v) = %v, want %v", n, q, Polygamma(n, q), sign*Factorial(n)*want)
		}
	}
	t.Logf("positive q: worst %.2f ulps", worst)
}

// refLgamma is ln Γ(x) for x > 0 to the reference's precision:
// Stirling's series at y = x + 60 (forty terms) less ln Π (x + k).
func refLgamma(x float64) float64 {
	b := refBernoulli()
	y := new(big.Float).SetPrec(prec).Add(bigf(x), bigf(60))
	prod := bigf(1)
	for k := range 60 {
		prod.Mul(prod, new(big.Float).SetPrec(prec).Add(bigf(x), bigf(float64(k))))
	}
	twoPi := new(big.Float).SetPrec(prec).Mul(bigf(2), bigPi)
	sum := new(big.Float).SetPrec(prec).Mul(new(big.Float).SetPrec(prec).Sub(y, bigf(0.5)), bigLogOf(y))
	sum.Sub(sum, y)
	sum.Add(sum, new(big.Float).SetPrec(prec).Quo(bigLogOf(twoPi), bigf(2)))
	pow := new(big.Float).SetPrec(prec).Set(y) // y^(2k-1)
	y2 := new(big.Float).SetPrec(prec).Mul(y, y)
	for k := 1; k <= 40; k++ {
		t := new(big.Float).SetPrec(prec).SetRat(b[2*k])
		t.Quo(t, new(big.Float).SetPrec(prec).Mul(bigf(float64(2*k*(2*k-1))), pow))
		sum.Add(sum, t)
		pow.Mul(pow, y2)
	}
	v, _ := sum.Sub(sum, bigLogOf(prod)).Float64()
	if math.Abs(v) < 1e-70 { // ln Γ(1) and ln Γ(2): the reference's precision
		return 0
	}
	return v
}

// Lgamma is within 2 ulps of ln Γ computed to 300 bits for x > 0, about
// its zeros at 1 and 2 and at its regions' ends too; math.Lgamma's errors
// on the same values are logged (hundreds of ulps near 1.2).
func TestLgammaWithinTwoUlps(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	xs := []float64{0.75, 1.25, 1.75, 2.5, 10, math.Nextafter(10, 0), math.Nextafter(2.5, 0), 1.1929000000000334, 0x1p-60, 1e-10, 3, 0.5}
	for i := -20; i <= 20; i++ {
		xs = append(xs, 1+float64(i)*0x1p-52, 2+float64(i)*0x1p-51, 1+float64(i)*1e-5, 2+float64(i)*1e-5)
	}
	for range 500 {
		xs = append(xs, r.Float64()*3, r.Float64()*12, math.Exp(r.Float64()*60-30))
	}
	worst, worstGo := 0.0, 0.0
	for _, x := range xs {
		want := refLgamma(x)
		u := ulpsOff(Lgamma(x), want)
		if u > 2 {
			t.Errorf("Lgamma(%v) = %v, want %v (%.1f ulps)", x, Lgamma(x), want, u)
		}
		worst = max(worst, u)
		g, _ := math.Lgamma(x)
		worstGo = max(worstGo, ulpsOff(g, want))
	}
	t.Logf("%d values: worst %.2f ulps (math.Lgamma's %.0f)", len(xs), worst, worstGo)
}

// Negative x: the reflection, within a few ulps of its largest term.
func TestLgammaOfNegativeX(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 23))
	for range 200 {
		x := -r.Float64() * 30
		if x == math.Trunc(x) {
			continue
		}
		lsin := math.Log(math.Abs(math.Sin(math.Pi * (x - math.Round(x)))))
		want := LnPi - lsin - refLgamma(1-x)
		scale := math.Abs(lsin) + math.Abs(refLgamma(1-x)) + LnPi
		if got := Lgamma(x); math.Abs(got-want) > 4*scale*0x1p-52 {
			t.Errorf("Lgamma(%v) = %v, want %v", x, got, want)
		}
	}
}

// The series agree with the recurrences where their ranges meet.
func TestGammaSeriesAtTheirEnds(t *testing.T) {
	g := GammaSeries()
	for _, c := range []struct {
		name   string
		s      Series
		x      float64
		want   float64
		within float64 // ulps
	}{
		{"DigammaRoot at x₀", g.DigammaRoot, g.DigammaRoot.Hi, refDigamma(g.DigammaRoot.Hi), 1},
		{"DigammaRoot at 1", g.DigammaRoot, 1, refDigamma(1), 1},
		{"DigammaRoot at 1.76", g.DigammaRoot, 1.76, refDigamma(1.76), 1},
		{"DigammaTwo at 1.76", g.DigammaTwo, 1.76, refDigamma(1.76), 1},
		{"DigammaTwo at 2.5", g.DigammaTwo, 2.5, refDigamma(2.5), 1},
		{"LgammaOne at 0.75", g.LgammaOne, 0.75, refLgamma(0.75), 1},
		{"LgammaOne at 1.25", g.LgammaOne, 1.25, refLgamma(1.25), 1},
		{"LgammaHalf at 1.25", g.LgammaHalf, 1.25, refLgamma(1.25), 1},
		{"LgammaHalf at 1.75", g.LgammaHalf, 1.75, refLgamma(1.75), 1},
		{"LgammaTwo at 2.5", g.LgammaTwo, 2.5, refLgamma(2.5), 1},
		{"LgammaTwo at 1.75", g.LgammaTwo, 1.75, refLgamma(1.75), 1},
	} {
		if u := ulpsOff(c.s.At(c.x), c.want); u > c.within {
			t.Errorf("%s = %v, want %v (%.1f ulps)", c.name, c.s.At(c.x), c.want, u)
		}
	}
}

// gammaBenchInputs are |N(0, 1)| + 0.1, the op-step benchmark's Lgamma
// inputs.
var gammaBenchInputs = func() []float64 {
	r := rand.New(rand.NewPCG(29, 31))
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = math.Abs(r.NormFloat64()) + 0.1
	}
	return xs
}()

var gammaBenchSink float64

func BenchmarkLgamma(b *testing.B) {
	for b.Loop() {
		for _, x := range gammaBenchInputs {
			gammaBenchSink += Lgamma(x)
		}
	}
}

func BenchmarkDigamma(b *testing.B) {
	for b.Loop() {
		for _, x := range gammaBenchInputs {
			gammaBenchSink += Digamma(x)
		}
	}
}
