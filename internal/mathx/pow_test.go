package mathx

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// prec is the reference's precision in bits.
const prec = 300

func bigf(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }

// atanhSeries is Σ s^(2k+1)/(2k+1) to the reference's precision (|s| <
// 1/2).
func atanhSeries(s *big.Float) *big.Float {
	sum, term := new(big.Float).SetPrec(prec).Set(s), new(big.Float).SetPrec(prec).Set(s)
	s2 := new(big.Float).SetPrec(prec).Mul(s, s)
	eps := new(big.Float).SetMantExp(bigf(1), -prec-10)
	for k := 3; ; k += 2 {
		term.Mul(term, s2)
		q := new(big.Float).SetPrec(prec).Quo(term, bigf(float64(k)))
		if new(big.Float).Abs(q).Cmp(eps) < 0 {
			return sum
		}
		sum.Add(sum, q)
	}
}

// bigLn2 is ln 2 = 2·atanh(1/3).
var bigLn2 = func() *big.Float {
	third := new(big.Float).SetPrec(prec).Quo(bigf(1), bigf(3))
	return new(big.Float).SetPrec(prec).Mul(bigf(2), atanhSeries(third))
}()

// bigLog is ln x for x > 0: x = 2^e·m, m in [½, 1), ln m = 2·atanh((m-1)/(m+1)).
func bigLog(x float64) *big.Float {
	m, e := math.Frexp(x)
	bm := bigf(m)
	s := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Sub(bm, bigf(1)), new(big.Float).SetPrec(prec).Add(bm, bigf(1)))
	r := new(big.Float).SetPrec(prec).Mul(bigf(2), atanhSeries(s))
	return r.Add(r, new(big.Float).SetPrec(prec).Mul(bigf(float64(e)), bigLn2))
}

// bigExp is e^t rounded to float64: t = n·ln 2 + r, e^r by its series.
func bigExp(t *big.Float) float64 {
	q, _ := new(big.Float).Quo(t, bigLn2).Float64()
	n := math.Round(q)
	r := new(big.Float).SetPrec(prec).Sub(t, new(big.Float).SetPrec(prec).Mul(bigf(n), bigLn2))
	sum, term := bigf(1), bigf(1)
	eps := new(big.Float).SetMantExp(bigf(1), -prec-10)
	for k := 1; ; k++ {
		term.Mul(term, r)
		term.Quo(term, bigf(float64(k)))
		if new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
		sum.Add(sum, term)
	}
	if n > 2000 {
		return math.Inf(1)
	}
	if n < -2000 {
		return 0
	}
	v, _ := sum.SetMantExp(sum, int(n)).Float64() // rounds once, subnormals included
	return v
}

// refPow is x**y for x > 0 to the reference's precision, rounded once.
func refPow(x, y float64) float64 {
	return bigExp(new(big.Float).SetPrec(prec).Mul(bigf(y), bigLog(x)))
}

// ulpsOff is |got - want| in units of want's last place.
func ulpsOff(got, want float64) float64 {
	if got == want {
		return 0
	}
	u := math.Nextafter(math.Abs(want), math.Inf(1)) - math.Abs(want)
	return math.Abs(got-want) / math.Max(u, math.SmallestNonzeroFloat64)
}

// Pow is within 2 ulps of x**y computed to 300 bits over bases of every
// magnitude (subnormal ones included) and exponents that keep the result
// finite, including integers (where math.Pow squares) and the ones whose
// |y·ln x| nears the range's end; its sign and special cases are
// math.Pow's. math.Pow's errors on the same cases are logged.
func TestPowWithinTwoUlps(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	worst, worstGo, overOne, cases := 0.0, 0.0, 0, 0
	check := func(x, y float64) {
		want := refPow(math.Abs(x), y)
		if x < 0 && math.Mod(y, 2) != 0 {
			want = -want
		}
		got := Pow(x, y)
		u := ulpsOff(got, want)
		if u > 2 {
			t.Errorf("Pow(%v, %v) = %v, want %v (%.2f ulps)", x, y, got, want, u)
		}
		if u > 1 {
			overOne++
		}
		worst = max(worst, u)
		cases++
		worstGo = math.Max(worstGo, ulpsOff(math.Pow(x, y), want))
	}
	for range 3000 {
		x := math.Exp2(r.Float64()*2097 - 1074) // subnormal to huge
		span := 709 / math.Abs(math.Log(x))     // |y·ln x| up to 709
		y := (r.Float64()*2 - 1) * math.Min(span, 1e6)
		check(x, y)
		check(x, math.Round(y)) // integer exponents
		check(-x, math.Round(y))
	}
	for _, c := range [][2]float64{{2.5, 710}, {2.5, -746}, {1e-310, 0.49999999999999994}, {1e-310, 1e-8},
		{1.5, 1000}, {0.5, 1074}, {0.5, -1023}, {10, 308}, {10, -323}, {4.8018615399553706e+178, -0.44653405783597755}} {
		check(c[0], c[1])
	}
	t.Logf("worst %.3f ulps, %d of %d cases past 1 (math.Pow's worst: %.1f)", worst, overOne, cases, worstGo)
}

// Pow's special cases are math.Pow's (C99's).
func TestPowSpecialCases(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, -2, 3, -3, 1e-310, math.MaxFloat64,
		math.Inf(1), math.Inf(-1), math.NaN(), 2.5, -2.5}
	for _, x := range vals {
		for _, y := range vals {
			got, want := Pow(x, y), math.Pow(x, y)
			same := got == want && math.Signbit(got) == math.Signbit(want) || math.IsNaN(got) && math.IsNaN(want)
			if !same && ulpsOff(got, want) > 1 {
				t.Errorf("Pow(%v, %v) = %v, math.Pow %v", x, y, got, want)
			}
		}
	}
}
