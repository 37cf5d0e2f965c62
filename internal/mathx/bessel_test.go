package mathx

import (
	"math"
	"testing"
)

// The Bessel functions at values from mpmath 1.2.1 (besseli at 300 bits),
// on both sides of the switch to the asymptotic expansion and near I₀'s
// overflow; the symmetries, the special values, and e^-|x| times the
// unscaled function where both are in range.
func TestBesselAgainstReference(t *testing.T) {
	for _, c := range []struct{ x, i0, i1, i0e, i1e float64 }{
		{0.5, 1.063483370741323519263, 0.2578943053908963163625, 0.645035270449150068108, 0.1564208031848716971426},
		{3, 4.880792585865024085611, 3.953370217402609396479, 0.2430003541618253984726, 0.1968267132973008536307},
		{19.5, 26760525.33983876602745, 26065069.26445716569433, 0.09093943209515648330516, 0.08857608609431485245713},
		{20, 43558282.55955353327211, 42454973.38512777018141, 0.08978031188482602159594, 0.08750622218328866535633},
		{25, 5774560606.466310315771, 5657865129.878701353104, 0.08019677354743670842239, 0.07857611331929277202815},
		{100, 1.07375170713107382352e+42, 1.068369390338162481206e+42, 0.03994437929909668264756, 0.03974415302513025267364},
		{700, 1.529593347671873736316e+302, 1.528500390233900688145e+302, 0.01508129565153135758699, 0.01507051944471684694926},
	} {
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"I0", BesselI0(c.x), c.i0}, {"I1", BesselI1(c.x), c.i1}, {"I0e", BesselI0e(c.x), c.i0e}, {"I1e", BesselI1e(c.x), c.i1e},
			{"I0(-x)", BesselI0(-c.x), c.i0}, {"I1(-x)", BesselI1(-c.x), -c.i1}, {"I1e(-x)", BesselI1e(-c.x), -c.i1e}} {
			if u := ulpsOff(f.got, f.want); u > 8 {
				t.Errorf("%s at %v = %v, want %v (%.1f ulps)", f.name, c.x, f.got, f.want, u)
			}
		}
	}
	inf := math.Inf(1)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"I0(0)", BesselI0(0), 1}, {"I1(-0)", BesselI1(math.Copysign(0, -1)), math.Copysign(0, -1)},
		{"I0(∞)", BesselI0(inf), inf}, {"I1(-∞)", BesselI1(-inf), -inf}, {"I0(714)", BesselI0(714), inf},
		{"I0e(∞)", BesselI0e(inf), 0}, {"I1e(-∞)", BesselI1e(-inf), math.Copysign(0, -1)}, {"I0e(0)", BesselI0e(0), 1},
	} {
		if c.got != c.want || math.Signbit(c.got) != math.Signbit(c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, f := range []func(float64) float64{BesselI0, BesselI1, BesselI0e, BesselI1e} {
		if !math.IsNaN(f(math.NaN())) {
			t.Error("a Bessel function is not NaN at NaN")
		}
	}
	if got, want := BesselI0e(1e300), 1/math.Sqrt(2*math.Pi*1e300); ulpsOff(got, want) > 2 {
		t.Errorf("I0e(1e300) = %v, want 1/√(2πx) = %v", got, want)
	}
	for x := 0.01; x < 700; x *= 1.37 {
		if u := ulpsOff(BesselI0e(x), BesselI0(x)*math.Exp(-x)); u > 16 {
			t.Errorf("I0e(%v) = %v, e^-x·I0 = %v", x, BesselI0e(x), BesselI0(x)*math.Exp(-x))
		}
	}
}
