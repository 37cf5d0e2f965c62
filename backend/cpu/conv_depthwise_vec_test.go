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
			acc := tensor.ToSlice[float64](tensor.RandUniform(r, tensor.Float64, -1, 1, ch))
			wantAcc := append([]float64(nil), acc...)
			for j := range ch {
				for i := range count {
					wantAcc[j] += float64(src[i*srcStep+j]) * float64(dst[i*dstStep+j])
				}
			}
			sdwdot64(&acc[0], &src[0], srcStep, &dst[0], dstStep, ch, count)
			if d := approx.Diff(acc, wantAcc, 1e-15); d != "" {
				t.Errorf("sdwdot64, %d channels, %d rows: %s", ch, count, d)
			}
		}
	}
}

// The window kernel against a Go loop from its definition: taps in
// order onto 0, outputs and inputs stepped apart by more than a row.
func TestDepthwiseWindowKernel(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	r := tensor.NewRNG(7)
	for _, ch := range []int{1, 7, 8, 9, 33, 64, 75} {
		for _, count := range []int{0, 1, 4} {
			offs := []int{0, 4 * (3*ch + 1), 4 * 5 * ch, 4 * (9*ch + 2)}
			yStep, xStep := ch+2, 2*ch+3
			x := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -1, 1, count*xStep+10*ch+3))
			f := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -1, 1, len(offs)*ch))
			y := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -1, 1, max(count, 1)*yStep))
			want := append([]float32(nil), y...)
			for i := range count {
				for j := range ch {
					var acc float32
					for tap, off := range offs {
						acc += x[i*xStep+j+off/4] * f[tap*ch+j]
					}
					want[i*yStep+j] = acc
				}
			}
			sdwwin(&y[0], &x[0], yStep, xStep, &offs[0], len(offs), &f[0], ch, count)
			if d := approx.Diff(y, want, 1e-5); d != "" {
				t.Errorf("sdwwin, %d channels, %d outputs: %s", ch, count, d)
			}
		}
	}
}
