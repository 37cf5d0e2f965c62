package tensor_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// nearestBF16 is bfloat16 rounding by another route: the two bfloat16
// values around f (f's bits cut to 16, and the next one up in magnitude)
// and the nearer of them in float64, ties to the even one.
func nearestBF16(f float32) uint16 {
	b := math.Float32bits(f)
	lo := uint16(b >> 16)
	if b&0xffff == 0 {
		return lo
	}
	hi := lo + 1
	hiVal := math.Abs(float64(math.Float32frombits(uint32(hi) << 16)))
	if hi&0x7fff == 0x7f80 { // past the largest: 2^128, where the next value would be
		hiVal = 0x1p128
	}
	dlo := math.Abs(float64(f) - float64(math.Float32frombits(uint32(lo)<<16)))
	dhi := hiVal - math.Abs(float64(f))
	switch {
	case dlo < dhi:
		return lo
	case dhi < dlo:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func TestBF16RoundsToNearestEven(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2_000_000 {
		b := r.Uint32()
		if i%4 == 0 { // halfway and near-halfway patterns
			b = b&^0xffff | 0x8000 | uint32(i%3)
		}
		f := math.Float32frombits(b)
		if f != f || math.IsInf(float64(f), 0) {
			continue
		}
		if got, want := uint16(tensor.ToBF16(f)), nearestBF16(f); got != want {
			// Beyond the largest bfloat16 the nearer value is the
			// infinity the carry makes; nearestBF16 agrees there too.
			t.Fatalf("ToBF16(%g = %#08x) = %#04x, want %#04x", f, b, got, want)
		}
	}
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3f80}, {-2, 0xc000},
		{float32(math.Inf(1)), 0x7f80}, {float32(math.Inf(-1)), 0xff80},
		{math.MaxFloat32, 0x7f80},                  // rounds up past the largest bfloat16
		{math.Float32frombits(0x3f808000), 0x3f80}, // a tie to the even below
		{math.Float32frombits(0x3f818000), 0x3f82}, // a tie to the even above
		{math.Float32frombits(0x00000001), 0},      // the least subnormal
	} {
		if got := uint16(tensor.ToBF16(c.in)); got != c.want {
			t.Errorf("ToBF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	for _, nan := range []uint32{0x7fc00000, 0xffc00001, 0x7f800001, 0x7f800100} {
		got := tensor.ToBF16(math.Float32frombits(nan))
		if v := got.Float32(); v == v || (got>>15 != tensor.BF16(nan>>31)) {
			t.Errorf("ToBF16 of NaN %#08x = %#04x: not a NaN of the same sign", nan, uint16(got))
		}
	}
}

func TestF16Conversions(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65519, 0x7bff}, {65520, 0x7c00}, // to infinity from halfway up
		{float32(math.Inf(-1)), 0xfc00}, {float32(math.Copysign(0, -1)), 0x8000},
		{0x1p-24, 0x0001}, {0x1p-25, 0}, {0x1.8p-25, 0x0001}, {0x1p-14, 0x0400}, // subnormals, the least normal
		{0x1.ffcp-15, 0x0400},                        // rounds up into the normals
		{1 + 0x1p-11, 0x3c00}, {1 + 0x3p-11, 0x3c02}, // ties to even
	} {
		if got := uint16(tensor.ToF16(c.in)); got != c.want {
			t.Errorf("ToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if v := tensor.ToF16(float32(math.NaN())).Float32(); v == v {
		t.Errorf("ToF16(NaN) = %g", v)
	}
	// Every binary16 value converts to float32 and back unchanged.
	for b := range 1 << 16 {
		h := tensor.F16(b)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN
		}
		if back := tensor.ToF16(h.Float32()); back != h {
			t.Fatalf("%#04x -> %g -> %#04x", b, h.Float32(), uint16(back))
		}
	}
}

func TestHalfTensors(t *testing.T) {
	x := tensor.FromFloat32s(tensor.BFloat16, []float32{1, 0.1, -3.5, 1e30}, 2, 2)
	if x.DType() != tensor.BFloat16 || x.DType().Size() != 2 || !x.DType().IsFloat() || !x.DType().IsHalf() {
		t.Fatalf("dtype %v, size %d", x.DType(), x.DType().Size())
	}
	want := []tensor.BF16{tensor.ToBF16(1), tensor.ToBF16(0.1), tensor.ToBF16(-3.5), tensor.ToBF16(1e30)}
	for i, v := range tensor.ToSlice[tensor.BF16](x) {
		if v != want[i] {
			t.Errorf("element %d: %v, want %v", i, v, want[i])
		}
	}
	if s := x.String(); s != "[[ 1.0e+00  1.0e-01]\n [-3.5e+00  1.0e+30]] bfloat16[2 2]" {
		t.Errorf("printed %q", s)
	}
	// NumPy 1.24 prints these float16 arrays so.
	h := tensor.FromFloat32s(tensor.Float16, []float32{0.1, 65504, 6e-8}, 3)
	if s := h.String(); s != "[1.00e-01 6.55e+04 5.96e-08] float16[3]" {
		t.Errorf("float16 printed %q", s)
	}
	h = tensor.FromFloat32s(tensor.Float16, []float32{1.5, 1000.25, 3.140625}, 3)
	if s := h.String(); s != "[   1.5  1000.      3.14] float16[3]" {
		t.Errorf("float16 printed %q", s)
	}
	if s := tensor.ToF16(0.1).String(); s != "0.1" {
		t.Errorf("F16(0.1) prints %q (NumPy: 0.1)", s)
	}
	if s := tensor.ToBF16(0.1).String(); s != "0.1" {
		t.Errorf("BF16(0.1) prints %q", s)
	}
	if item := tensor.FromFloat32s(tensor.Float16, []float32{2.5}).Float(); item != 2.5 {
		t.Errorf("Float() = %g", item)
	}
	u := tensor.RandUniform(tensor.NewRNG(3), tensor.BFloat16, -1, 1, 1000)
	for _, v := range tensor.ToSlice[tensor.BF16](u) {
		if f := v.Float32(); !(f >= -1 && f <= 1) {
			t.Fatalf("RandUniform bfloat16 drew %g", f)
		}
	}
	err := tensor.Catch(func() { tensor.FromFloat32s(tensor.Int32, []float32{1}, 1) })
	if !errors.Is(err, tensor.ErrDType) {
		t.Errorf("FromFloat32s(Int32): %v", err)
	}
}
