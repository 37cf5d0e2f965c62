package cpu

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/tensor"
)

// The row kernels against Go loops from their definitions, over channel
// counts reaching every lane path and steps wider than the rows.
func TestDepthwiseRowKernels(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	r := tensor.NewRNG(6)
	for _, ch := range []int{1, 7, 8, 9, 31, 32, 33, 64, 75} {
		for _, count := range []int{0, 1, 5} {
			dstStep, srcStep := ch+3, 2*ch+1
			src := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -1, 1, max(count, 1)*srcStep))
			f := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -1, 1, ch))
			dst := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -1, 1, max(count, 1)*dstStep))
			want := append([]float32(nil), dst...)
			for i := range count {
				for j := range ch {
					want[i*dstStep+j] += src[i*srcStep+j] * f[j]
				}
			}
			sdwmac(&dst[0], dstStep, &src[0], srcStep, &f[0], ch, count)
			if d := approx.Diff(dst, want, 1e-6); d != "" {
				t.Errorf("sdwmac, %d channels, %d rows: %s", ch, count, d)
			}
			acc := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -1, 1, ch))
			wantAcc := append([]float32(nil), acc...)
			for j := range ch {
				for i := range count {
					wantAcc[j] += src[i*srcStep+j] * dst[i*dstStep+j]
				}
			}
			sdwdot(&acc[0], &src[0], srcStep, &dst[0], dstStep, ch, count)
			if d := approx.Diff(acc, wantAcc, 1e-5); d != "" {
				t.Errorf("sdwdot, %d channels, %d rows: %s", ch, count, d)
			}
		}
	}
}
