package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The row kernels (norms, softmaxes, the cross-entropy, attention's rows)
// give a warp to each row where rows are many and short
// (kernels.RowGroupShift): the outputs and gradients follow the CPU's
// there as they do where a block takes a row (the conformance table's
// shapes), over a last block of warps left partly empty, rows shorter
// than a warp and not a multiple of it, the longest a warp takes and one
// longer; and the emulator's counts hold each to its budget of
// instructions per element, a warp's 32 threads a row.
func TestRowKernelsTakeAWarpARow(t *testing.T) {
	d := testGPU(t)
	ctx, counted := d.ctx.(*emu.Context)
	r := tensor.NewRNG(31)
	f32 := func(shape ...int) *tensor.Tensor { return uniform(r, tensor.Float32, -2, 2, shape...) }
	// Each case's function returns its outputs and the gradients of a sum
	// of them weighted by sin, so no gradient is a constant.
	grads := func(in []*tensor.Tensor, f func(in []*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
		if in[0].NumElements() >= 1<<20 { // the widest rows, forward only (the emulator's time)
			return []*tensor.Tensor{f(in)}
		}
		tp := tape.New()
		tp.Watch(in...)
		y := f(in)
		loss := ops.Sum(ops.Mul(ops.Cast(y, tensor.Float32), ops.Sin(ops.Cast(y, tensor.Float32))))
		return append([]*tensor.Tensor{y}, tp.Gradient(loss, in...)...)
	}
	labels := func(rows, n int) *tensor.Tensor {
		ids := make([]int32, rows)
		for i := range ids {
			ids[i] = int32((i*7 + i/3) % n)
		}
		return tensor.FromSlice(ids, rows)
	}
	for _, c := range []struct {
		name    string
		in      []*tensor.Tensor
		f       func(in []*tensor.Tensor) *tensor.Tensor
		rows, n int // the row kernels' rows and their length
		// tol bounds the difference from the CPU's, relative to each
		// tensor's largest: the sums' order differs, and a bfloat16
		// output rounded the other way moves its gradients by ulps.
		tol     float64
		kernels []string
		// budget: instructions per element, at most, a warp a row (the
		// float32 exponentials carry their argument's rounding: about
		// five an element more than one ex2.approx alone, which erred by
		// |x|·2⁻²⁴)
		budget float64
	}{
		{"layer norm float32", []*tensor.Tensor{f32(1025, 96), f32(96), f32(96)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.LayerNorm(in[0], in[1], in[2], 1e-5)
		}, 1025, 96, 1e-5, []string{"layer_norm_f32", "layer_norm_grad_f32"}, 24},
		{"layer norm float64, rows of 33", []*tensor.Tensor{uniform(r, tensor.Float64, -2, 2, 1024, 33), uniform(r, tensor.Float64, -1, 1, 33)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.LayerNorm(in[0], in[1], nil, 1e-5)
		}, 1024, 33, 1e-12, []string{"layer_norm_scale_f64", "layer_norm_grad_f64"}, 40},
		{"RMS norm of bfloat16 with float32 scales, rows of 384", []*tensor.Tensor{ops.Cast(f32(1024, 384), tensor.BFloat16), f32(384)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.RMSNorm(in[0], in[1], 1e-5)
		}, 1024, 384, 3e-2, []string{"rms_norm_bf16_pf32", "rms_norm_grad_bf16_pf32"}, 30},
		{"softmax, rows of 1024 (a warp's longest)", []*tensor.Tensor{f32(1024, 1024)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Softmax(in[0], 1)
		}, 1024, 1024, 1e-5, []string{"softmax_f32"}, 23},
		{"log softmax, rows of 1025 (a block's)", []*tensor.Tensor{f32(1024, 1025)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.LogSoftmax(in[0], 1)
		}, 1024, 1025, 1e-5, []string{"log_softmax_f32"}, 0},
		{"softmax and its gradient, rows of 300", []*tensor.Tensor{f32(1100, 300)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Softmax(in[0], 1)
		}, 1100, 300, 1e-5, []string{"softmax_f32", "softmax_grad_f32"}, 27},
		{"log softmax of bfloat16 and its gradient, rows of 200", []*tensor.Tensor{ops.Cast(f32(1030, 200), tensor.BFloat16)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.LogSoftmax(in[0], 1)
		}, 1030, 200, 3e-2, []string{"log_softmax_bf16", "log_softmax_grad_bf16"}, 78},
		{"cross-entropy of 65 classes", []*tensor.Tensor{f32(1030, 65)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.SparseSoftmaxCrossEntropy(in[0], onGPUIfAny(in[0], labels(1030, 65)))
		}, 1030, 65, 1e-5, []string{"sparse_xent_f32_s32", "sparse_xent_grad_f32_s32"}, 68},
		{"causal attention's rows, 256 keys", []*tensor.Tensor{f32(2, 2, 256, 16), f32(2, 2, 256, 16), f32(2, 2, 256, 16)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Attention(in[0], in[1], in[2], nil, true, 0)
		}, 1024, 256, 1e-5, []string{"attn_probs_f32", "attn_grad_f32"}, 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := grads(c.in, c.f)
			gpuIn := make([]*tensor.Tensor, len(c.in))
			for i, x := range c.in {
				gpuIn[i] = onGPU(t, d, x)
			}
			var launches []emu.Profile
			if counted {
				ctx.SetProfiler(func(p emu.Profile) { launches = append(launches, p) })
			}
			got := grads(gpuIn, c.f)
			if err := d.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if counted {
				ctx.SetProfiler(nil)
			}
			for i := range want {
				g := tensor.ToSlice[float64](ops.Cast(onHost(t, got[i]), tensor.Float64))
				w := tensor.ToSlice[float64](ops.Cast(want[i], tensor.Float64))
				if diff := approx.Diff(g, w, c.tol); diff != "" {
					t.Errorf("result %d (0: the output, then the inputs' gradients): %s", i, diff)
				}
			}
			if !counted {
				return
			}
			warps := kernels.RowGroupShift(c.rows, c.n) == 5
			if warps != (c.budget > 0) {
				t.Fatalf("rows %d of %d: a warp a row is %v, the case says %v", c.rows, c.n, warps, c.budget > 0)
			}
			perBlock := kernels.ReduceBlock >> kernels.RowGroupShift(c.rows, c.n)
			for _, name := range c.kernels {
				var p *emu.Profile
				for i := range launches {
					if launches[i].Kernel == name {
						p = &launches[i]
					}
				}
				if p == nil {
					t.Errorf("%s did not run; ran %s", name, kernelNames(launches))
					continue
				}
				if blocks := min((c.rows+perBlock-1)/perBlock, d.info.SMs*32); p.Grid[0] != blocks {
					t.Errorf("%s: %d blocks for %d rows of %d, want %d", name, p.Grid[0], c.rows, c.n, blocks)
				}
				if per := perElement(*p); warps && per > c.budget {
					t.Errorf("%s: %.1f instructions per element, budget %.0f: %s", name, per, c.budget, p)
				} else {
					t.Logf("%s: %.1f instructions per element", name, per)
				}
			}
		})
	}
}

// onGPUIfAny is x on like's device.
func onGPUIfAny(like, x *tensor.Tensor) *tensor.Tensor {
	return ops.ToDevice(x, like.Device())
}

func kernelNames(ps []emu.Profile) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprint(p.Kernel)
	}
	return strings.Join(names, " ")
}
