package mathx

import (
	"math"
	"testing"
)

// Values checked against mpmath at 200 bits (rounded to float64).
func TestExpLogEdges(t *testing.T) {
	for _, c := range []struct {
		f         func(float64) float64
		name      string
		x, want   float64
		tolerance float64 // relative
	}{
		{Exp, "Exp", 709.78, 1.7928227943945155e+308, 4e-16},
		{Exp, "Exp", 709.5, 1.3549863193146328e+308, 4e-16},
		{Exp, "Exp", 709.79, math.Inf(1), 0},
		{Exp, "Exp", 1, math.E, 0},
		{Log, "Log", 5e-324, -744.4400719213812, 2e-16},
		{Log, "Log", 1e-310, -713.8013788281542, 2e-16},
		{Log, "Log", 0x1p-1023, -709.0895657128241, 2e-16},
		{Log, "Log", 0, math.Inf(-1), 0},
		{Log, "Log", math.E, 1, 0},
	} {
		got := c.f(c.x)
		if got != c.want && !(math.Abs(got-c.want) <= c.tolerance*math.Abs(c.want)) {
			t.Errorf("%s(%v) = %v, want %v", c.name, c.x, got, c.want)
		}
	}
}
