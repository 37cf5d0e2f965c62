package cuda

import (
	"bytes"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPU's float16 conversions (the hardware's cvt, the NaN payload set
// apart: kernels/cast.go's f16ToF32 and f32ToF16) equal the host's bit
// for bit: every float16 pattern widened, and rounded back from every
// float16 value, the midpoints between neighbours (ties to even), a bit
// either side of them, the subnormals' and the overflow's boundaries,
// infinities, signed zeros and NaNs with payloads.
func TestFloat16ConversionsOnGPU(t *testing.T) {
	d := testGPU(t)
	all := make([]tensor.F16, 1<<16)
	for i := range all {
		all[i] = tensor.F16(i)
	}
	halves := tensor.FromSlice(all)
	wide := ops.Cast(halves, tensor.Float32)
	if got := onHost(t, ops.Cast(onGPU(t, d, halves), tensor.Float32)); !bytes.Equal(got.HostBytes(), wide.HostBytes()) {
		t.Error("widening every float16 pattern differs from the host's")
	}
	var fs []float32
	for i := range 1 << 15 { // the non-negative patterns; signs below
		h := tensor.F16(i)
		if i >= 0x7c00 {
			break
		}
		v := h.Float32()
		next := tensor.F16(i + 1).Float32()
		mid := v + (next-v)/2
		fs = append(fs, v, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, float32(math.Inf(1))))
	}
	fs = append(fs, 65504, 65519.996, 65520, 1e9, float32(math.Inf(1)), 0x1p-24, 0x1p-25, math.Nextafter32(0x1p-25, 1), 0x1p-26, 0,
		math.Float32frombits(0x7fc00001), math.Float32frombits(0x7f8fe000), math.Float32frombits(0x7fbfffff))
	n := len(fs)
	for i := range n {
		fs = append(fs, -fs[i])
	}
	x := tensor.FromSlice(fs)
	want := ops.Cast(x, tensor.Float16)
	if got := onHost(t, ops.Cast(onGPU(t, d, x), tensor.Float16)); !bytes.Equal(got.HostBytes(), want.HostBytes()) {
		g, w := tensor.ToSlice[tensor.F16](got), tensor.ToSlice[tensor.F16](want)
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("rounding %g (%#08x): %#04x on the GPU, %#04x on the host", fs[i], math.Float32bits(fs[i]), uint16(g[i]), uint16(w[i]))
			}
		}
	}
}
