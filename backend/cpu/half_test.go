package cpu

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// The float16 vector conversions give tensor.F16's Go conversions to the
// bit: widening every one of the 65536 patterns (signalling NaNs too),
// and rounding a sweep of float32 patterns that meets every exponent,
// every rounding position's ties and neighbours, denormals, the overflow
// edge and NaN payloads; through roundF16 and widenHalves, tails included.
func TestConvertF16Vector(t *testing.T) {
	if !haveAVX512 {
		t.Skip("this CPU has no AVX-512 (or the build is purego): float16 converts in Go")
	}
	all := make([]tensor.F16, 1<<16+5) // 5: a tail past the vectors
	for i := range all {
		all[i] = tensor.F16(i)
	}
	wide := make([]float32, len(all))
	widenHalves(wide, all)
	for i, h := range all {
		if got, want := math.Float32bits(wide[i]), math.Float32bits(h.Float32()); got != want {
			t.Fatalf("widening %#04x: %#08x, want %#08x", uint16(h), got, want)
		}
	}
	// Every pattern whose low 13 bits (those float16 drops) are one of the
	// rounding's cases, and a coarse stride through the rest.
	var src []float32
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range []uint32{0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff} {
			src = append(src, math.Float32frombits(hi<<13|lo))
		}
	}
	for b := uint64(0); b < 1<<32; b += 4093 {
		src = append(src, math.Float32frombits(uint32(b)))
	}
	src = append(src, 1, 2, 3) // a tail
	got := make([]tensor.F16, len(src))
	roundF16(got, src)
	for i, v := range src {
		if want := tensor.ToF16(v); got[i] != want {
			t.Fatalf("rounding %#08x (%v): %#04x, want %#04x", math.Float32bits(v), v, uint16(got[i]), uint16(want))
		}
	}
}
