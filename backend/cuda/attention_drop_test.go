package cuda

import (
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/examples/gpt/model"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The dropped flash kernels keep exactly the weights RandBernoulliAt
// keeps: with q = 0, k = v = I (16 positions and widths) and dO = 1 every
// weight is 1/16, so the output is the mask times 1/(16(1−rate)), dV each
// key's kept count, and dQ = (Z − rowsum(Z)/16)/64 (Z the kept weights'
// factor): each exact in bfloat16 and float16, compared bit for bit with
// the host's draw (float32's within its exponentials' roundings, its
// flash kernels forced), over two blocks of queries, from a starts
// vector's slot and from an offset alone; the kernels ran.
func TestAttentionDropoutKeepsTheHostsMask(t *testing.T) {
	d := testGPU(t)
	ran := watchKernels(t, d)
	const n, tq, w = 3, 70, 16
	key, rate := [2]uint32{7, 11}, 0.5
	eye := make([]float32, w*w)
	for i := range w {
		eye[i*w+i] = 1
	}
	d.SetFlashAttention(true) // float32's flash kernels at this size
	defer d.flashMode.Store(flashAuto)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16, tensor.Float32} {
		// near is whether got is want: exactly in the half types.
		near := func(got float32, want float64) bool {
			if dt == tensor.Float32 {
				return math.Abs(float64(got)-want) <= 1e-5*math.Abs(want)+1e-7
			}
			return float64(got) == want
		}
		for _, withStarts := range []bool{false, true} {
			q := ops.Cast(tensor.Zeros(tensor.Float32, n, tq, w), dt)
			kv := ops.Cast(ops.BroadcastTo(tensor.FromSlice(eye, 1, w, w), n, w, w), dt)
			var starts *tensor.Tensor
			offset, base := uint64(5), uint64(5)
			if withStarts {
				starts, base = tensor.FromSlice([]int64{100, 40, 9}), 45
			}
			gq, gk, gv := onGPU(t, d, q), onGPU(t, d, kv), onGPU(t, d, kv)
			var gs *tensor.Tensor
			if starts != nil {
				gs = onGPU(t, d, starts)
			}
			if !d.DropsInAttention(gq, gk, gv) {
				t.Fatalf("%v: the flash kernels do not take the call", dt)
			}
			tp := tape.New()
			tp.Watch(gq, gv)
			out := ops.AttentionDropout(gq, gk, gv, nil, false, 0, rate, gs, 1, offset, key)
			grads := tp.Gradient(ops.Sum(ops.Cast(out, tensor.Float32)), gq, gv)
			tp.Stop()
			z := tensor.ToSlice[float32](tensor.RandBernoulliAt(device.Host(), key, base, tensor.Float32, 1-rate, n, tq, w))
			got, dq, dv := tensor.ToSlice[float32](ops.Cast(onHost(t, out), tensor.Float32)), tensor.ToSlice[float32](ops.Cast(onHost(t, grads[0]), tensor.Float32)), tensor.ToSlice[float32](ops.Cast(onHost(t, grads[1]), tensor.Float32))
			for b := range n {
				for i := range tq {
					kept := 0.0
					for j := range w {
						kept += float64(z[(b*tq+i)*w+j])
					}
					for j := range w {
						e := (b*tq+i)*w + j
						zf := 2 * float64(z[e]) // 1/(1−rate)
						if want := zf / w; !near(got[e], want) {
							t.Fatalf("%v (starts %v): out[%d %d %d] = %v, want %v", dt, withStarts, b, i, j, got[e], want)
						}
						if want := (zf - 2*kept/w) / 64; !near(dq[e], want) {
							t.Fatalf("%v (starts %v): dq[%d %d %d] = %v, want %v", dt, withStarts, b, i, j, dq[e], want)
						}
					}
				}
				for j := range w {
					kept := 0.0
					for i := range tq {
						kept += 2 * float64(z[(b*tq+i)*w+j]) / w
					}
					for x := range w { // dV[j] = Σ_i (P⊙Z)_ij · dO_i, every column alike
						if e := (b*w+j)*w + x; math.Abs(float64(dv[e])-kept) > kept*1e-2 {
							t.Fatalf("%v (starts %v): dv[%d %d %d] = %v, want %v", dt, withStarts, b, j, x, dv[e], kept)
						}
					}
				}
			}
		}
	}
	ran("flash_fwd_bf16_16_drop", "flash_bwd_q_bf16_16_drop", "flash_bwd_kv_f16_16_drop",
		"flash_fwd_f32_16_drop", "flash_bwd_q_f32_16_drop", "flash_bwd_dk_f32_16_drop", "flash_bwd_dv_f32_16_drop")
}

// watchKernels records the kernels d runs (the emulator's profiler) and
// returns what reports each of names that has not run; on a GPU of the
// driver it reports nothing.
func watchKernels(t *testing.T, d *Device) func(names ...string) {
	ctx, emulated := d.ctx.(*emu.Context)
	if !emulated {
		return func(...string) {}
	}
	ran := map[string]bool{}
	ctx.SetProfiler(func(p emu.Profile) { ran[p.Kernel] = true })
	t.Cleanup(func() { ctx.SetProfiler(nil) })
	return func(names ...string) {
		for _, k := range names {
			if !ran[k] {
				t.Errorf("%s did not run", k)
			}
		}
	}
}

// On random inputs, causal or not, with a mask tensor or not, with an
// even and an odd count of keys, the dropped flash kernels' output and
// gradients (dQ, dK, dV) follow the host's composed ops (AttentionWeights,
// the same mask's DropoutAt, MatMul) computed in float64 from the same
// half values, within the half type's rounding; float32's (its flash
// kernels forced, no mask) within 1e-5 of the largest.
func TestAttentionDropoutFollowsTheComposedOps(t *testing.T) {
	d := testGPU(t)
	ran := watchKernels(t, d)
	defer ran("flash_fwd_bf16_32_mask_drop", "flash_bwd_q_f16_32_mask_drop", "flash_bwd_kv_bf16_32_mask_drop", "flash_bwd_kv_f16_32_drop",
		"flash_fwd_f32_32_drop", "flash_bwd_q_f32_32_drop", "flash_bwd_dk_f32_32_drop", "flash_bwd_dv_f32_32_drop")
	d.SetFlashAttention(true)
	defer d.flashMode.Store(flashAuto)
	r := tensor.NewRNG(17)
	const n, tq, w = 2, 70, 32
	key := [2]uint32{3, 4}
	for _, c := range []struct {
		dt             tensor.DType
		causal, masked bool
		tk             int // odd: a row's pair of neighbouring keys may straddle two draws' blocks
	}{{tensor.BFloat16, false, false, 40}, {tensor.BFloat16, true, false, 39}, {tensor.Float16, true, false, 40}, {tensor.Float16, false, false, 39},
		{tensor.BFloat16, false, true, 39}, {tensor.Float16, true, true, 40}, {tensor.Float32, false, false, 39}, {tensor.Float32, true, false, 40}} {
		dt, causal, tk := c.dt, c.causal, c.tk
		var mask *tensor.Tensor // a mask per batch matrix (the _mask_drop twins)
		if c.masked {
			mask = ops.Gt(tensor.RandUniform(r, tensor.Float32, 0, 1, n, tq, tk), tensor.Scalar(float32(0.3)))
		}
		{
			in := []*tensor.Tensor{
				ops.Cast(tensor.RandNormal(r, tensor.Float32, n, tq, w), dt),
				ops.Cast(tensor.RandNormal(r, tensor.Float32, n, tk, w), dt),
				ops.Cast(tensor.RandNormal(r, tensor.Float32, n, tk, w), dt),
			}
			dout := tensor.RandNormal(r, tensor.Float64, n, tq, w)
			run := func(xs []*tensor.Tensor, dy, mask *tensor.Tensor) []*tensor.Tensor {
				tp := tape.New()
				tp.Watch(xs...)
				out := ops.AttentionDropout(xs[0], xs[1], xs[2], mask, causal, 0, 0.3, nil, 0, 12, key)
				loss := ops.Sum(ops.Mul(ops.Cast(out, tensor.Float64), dy))
				g := tp.Gradient(loss, xs...)
				tp.Stop()
				return append([]*tensor.Tensor{out}, g...)
			}
			var gin, wide []*tensor.Tensor
			for _, x := range in {
				gin, wide = append(gin, onGPU(t, d, x)), append(wide, ops.Cast(x, tensor.Float64))
			}
			var gmask *tensor.Tensor
			if mask != nil {
				gmask = onGPU(t, d, mask)
			}
			got, want := run(gin, onGPU(t, d, dout), gmask), run(wide, dout, mask)
			for i, name := range []string{"out", "dq", "dk", "dv"} {
				g, wv := tensor.ToSlice[float64](ops.Cast(onHost(t, got[i]), tensor.Float64)), tensor.ToSlice[float64](want[i])
				top := 0.0
				for _, v := range wv {
					top = math.Max(top, math.Abs(v))
				}
				tol := 2e-2
				if dt == tensor.Float32 {
					tol = 1e-5
				}
				for j := range wv {
					if math.Abs(g[j]-wv[j]) > tol*top {
						t.Fatalf("%v causal %v masked %v, %d keys: %s[%d] = %v, the host gives %v (largest %v)", dt, causal, c.masked, tk, name, j, g[j], wv[j], top)
					}
				}
			}
		}
	}
}

// The GPT's mixed bfloat16 and float32 steps with dropout on the GPU
// drop the attention's weights inside the flash kernels (the _drop twins
// ran),
// eager, traced and recorded (the masks drawn where the step's RNG
// argument says: a recording's replays draw afresh) to the bit alike,
// and follow the CPU's steps, which draw the same masks.
func TestGPTStepsWithDropoutOnGPU(t *testing.T) {
	d := testGPU(t)
	ran := watchKernels(t, d)
	ids := make([]int32, 2*12)
	for i := range ids {
		ids[i] = int32(32 + (i*11)%60)
	}
	// Float32's flash kernels forced (the model is below their size).
	d.SetFlashAttention(true)
	defer d.flashMode.Store(flashAuto)
	for _, compute := range []tensor.DType{tensor.BFloat16, tensor.Float32} {
		var modes [4][]float64
		c := model.Config{Layers: 1, Heads: 2, Dim: 32, Context: 12, Compute: compute, Dropout: 0.25}
		for i, mode := range []string{"eager", "traced", "recorded", "cpu"} {
			dev := device.Device(d)
			if mode == "cpu" {
				dev, mode = device.Host(), "eager"
			}
			modes[i] = gptStepLosses(t, dev, mode, c, ids)
		}
		if !slices.Equal(modes[0], modes[1]) || !slices.Equal(modes[0], modes[2]) {
			t.Errorf("%v: losses eager %v, traced %v, recorded %v", compute, modes[0], modes[1], modes[2])
		}
		tol := 2e-2
		if compute == tensor.Float32 {
			tol = 1e-4
		}
		for i := range modes[3] {
			if math.Abs(modes[0][i]-modes[3][i]) > tol*math.Abs(modes[3][i]) {
				t.Errorf("%v: losses on the GPU %v, on the CPU %v", compute, modes[0], modes[3])
				break
			}
		}
		if modes[0][0] == modes[0][1] {
			t.Errorf("%v: the steps' losses repeat: %v", compute, modes[0])
		}
	}
	ran("flash_fwd_bf16_16_drop", "flash_bwd_q_bf16_16_drop", "flash_bwd_kv_bf16_16_drop",
		"flash_fwd_f32_16_drop", "flash_bwd_q_f32_16_drop", "flash_bwd_dk_f32_16_drop", "flash_bwd_dv_f32_16_drop")
}
