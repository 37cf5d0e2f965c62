package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// The OCP FP8 specification's values: its largest and least magnitudes,
// one, NaN and infinity codes, and saturation.
func TestFloat8Values(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		in     float32
		e4, e5 uint8
	}{
		{1, 0x38, 0x3c}, {-2, 0xc0, 0xc0}, {0, 0, 0}, {float32(math.Copysign(0, -1)), 0x80, 0x80},
		{448, 0x7e, 0x5f}, {57344, 0x7e, 0x7b}, // e4m3's largest, and e5m2's
		{464, 0x7e, 0x5f}, {1e9, 0x7e, 0x7b}, {inf, 0x7e, 0x7b}, {-inf, 0xfe, 0xfb}, // saturation
		{0x1p-9, 0x01, 0x18}, {0x1p-16, 0x00, 0x01}, // the least subnormals (E4M3 rounds E5M2's to 0)
		{0x1p-6, 0x08, 0x24}, {0x1p-14, 0x00, 0x04}, // the least normals
		{1.0625, 0x38, 0x3c}, {1.1875, 0x3a, 0x3d}, // ties to even: 1 + 1/16 -> 1, 1 + 3/16 -> 1.25 (e4m3)
		{0.75 * 0x1p-9, 0x01, 0x16}, {0.5 * 0x1p-9, 0x00, 0x14}, // E4M3's subnormals: to the nearer, a tie to even (0)
	} {
		if got := uint8(tensor.ToF8E4M3(c.in)); got != c.e4 {
			t.Errorf("ToF8E4M3(%g) = %#02x, want %#02x", c.in, got, c.e4)
		}
		if got := uint8(tensor.ToF8E5M2(c.in)); got != c.e5 {
			t.Errorf("ToF8E5M2(%g) = %#02x, want %#02x", c.in, got, c.e5)
		}
	}
	if v := tensor.ToF8E4M3(nan).Float32(); v == v {
		t.Errorf("E4M3 of NaN is %g", v)
	}
	if v := tensor.ToF8E5M2(nan).Float32(); v == v {
		t.Errorf("E5M2 of NaN is %g", v)
	}
	if v := tensor.F8E4M3(0x7f).Float32(); v == v {
		t.Errorf("E4M3 0x7f is %g, not NaN", v)
	}
	if v := tensor.F8E5M2(0xfc).Float32(); !math.IsInf(float64(v), -1) {
		t.Errorf("E5M2 0xfc is %g, not -inf", v)
	}
	if s := tensor.F8E4M3(0x7e).String(); s != "450.0" { // the shortest decimal that rounds to 448, as NumPy prints float16
		t.Errorf("E4M3 0x7e prints %q", s)
	}
}

// Every finite code converts to float32 and back unchanged; random float32
// values round to one of the two codes around them, the nearer one (the
// even one on a tie), and the order of values is kept.
func TestFloat8RoundTripsAndRounds(t *testing.T) {
	type format struct {
		name  string
		to    func(float32) uint8
		value func(uint8) float32
		max   uint8
	}
	for _, f := range []format{
		{"E4M3", func(x float32) uint8 { return uint8(tensor.ToF8E4M3(x)) }, func(c uint8) float32 { return tensor.F8E4M3(c).Float32() }, 0x7e},
		{"E5M2", func(x float32) uint8 { return uint8(tensor.ToF8E5M2(x)) }, func(c uint8) float32 { return tensor.F8E5M2(c).Float32() }, 0x7b},
	} {
		for c := range 256 {
			if uint8(c)&0x7f > f.max {
				continue
			}
			if back := f.to(f.value(uint8(c))); back != uint8(c) {
				t.Fatalf("%s %#02x -> %g -> %#02x", f.name, c, f.value(uint8(c)), back)
			}
		}
		r := rand.New(rand.NewPCG(2, 3))
		for range 100000 {
			x := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-25)))
			c := f.to(x)
			a := math.Abs(float64(x))
			if c&0x7f == f.max && a >= float64(f.value(f.max)) {
				continue // saturated
			}
			v := math.Abs(float64(f.value(c)))
			// The neighbours of c's magnitude: x lies between them, nearer c.
			lo, hi := float64(f.value(c&0x7f-1)), float64(f.value(c&0x7f+1))
			if c&0x7f == 0 {
				lo = -hi
			}
			if d := math.Abs(a - v); d > math.Abs(a-lo) || d > math.Abs(hi-a) || (d == math.Abs(hi-a) && c&1 == 1) || (d == math.Abs(a-lo) && c&1 == 1 && c&0x7f != 0) {
				t.Fatalf("%s(%g) = %#02x (%g), its neighbours %g and %g", f.name, x, c, f.value(c), lo, hi)
			}
		}
	}
}
