package cuda

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/examples/gpt/model"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A small GPT's training steps on the GPU (the fused LayerNorm, GeluTanh
// and cross-entropy gradient kernels, attention as ops) follow the CPU's,
// and its KV-cache decoding runs there.
func TestGPTStepsOnGPU(t *testing.T) {
	d := testGPU(t)
	ids := make([]int32, 2*6)
	for i := range ids {
		ids[i] = int32(32 + (i*11)%60)
	}
	var losses [2][]float64
	for i, dev := range []device.Device{device.Host(), d} {
		onDevice(dev, func() {
			m := model.New(tensor.NewRNG(3), model.Config{Layers: 1, Heads: 2, Dim: 8, Context: 6})
			opt := model.NewOptimizer(10)
			x, _ := tensor.FromSlice(ids, 2, 6).To(dev)
			y, _ := tensor.FromSlice(append(ids[1:], 40), 2, 6).To(dev)
			for range 3 {
				l, err := m.TrainStep(opt, x, y)
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = append(losses[i], l)
			}
			caches := m.NewCaches()
			first, _ := tensor.FromSlice([]int32{'f'}, 1, 1).To(dev)
			if logits := m.Decode(first, caches); logits.Device() != dev || caches[0].Len() != 1 {
				t.Errorf("decoding on %s: logits on %s, %d cached", dev.Name(), logits.Device().Name(), caches[0].Len())
			}
		})
	}
	for i := range losses[0] {
		if math.Abs(losses[0][i]-losses[1][i]) > 1e-4 {
			t.Fatalf("losses on the CPU %v, on the GPU %v", losses[0], losses[1])
		}
	}
}

// The GPT's mixed bfloat16 steps on the GPU, whose attention (heads of
// 16) takes the tensor-core flash kernels, follow the CPU's, which
// computes attention through float32: the losses of four Adam steps
// within the bfloat16 rounding of the probabilities; traced and recorded
// steps equal eager ones.
func TestMixedGPTStepsTakeTheFlashKernels(t *testing.T) {
	d := testGPU(t)
	if d.info.Major < 8 {
		t.Skipf("%s has compute capability %d.%d; the tensor-core kernels want 8.0", d.Name(), d.info.Major, d.info.Minor)
	}
	_, emulated := d.ctx.(*emu.Context)
	ran := watchKernels(t, d)
	ids := make([]int32, 2*12)
	for i := range ids {
		ids[i] = int32(32 + (i*13)%70)
	}
	var losses [2][]float64
	for i, dev := range []device.Device{device.Host(), d} {
		onDevice(dev, func() {
			m := model.New(tensor.NewRNG(5), model.Config{Layers: 1, Heads: 2, Dim: 32, Context: 12, Compute: tensor.BFloat16})
			opt := model.NewOptimizer(10)
			x, _ := tensor.FromSlice(ids, 2, 12).To(dev)
			y, _ := tensor.FromSlice(append(ids[1:], 40), 2, 12).To(dev)
			for range 4 {
				l, err := m.TrainStep(opt, x, y)
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = append(losses[i], l)
			}
		})
	}
	for i := range losses[0] {
		if math.Abs(losses[0][i]-losses[1][i]) > 2e-3*math.Abs(losses[0][i]) {
			t.Fatalf("losses on the CPU %v, on the GPU %v", losses[0], losses[1])
		}
	}
	ran("flash_fwd_bf16_16", "flash_bwd_q_bf16_16", "flash_bwd_kv_bf16_16")
	t.Logf("losses on the CPU %v, on %s %v", losses[0], d.Name(), losses[1])
	// Traced and recorded (a CUDA graph holding the kernels' mma, ldmatrix
	// and cp.async), the steps are the eager steps' to the bit.
	var modes [3][]float64
	launches := graphLaunches(d)
	for i, mode := range []string{"eager", "traced", "recorded"} {
		before := launches()
		modes[i] = gptStepLosses(t, d, mode, model.Config{Layers: 1, Heads: 2, Dim: 32, Context: 12, Compute: tensor.BFloat16}, ids)
		if n := launches() - before; emulated && mode == "recorded" && n != 3 {
			t.Errorf("the recorded steps launched %d graphs, want 3 (the first step traces)", n)
		}
	}
	if !slices.Equal(modes[0], modes[1]) || !slices.Equal(modes[0], modes[2]) {
		t.Errorf("losses eager %v, traced %v, recorded %v", modes[0], modes[1], modes[2])
	}
}

// Attention on the GPU (the cuBLAS products and the row kernels) equals
// the CPU's in value and in the gradients of q, k and v: a mask per batch
// with a row of nothing, causal with more keys than queries, masks that
// broadcast (key padding), float64 and float32.
func TestAttentionOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(8)
	mask := attentionTestMask()
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		q, k, v := tensor.RandNormal(r, dt, 2, 3, 4, 5), tensor.RandNormal(r, dt, 2, 3, 6, 5), tensor.RandNormal(r, dt, 2, 3, 6, 3)
		tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 1e-5}[dt]
		attentionAgrees(t, d, fmt.Sprintf("%v masked", dt), q, k, v, mask, false, tol)
		attentionAgrees(t, d, fmt.Sprintf("%v causal", dt), q, k, v, nil, true, tol)
		// Broadcast masks: a sequence's key padding, one row for all.
		attentionAgrees(t, d, fmt.Sprintf("%v key padding", dt), q, k, v, flashTestMask(2, 1, 1, 6), true, tol)
		attentionAgrees(t, d, fmt.Sprintf("%v a row for all", dt), q, k, v, flashTestMask(1, 6), false, tol)
	}
}

// A query that attends to one key has no gradient, whatever the scale of
// the gradient flowing in: the GPU's δ (rowsum of dO⊙O) is rounded to the
// dtype, as the CPU's is, so dP − δ is exactly 0 there, where a float64 δ
// left dP's float32 rounding, times a gradient of a million, as a query
// gradient of 0.06 (found by the GPU differential suite, seed 99).
func TestAttentionOneKeyHasNoQueryGradient(t *testing.T) {
	d := testGPU(t)
	q := tensor.FromSlice([]float32{1.5830165, 0.9047253, -1.3930354}, 1, 3, 1)
	k := tensor.FromSlice([]float32{1.0202094, -1.5423858}, 1, 2, 1)
	v := tensor.FromSlice([]float32{0.4397435, -1.6858938, 1.4786442, 0}, 1, 2, 2)
	mask := tensor.FromSlice([]bool{true, false, true, false, true, true}, 3, 2)
	grad := func(q, k, v, mask *tensor.Tensor) []float32 {
		tp := tape.New()
		tp.Watch(q)
		o := ops.Mul(ops.Attention(q, k, v, mask, false, 0), ops.ScalarLike(q, 524.24))
		return tensor.ToSlice[float32](onHost(t, tp.Gradient(ops.Sum(ops.Mul(o, o)), q)[0]))
	}
	cpu, gpu := grad(q, k, v, mask), grad(onGPU(t, d, q), onGPU(t, d, k), onGPU(t, d, v), onGPU(t, d, mask))
	for i := range 2 { // the rows that see key 0 alone
		if cpu[i] != 0 || gpu[i] != 0 {
			t.Errorf("query %d: gradient %v on the CPU, %v on %s, want 0", i, cpu[i], gpu[i], d.Name())
		}
	}
	if math.Abs(float64(gpu[2]-cpu[2])) > 1e-5*math.Abs(float64(cpu[2])) {
		t.Errorf("query 2: gradient %v on %s, the CPU's %v", gpu[2], d.Name(), cpu[2])
	}
}

// Attention of the half types on the GPU takes their own products (the
// scores and their gradient from GEMMs of 16-bit operands into float32,
// three such GEMMs a forward and backward pass on the emulator) and
// agrees with the CPU's, which computes through float32, within the
// rounding of the probabilities and the scores' gradient to the half type
// before their products: two units in the last place (relative to the
// value or 1, whichever is larger).
func TestHalfAttentionOnGPU(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	r := tensor.NewRNG(10)
	mask := attentionTestMask()
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		q, k, v := tensor.RandNormal(r, dt, 2, 3, 4, 5), tensor.RandNormal(r, dt, 2, 3, 6, 5), tensor.RandNormal(r, dt, 2, 3, 6, 3)
		tol := map[tensor.DType]float64{tensor.BFloat16: 1.0 / 64, tensor.Float16: 1.0 / 512}[dt]
		for _, c := range []struct {
			what   string
			mask   *tensor.Tensor
			causal bool
		}{{"masked", mask, false}, {"causal", nil, true}} {
			before := 0
			if emulated {
				before = ctx.MixedGemms
			}
			attentionAgrees(t, d, fmt.Sprintf("%v %s", dt, c.what), q, k, v, c.mask, c.causal, tol)
			if emulated && ctx.MixedGemms-before != 3 {
				t.Errorf("%v %s: %d GEMMs of 16-bit operands into float32, want 3 (the scores forward, the scores and dP backward)", dt, c.what, ctx.MixedGemms-before)
			}
		}
	}
}

// The flash kernels (float32, rows 16, 32 or 64 wide, no mask tensor)
// agree with the CPU, values and the gradients of q, k and v: one block
// of rows and several, sequences that fill no block, more keys than
// queries and fewer, causal or not; and they are what ran.
func TestFlashAttentionOnGPU(t *testing.T) {
	d := testGPU(t)
	d.SetFlashAttention(true) // these are small: the products would take them
	defer d.flashMode.Store(flashAuto)
	var ran []string
	if ctx, ok := d.ctx.(*emu.Context); ok {
		ctx.SetProfiler(func(p emu.Profile) { ran = append(ran, p.Kernel) })
		defer ctx.SetProfiler(nil)
	}
	r := tensor.NewRNG(9)
	for _, c := range []struct{ batch, tq, tk, dim int }{{1, 5, 5, 16}, {2, 70, 130, 32}, {3, 130, 64, 64}, {1, 64, 1, 16}} {
		q := tensor.RandNormal(r, tensor.Float32, c.batch, 2, c.tq, c.dim)
		k := tensor.RandNormal(r, tensor.Float32, c.batch, 2, c.tk, c.dim)
		v := tensor.RandNormal(r, tensor.Float32, c.batch, 2, c.tk, c.dim)
		for _, causal := range []bool{false, true} {
			ran = ran[:0]
			attentionAgrees(t, d, fmt.Sprintf("%+v causal=%v", c, causal), q, k, v, nil, causal, 2e-5)
			if _, ok := d.ctx.(*emu.Context); ok {
				for _, kind := range []string{"flash_fwd", "flash_bwd_q", "flash_bwd_dk", "flash_bwd_dv"} {
					if name := fmt.Sprintf("%s_f32_%d", kind, c.dim); !slices.Contains(ran, name) {
						t.Errorf("%+v causal=%v: %s did not run (ran %v)", c, causal, name, ran)
					}
				}
			}
		}
	}
}

// The half types' flash kernels (the tensor cores' mma, rows 16, 32, 64
// or 128 wide, the widest with one buffer of tiles) agree with the CPU,
// which computes through float32, within the rounding of the probabilities and the scores'
// gradient to the half type before their products (the tolerances of
// TestHalfAttentionOnGPU): one block of rows and several, sequences that
// fill no block, more keys than queries and fewer, causal or not, with a
// mask tensor (one for all batch matrices, or one each) or without; and
// they are what ran (no GEMM), by default; more blocks than a launch's
// grid.
func TestHalfFlashAttentionOnGPU(t *testing.T) {
	d := testGPU(t)
	if d.info.Major < 8 {
		t.Skipf("%s has compute capability %d.%d; the tensor-core kernels want 8.0", d.Name(), d.info.Major, d.info.Minor)
	}
	ctx, emulated := d.ctx.(*emu.Context)
	var ran []string
	if emulated {
		ctx.SetProfiler(func(p emu.Profile) { ran = append(ran, p.Kernel) })
		defer ctx.SetProfiler(nil)
	}
	r := tensor.NewRNG(11)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		tol := map[tensor.DType]float64{tensor.BFloat16: 1.0 / 64, tensor.Float16: 1.0 / 512}[dt]
		// The last case has more blocks than the grid (the emulator's
		// 4 SMs: 32 blocks): a block of threads takes several in turn.
		for _, c := range []struct{ batch, tq, tk, dim int }{{1, 5, 5, 16}, {2, 70, 130, 32}, {1, 130, 64, 64}, {1, 64, 1, 16}, {1, 70, 90, 128}, {20, 100, 70, 16}} {
			q := tensor.RandNormal(r, dt, c.batch, 2, c.tq, c.dim)
			k := tensor.RandNormal(r, dt, c.batch, 2, c.tk, c.dim)
			v := tensor.RandNormal(r, dt, c.batch, 2, c.tk, c.dim)
			for _, m := range []struct {
				causal bool
				mask   *tensor.Tensor
				suffix string
			}{{false, nil, ""}, {true, nil, ""}, {false, flashTestMask(c.tq, c.tk), "_mask"}, {true, flashTestMask(c.batch, 2, c.tq, c.tk), "_mask"},
				{false, flashTestMask(c.batch, 1, 1, c.tk), "_mask"}, {true, flashTestMask(1, c.tk), "_mask"}} { // key padding: per sequence, for all
				if c.batch > 2 && (m.causal || m.mask != nil) {
					continue // the grid's case: once is enough
				}
				causal := m.causal
				ran = ran[:0]
				before := 0
				if emulated {
					before = ctx.MixedGemms
				}
				what := fmt.Sprintf("%v %+v causal=%v mask=%v", dt, c, causal, m.mask != nil)
				attentionAgrees(t, d, what, q, k, v, m.mask, causal, tol)
				if !emulated {
					continue
				}
				for _, kind := range []string{"flash_fwd", "flash_bwd_q", "flash_bwd_kv"} {
					if name := fmt.Sprintf("%s_%s_%d%s", kind, kernelType(dt), c.dim, m.suffix); !slices.Contains(ran, name) {
						t.Errorf("%s: %s did not run (ran %v)", what, name, ran)
					}
				}
				if n := ctx.MixedGemms - before; n != 0 {
					t.Errorf("%s: %d GEMMs beside the flash kernels", what, n)
				}
			}
		}
	}
}

// flashTestMask is a bool mask of shape (its last two dimensions [tq
// tk]) that drops about a third of the scores, and every key of query 1
// (a row of nothing: NaN, no gradient) where there are two queries or
// more.
func flashTestMask(shape ...int) *tensor.Tensor {
	n := tensor.Shape(shape).NumElements()
	tq, tk := shape[len(shape)-2], shape[len(shape)-1]
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = (i*7)%3 != 0
		if tq > 1 && (i/tk)%tq == 1 {
			keep[i] = false
		}
	}
	return tensor.FromSlice(keep, shape...)
}

// attentionTestMask is a [2 3 4 6] mask of keys for [2 3] heads of 4
// queries and 6 keys, with a row of nothing (batch 0, head 0, query 2).
func attentionTestMask() *tensor.Tensor {
	keep := make([]bool, 2*3*4*6)
	for i := range keep {
		keep[i] = i%5 != 1
	}
	for j := range 6 {
		keep[2*6+j] = false
	}
	return tensor.FromSlice(keep, 2, 3, 4, 6)
}

// attentionAgrees checks ops.Attention of q, k, v (mask: nil for none)
// and its gradients on d against the CPU's, within tol relative (NaN
// where the CPU has NaN).
func attentionAgrees(t *testing.T, d *Device, what string, q, k, v, mask *tensor.Tensor, causal bool, tol float64) {
	t.Helper()
	dt := q.DType()
	var vals [2]*tensor.Tensor
	var grads [2][]*tensor.Tensor
	for i, dev := range []device.Device{device.Host(), d} {
		on := func(x *tensor.Tensor) *tensor.Tensor {
			if x == nil {
				return nil
			}
			y, err := x.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			return y
		}
		qd, kd, vd := on(q), on(k), on(v)
		tp := tape.New()
		tp.Watch(qd, kd, vd)
		out := ops.Attention(qd, kd, vd, on(mask), causal, 0)
		w := on(tensor.RandUniform(tensor.NewRNG(2), dt, -1, 1, out.Shape()...))
		safe := ops.Where(ops.IsFinite(out), out, ops.ZerosLike(out)) // a row of nothing is NaN
		grads[i] = tp.Gradient(ops.Sum(ops.Mul(safe, w)), qd, kd, vd)
		vals[i] = out
	}
	for j, pair := range [][2]*tensor.Tensor{{vals[0], vals[1]}, {grads[0][0], grads[1][0]}, {grads[0][1], grads[1][1]}, {grads[0][2], grads[1][2]}} {
		a := tensor.ToSlice[float64](ops.Cast(pair[0], tensor.Float64))
		b := tensor.ToSlice[float64](ops.Cast(onHost(t, pair[1]), tensor.Float64))
		for e := range a {
			if !(math.Abs(a[e]-b[e]) <= tol*math.Max(1, math.Abs(a[e]))) && !(math.IsNaN(a[e]) && math.IsNaN(b[e])) {
				t.Fatalf("%s, output %d (value, dq, dk, dv): element %d is %v on the GPU, %v on the CPU", what, j, e, b[e], a[e])
			}
		}
	}
}

// The GPT example's generation (a traced While over the positions, a
// DynamicUpdateSlice of the KV caches a step) runs on the GPU as one
// recorded graph, its loop a conditional node: the bytes the CPU
// generates, greedy and sampled, and one graph launch a generation once
// traced.
func TestGPTGenerationRecordedOnGPU(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	ctx, emulated := d.ctx.(*emu.Context)
	prompt := []byte("func ")
	type gen struct {
		n           int
		temperature float64
		topK        int
		seed        uint64
	}
	gens := []gen{{12, 0, 0, 1}, {9, 0, 0, 1}, {15, 1.5, 40, 7}, {15, 1.5, 40, 8}}
	var out [2][][]byte
	for i, dev := range []device.Device{device.Host(), d} {
		onDevice(dev, func() {
			m := model.New(tensor.NewRNG(4), model.Config{Layers: 2, Heads: 2, Dim: 16, Context: 24})
			for j, g := range gens {
				before, passes := graphLaunches(d)(), 0
				if emulated {
					passes = ctx.LoopPasses
				}
				b, err := m.Generate(prompt, g.n, g.temperature, g.topK, g.seed)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = append(out[i], b)
				// The second call of a sampling choice replays its graph.
				if dev == device.Device(d) && emulated && (j == 1 || j == 3) {
					if n := graphLaunches(d)() - before; n != 1 {
						t.Errorf("generation %d: %d graph launches, want 1", j, n)
					}
					if p := ctx.LoopPasses - passes; p != len(prompt)+g.n-1 {
						t.Errorf("generation %d: %d loop passes on the device, want %d", j, p, len(prompt)+g.n-1)
					}
				}
			}
		})
	}
	for j := range gens {
		if !slices.Equal(out[0][j], out[1][j]) {
			t.Errorf("generation %d: %q on the GPU, %q on the CPU", j, out[1][j], out[0][j])
		}
	}
}

// A decoder's cross-attention (nn.MultiHeadAttention.ForwardCross) in
// bfloat16 with heads of 16 and its memory's padding runs on the GPU
// through the tensor-core kernels' mask twins (the [N, 1, 1, Tk] key
// padding read in place) and follows the CPU's.
func TestCrossAttentionOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(12)
	const n, tq, tk, c = 2, 5, 9, 32
	x := ops.Cast(tensor.RandNormal(r, tensor.Float32, n, tq, c), tensor.BFloat16)
	mem := tensor.RandNormal(r, tensor.Float32, n, tk, c)
	keep := make([]bool, n*tk)
	for i := range keep {
		keep[i] = i < tk || i%tk < 6
	}
	var outs [2][]float32
	for i, dev := range []device.Device{device.Host(), d} {
		onDevice(dev, func() {
			m := nn.NewMultiHeadAttention("a", tensor.NewRNG(1), c, 2, nn.MultiHeadAttentionOpts{})
			xd, _ := x.To(dev)
			md, _ := mem.To(dev)
			outs[i] = tensor.ToSlice[float32](onHost(t, ops.Cast(m.ForwardCross(xd, md, tensor.FromSlice(keep, n, tk)), tensor.Float32)))
		})
	}
	for i := range outs[0] {
		if math.Abs(float64(outs[0][i]-outs[1][i])) > 1.0/32*math.Max(1, math.Abs(float64(outs[0][i]))) {
			t.Fatalf("element %d: %v on the GPU, %v on the CPU", i, outs[1][i], outs[0][i])
		}
	}
}

// gptStepLosses is the losses of four steps (stepOf(mode): eager, traced
// or recorded, Adam's) of a GPT of shape c on dev, trained on ids (2
// sequences of c.Context bytes) to predict their next bytes.
func gptStepLosses(t *testing.T, dev device.Device, mode string, c model.Config, ids []int32) []float64 {
	var losses []float64
	onDevice(dev, func() {
		m := model.New(tensor.NewRNG(5), c)
		step := stepOf(mode)(m, model.Loss, model.NewOptimizer(10))
		x, _ := tensor.FromSlice(ids, 2, c.Context).To(dev)
		y, _ := tensor.FromSlice(append(ids[1:], 40), 2, c.Context).To(dev)
		for range 4 {
			l, _, err := step(data.Element{x, y})
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, l)
		}
	})
	return losses
}
