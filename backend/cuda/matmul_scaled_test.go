package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// ScaledMatMul of 8-bit floats on the GPU agrees with the CPU's (float32
// sums of the widened operands) within one rounding of the output and
// float32's rounding of the depth, and on a GPU's FP8 GEMM its tensor
// cores' shorter sums too (ScaledMatMul's doc: 2^-13 of the products'
// magnitude per 32 of the depth); shapes of multiples of 16 take the FP8
// GEMM (on the emulator: counted), others and two E5M2 operands compute
// through float32.
func TestScaledMatMulFP8(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	r := tensor.NewRNG(12)
	e4, e5 := tensor.Float8E4M3, tensor.Float8E5M2
	for _, c := range []struct {
		m, k, n int
		ta, tb  tensor.DType
		fp8     bool
	}{
		{32, 64, 48, e4, e4, true}, {16, 16, 16, e4, e5, true}, {48, 32, 16, e5, e4, true},
		{32, 32, 32, e5, e5, false}, {17, 32, 16, e4, e4, false}, {16, 24, 16, e4, e4, false},
	} {
		for _, out := range []tensor.DType{tensor.BFloat16, tensor.Float16, tensor.Float32} {
			name := fmt.Sprintf("%dx%dx%d %v by %v into %v", c.m, c.k, c.n, c.ta, c.tb, out)
			a := ops.Cast(tensor.RandNormal(r, tensor.Float32, c.m, c.k), c.ta)
			b := ops.Cast(tensor.RandNormal(r, tensor.Float32, c.k, c.n), c.tb)
			sa, sb := tensor.Scalar(float32(0.75)), tensor.Scalar(float32(-3))
			want := tensor.ToSlice[float32](ops.Cast(ops.ScaledMatMul(a, b, sa, sb, out), tensor.Float32))
			mag := tensor.ToSlice[float32](ops.MatMul(ops.Abs(ops.Cast(a, tensor.Float32)), ops.Abs(ops.Cast(b, tensor.Float32))))
			before := 0
			if emulated {
				before = ctx.FP8Gemms
			}
			y := ops.ScaledMatMul(onGPU(t, d, a), onGPU(t, d, b), onGPU(t, d, sa), onGPU(t, d, sb), out)
			if emulated && (ctx.FP8Gemms-before == 1) != c.fp8 {
				t.Errorf("%s: %d FP8 GEMMs, want FP8 %v", name, ctx.FP8Gemms-before, c.fp8)
			}
			if y.DType() != out {
				t.Fatalf("%s: dtype %v", name, y.DType())
			}
			got := tensor.ToSlice[float32](ops.Cast(onHost(t, y), tensor.Float32))
			ulp := map[tensor.DType]float64{tensor.BFloat16: 0x1p-8, tensor.Float16: 0x1p-11, tensor.Float32: 0x1p-24}[out]
			for i := range want {
				bound := 2*ulp*math.Abs(float64(want[i])) + 2.25*float64(c.k)*0x1p-24*float64(mag[i])
				if c.fp8 && !emulated { // the tensor cores' own sums (the emulator's are float32's)
					bound += float64((c.k+31)/32) * 0x1p-13 * 2.25 * float64(mag[i])
				}
				if d := math.Abs(float64(got[i] - want[i])); d > bound {
					t.Fatalf("%s: element %d is %v, want %v (bound %g)", name, i, got[i], want[i], bound)
				}
			}
		}
	}
}
