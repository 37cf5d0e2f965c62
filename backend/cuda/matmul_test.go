package cuda

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// FusedMatMul on the GPU agrees with the CPU for both dtypes and
// activations, through the GEMM's epilogue and through the kernels that
// stand in for it where the context has none; on the emulator, the
// epilogue path launches no kernel beside the GEMM, the other one or two;
// bfloat16 and float16 multiply as such (the emulated tensor-core GEMM).
func TestFusedMatMulOnGPU(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	defer d.noEpilogue.Store(d.noEpilogue.Load())
	r := tensor.NewRNG(21)
	for _, inGemm := range []bool{true, false} {
		d.noEpilogue.Store(!inGemm)
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16} {
			for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
				// [256 64]x[64 512] (the MLP's layer shape, a shorter contraction) takes a tiled
				// kernel of cuBLASLt's on hardware, whose epilogue must
				// keep NaN too.
				for _, s := range [][3]int{{1, 5, 3}, {33, 17, 9}, {4, 0, 6}, {0, 3, 2}, {256, 64, 512}} {
					m, k, n := s[0], s[1], s[2]
					x := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, m, k), dt)
					w := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, k, n), dt)
					b := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, n), dt)
					if m*n > 1 { // a NaN passes through Relu
						x = ops.Where(ops.Eq(ops.Reshape(tensor.Arange(0, float64(m*k), 1), m, k), tensor.Scalar(0.0)), ops.Cast(tensor.Scalar(math.NaN()), dt), x)
					}
					gx, gw, gb := onGPU(t, d, x), onGPU(t, d, w), onGPU(t, d, b)
					if err := d.Synchronize(); err != nil {
						t.Fatal(err)
					}
					before := 0
					if emulated {
						before = ctx.Launches
					}
					y := ops.FusedMatMul(gx, gw, gb, act)
					what := fmt.Sprintf("in the GEMM %v, %v %v [%d %d]x[%d %d]", inGemm, dt, act, m, k, k, n)
					agree(t, what, y, ops.FusedMatMul(x, w, b, act))
					want := 1 // the bias, with Relu when asked (addrelu)
					if inGemm || m*n == 0 {
						want = 0
					}
					// Without a contraction the product is a fill (a
					// memset or a kernel by dtype), not counted here.
					// The half types take the GEMM's epilogue always (or
					// compute through float32): not counted.
					if emulated && k > 0 && !dt.IsHalf() && ctx.Launches-before != want {
						t.Errorf("%s: %d kernels launched beside the GEMM, want %d", what, ctx.Launches-before, want)
					}
				}
			}
		}
	}
}

// FusedMatMul's weight and bias gradients (FusedMatMulWeightsGrad) on
// the GPU agree with the CPU's, in one GEMM whose epilogue sums the
// bias's (no kernel beside it on the emulator) and through the column
// fold where the context has no epilogue; every float dtype, empty
// batches and contractions too.
func TestWeightsGradOnGPU(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	defer d.noEpilogue.Store(d.noEpilogue.Load())
	r := tensor.NewRNG(22)
	for _, inGemm := range []bool{true, false} {
		d.noEpilogue.Store(!inGemm)
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16} {
			for _, s := range [][3]int{{1, 5, 3}, {33, 17, 9}, {0, 3, 2}, {6, 4, 0}, {128, 64, 96}} {
				m, k, n := s[0], s[1], s[2]
				x := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, m, k), dt)
				w := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, k, n), dt)
				b := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, n), dt)
				grads := func(x, w, b *tensor.Tensor) []*tensor.Tensor {
					tp := tape.New()
					tp.Watch(w, b)
					return tp.Gradient(ops.Sum(ops.Sin(ops.Cast(ops.FusedMatMul(x, w, b, ops.ReluActivation), tensor.Float32))), w, b)
				}
				want := grads(x, w, b)
				gx, gw, gb := onGPU(t, d, x), onGPU(t, d, w), onGPU(t, d, b)
				if err := d.Synchronize(); err != nil {
					t.Fatal(err)
				}
				got := grads(gx, gw, gb)
				what := fmt.Sprintf("in the GEMM %v, %v [%d %d]x[%d %d]", inGemm, dt, m, k, k, n)
				for i, name := range []string{"dw", "db"} {
					// The half types' sums of 128 products rounded from
					// inputs a unit apart here and there: a few units.
					agreeWithin(t, what+" "+name, got[i], want[i], 4*approx.Tolerance(dt))
				}
			}
		}
	}
	// A convolution's bias gradient by its filter GEMM's epilogue (the
	// patches' GEMM, cuDNN off), both layouts, and by the fold without.
	d.SetCuDNN(false)
	defer d.SetCuDNN(true)
	for _, inGemm := range []bool{true, false} {
		d.noEpilogue.Store(!inGemm)
		for _, f := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
			shape, filt := []int{2, 7, 6, 3}, []int{3, 3, 3, 5}
			if f == ops.NCHW {
				shape = []int{2, 3, 7, 6}
			}
			x, w := tensor.RandUniform(r, tensor.Float32, -1, 1, shape...), tensor.RandUniform(r, tensor.Float32, -1, 1, filt...)
			b := tensor.RandUniform(r, tensor.Float32, -1, 1, 5)
			o := ops.Conv2DOpts{Strides: [2]int{2, 2}, Padding: ops.Same, Format: f}
			grads := func(x, w, b *tensor.Tensor) []*tensor.Tensor {
				tp := tape.New()
				tp.Watch(w, b)
				return tp.Gradient(ops.Sum(ops.Sin(ops.FusedConv2D(x, w, b, o, ops.ReluActivation))), w, b)
			}
			want, got := grads(x, w, b), grads(onGPU(t, d, x), onGPU(t, d, w), onGPU(t, d, b))
			for i, name := range []string{"dw", "db"} {
				agree(t, fmt.Sprintf("conv %v, in the GEMM %v: %s", f, inGemm, name), got[i], want[i])
			}
		}
	}
	// The epilogue's launch count: the step's kernels but the fold.
	if emulated {
		x, w, b := onGPU(t, d, tensor.RandUniform(r, tensor.Float32, -1, 1, 64, 32)), onGPU(t, d, tensor.RandUniform(r, tensor.Float32, -1, 1, 32, 16)), onGPU(t, d, tensor.RandUniform(r, tensor.Float32, -1, 1, 16))
		folds := map[bool]int{}
		for _, inGemm := range []bool{true, false} {
			d.noEpilogue.Store(!inGemm)
			ctx.SetProfiler(func(p emu.Profile) {
				if strings.HasPrefix(p.Kernel, "reduce_cols") {
					folds[inGemm]++
				}
			})
			tp := tape.New()
			tp.Watch(w, b)
			tp.Gradient(ops.Sum(ops.FusedMatMul(x, w, b, ops.NoActivation)), w, b)
			if err := d.Synchronize(); err != nil {
				t.Fatal(err)
			}
			ctx.SetProfiler(nil)
		}
		if folds[true] != 0 || folds[false] == 0 {
			t.Errorf("column folds: %d with the epilogue (want none), %d without (want some)", folds[true], folds[false])
		}
	}
}
