package mathx

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// Log2 and Log10 are within an ulp of the 300-bit logarithm over
// positive values of every magnitude (subnormal ones included), exact at
// the powers of their base, and take math.Log's special cases.
func TestLog2AndLog10(t *testing.T) {
	bigLn10 := bigLog(10)
	r := rand.New(rand.NewPCG(3, 9))
	for _, c := range []struct {
		name  string
		f     func(float64) float64
		lnB   *big.Float
		power func(k int) (float64, bool)
	}{
		{"Log2", Log2, bigLn2, func(k int) (float64, bool) { return math.Ldexp(1, k), k >= -1074 && k <= 1023 }},
		{"Log10", Log10, bigLn10, func(k int) (float64, bool) {
			v := math.Pow(10, float64(k)) // exact for 0 ≤ k ≤ 22
			return v, k >= 0 && k <= 22
		}},
	} {
		worst := 0.0
		for i := range 20000 {
			x := math.Ldexp(1+r.Float64(), r.IntN(2098)-1074)
			if i%7 == 0 {
				x = 1 + (r.Float64()-0.5)*math.Ldexp(1, -r.IntN(50)) // near 1, where the result is small
			}
			want, _ := new(big.Float).SetPrec(prec).Quo(bigLog(x), c.lnB).Float64()
			if d := ulpsOff(c.f(x), want); d > worst {
				worst = d
				if d > 1 {
					t.Errorf("%s(%v) = %v, want %v (%.2g ulps)", c.name, x, c.f(x), want, d)
				}
			}
		}
		t.Logf("%s: worst %.3g ulps", c.name, worst)
		for k := -1100; k <= 1100; k++ {
			if v, ok := c.power(k); ok && c.f(v) != float64(k) {
				t.Errorf("%s(%v) = %v, want %d", c.name, v, c.f(v), k)
			}
		}
		for _, s := range []struct{ x, want float64 }{{0, math.Inf(-1)}, {math.Copysign(0, -1), math.Inf(-1)},
			{math.Inf(1), math.Inf(1)}, {-1, math.NaN()}, {math.Inf(-1), math.NaN()}, {math.NaN(), math.NaN()}} {
			if got := c.f(s.x); got != s.want && !(math.IsNaN(got) && math.IsNaN(s.want)) {
				t.Errorf("%s(%v) = %v, want %v", c.name, s.x, got, s.want)
			}
		}
	}
}

// InvLn2 and InvLn10 are 1/ln 2 and 1/ln 10 to 300 bits: hi the nearest
// float64, lo the rest's.
func TestInverseLogConstants(t *testing.T) {
	for _, c := range []struct {
		name   string
		hi, lo float64
		x      float64
	}{{"1/ln 2", InvLn2Hi, InvLn2Lo, 2}, {"1/ln 10", InvLn10Hi, InvLn10Lo, 10}} {
		inv := new(big.Float).SetPrec(prec).Quo(bigf(1), bigLog(c.x))
		hi, _ := inv.Float64()
		lo, _ := new(big.Float).SetPrec(prec).Sub(inv, bigf(hi)).Float64()
		if hi != c.hi || lo != c.lo {
			t.Errorf("%s: %v + %v, want %v + %v", c.name, c.hi, c.lo, hi, lo)
		}
	}
}

// bigTan is tan x to 300 bits, rounded: x reduced by π/2 (from Machin's
// series) to 300 bits past x's magnitude, sin and cos of the rest by
// their series.
func bigTan(x float64) float64 {
	_, e := math.Frexp(x)
	p := uint(prec + max(e, 0))
	pi := new(big.Float).SetPrec(p).SetInt(new(big.Int).Sub(new(big.Int).Mul(big.NewInt(16), atanInv(5, p+64)), new(big.Int).Mul(big.NewInt(4), atanInv(239, p+64))))
	pi.SetMantExp(pi, -int(p+64))
	halfPi := new(big.Float).SetPrec(p).Quo(pi, new(big.Float).SetPrec(p).SetInt64(2))
	bx := new(big.Float).SetPrec(p).SetFloat64(x)
	qf := new(big.Float).SetPrec(p).Quo(bx, halfPi)
	kb, _ := qf.Add(qf, new(big.Float).SetFloat64(math.Copysign(0.5, x))).Int(nil) // the nearest integer
	r := new(big.Float).SetPrec(p).Sub(bx, new(big.Float).SetPrec(p).Mul(new(big.Float).SetPrec(p).SetInt(kb), halfPi))
	r2 := new(big.Float).SetPrec(p).Mul(r, r)
	sum := func(start int) *big.Float { // Σ (-1)^i r^(2i+start)/(2i+start)!
		term := new(big.Float).SetPrec(p).SetInt64(1)
		if start == 1 {
			term.Set(r)
		}
		total := new(big.Float).SetPrec(p).Set(term)
		for n := start + 1; n < 400; n += 2 {
			term.Mul(term, r2)
			term.Quo(term, new(big.Float).SetPrec(p).SetInt64(int64(n*(n+1))))
			term.Neg(term)
			total.Add(total, term)
		}
		return total
	}
	s, c := sum(1), sum(0)
	if new(big.Int).And(kb, big.NewInt(1)).Sign() != 0 {
		v, _ := new(big.Float).SetPrec(p).Quo(c, s).Float64()
		return -v
	}
	v, _ := new(big.Float).SetPrec(p).Quo(s, c).Float64()
	return v
}

// Tan is within 2 ulps of the 300-bit tangent over arguments of every
// magnitude, near the poles and at π/2's float64 (where math.Tan errs
// by 11 ulps) and at the largest float64; ±0, ±Inf and NaN as C's.
func TestTanWithinTwoUlps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	xs := []float64{math.Pi / 2, -math.Pi / 2, math.Pi, 3 * math.Pi / 2, math.MaxFloat64, -math.MaxFloat64, 6.91442172269978e+78,
		-1.6734626853394637e+37, 0x1p28, 0x1p28 - 1, 1e-300, 5e-324, 0.785398163397448, 1e22}
	for range 3000 {
		xs = append(xs, math.Ldexp(r.Float64()+0.5, r.IntN(1075)-52)*float64(1-2*r.IntN(2)))
	}
	for k := 1; k < 200; k++ { // near the poles
		xs = append(xs, float64(2*k-1)*math.Pi/2, math.Nextafter(float64(2*k-1)*math.Pi/2, 0))
	}
	worst, mathWorst := 0.0, 0.0
	for _, x := range xs {
		want := bigTan(x)
		if d := ulpsOff(Tan(x), want); d > worst {
			worst = d
			if d > 2 {
				t.Errorf("Tan(%v) = %v, want %v (%.3g ulps)", x, Tan(x), want, d)
			}
		}
		mathWorst = max(mathWorst, ulpsOff(math.Tan(x), want))
	}
	t.Logf("Tan: worst %.3g ulps (math.Tan: %.3g)", worst, mathWorst)
	for _, s := range []struct{ x, want float64 }{{0, 0}, {math.Copysign(0, -1), math.Copysign(0, -1)},
		{math.Inf(1), math.NaN()}, {math.Inf(-1), math.NaN()}, {math.NaN(), math.NaN()}} {
		got := Tan(s.x)
		if got != s.want && !(math.IsNaN(got) && math.IsNaN(s.want)) || math.Signbit(got) != math.Signbit(s.want) && !math.IsNaN(got) {
			t.Errorf("Tan(%v) = %v, want %v", s.x, got, s.want)
		}
	}
}
