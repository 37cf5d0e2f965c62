package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/examples/gpt/model"
	"github.com/eagerflow/eagerflow/internal/benchmodels"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/profile"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPU benchmarks (names end in GPU, as scripts/gpu-run.sh selects
// them). They skip on the emulator, whose times mean nothing.

func benchGPU(b *testing.B) *Device {
	d := testGPU(b)
	// EAGERFLOW_BENCH_EMULATOR=1 runs them there anyway, to check that
	// they run before a GPU is lent (with -test.benchtime 1x).
	if strings.Contains(d.Driver(), "emulator") && os.Getenv("EAGERFLOW_BENCH_EMULATOR") != "1" {
		b.Skip("the emulator's times mean nothing: run with EAGERFLOW_REQUIRE_GPU=1 on a GPU")
	}
	return d
}

// waitGPU waits for the device, failing the benchmark or test on error.
func waitGPU(tb testing.TB, d *Device) {
	tb.Helper()
	if err := d.Synchronize(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkEagerAddGPU is the per-op cost of a small eager op: the launch
// and the dispatch around it.
func BenchmarkEagerAddGPU(b *testing.B) {
	d := benchGPU(b)
	x := onGPU(b, d, tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 16))
	// The first add loads its module (the driver compiles its PTX, seconds
	// for a large one on a fresh machine): outside the timing.
	ops.Add(x, x).Release()
	waitGPU(b, d)
	b.ResetTimer()
	for range b.N {
		ops.Add(x, x).Release()
	}
	waitGPU(b, d)
}

// BenchmarkAddBandwidthGPU is a large elementwise add; bytes are those
// read and written, for comparison with BenchmarkCopyBandwidthGPU.
func BenchmarkAddBandwidthGPU(b *testing.B) {
	d := benchGPU(b)
	const n = 1 << 26
	x := onGPU(b, d, tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, n))
	y := onGPU(b, d, tensor.RandNormal(tensor.NewRNG(2), tensor.Float32, n))
	b.SetBytes(3 * 4 * n)
	ops.Add(x, y).Release()
	waitGPU(b, d)
	b.ResetTimer()
	for range b.N {
		ops.Add(x, y).Release()
	}
	waitGPU(b, d)
}

// BenchmarkCopyBandwidthGPU is a device-to-device copy of the same bytes
// per element pair: the memory's practical ceiling.
func BenchmarkCopyBandwidthGPU(b *testing.B) {
	d := benchGPU(b)
	const n = 1 << 27
	src, err := d.Alloc(4 * n)
	if err != nil {
		b.Fatal(err)
	}
	dst, err := d.Alloc(4 * n)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(2 * 4 * n)
	b.ResetTimer()
	for range b.N {
		if err := d.Copy(dst, 0, []int{1}, src, 0, []int{1}, []int{n}, 4); err != nil {
			b.Fatal(err)
		}
	}
	waitGPU(b, d)
}

// BenchmarkMatMulGPU is an 8192³ product (64³ on the emulator) through
// MatMul in float32, exact and TF32, bfloat16 and float16, and through
// ScaledMatMul in float8_e4m3, with the float32 and FP8 GEMMs through
// cuBLAS directly beside them; TFLOP/s reported.
func BenchmarkMatMulGPU(b *testing.B) {
	d := benchGPU(b)
	n := 8192
	if strings.Contains(d.Driver(), "emulator") {
		n = 64 // only that the benchmarks run
	}
	r := tensor.NewRNG(3)
	x := onGPU(b, d, tensor.RandNormal(r, tensor.Float32, n, n))
	y := onGPU(b, d, tensor.RandNormal(r, tensor.Float32, n, n))
	flops := 2 * float64(n) * float64(n) * float64(n)
	// gemm is one GEMM straight through the context (no op around it).
	gemm := func(b *testing.B, g cu.Gemm) func() {
		return func() {
			if err := d.gemm(g); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, tf32 := range []bool{false, true} {
		d.SetTF32(tf32)
		b.Run(fmt.Sprintf("op/tf32=%v", tf32), func(b *testing.B) {
			benchTFLOPs(b, d, flops, func() { ops.MatMul(x, y).Release() })
		})
		b.Run(fmt.Sprintf("cublas/tf32=%v", tf32), func(b *testing.B) {
			out, err := tensor.Empty(d, tensor.Float32, tensor.Shape{n, n})
			if err != nil {
				b.Fatal(err)
			}
			benchTFLOPs(b, d, flops, gemm(b, cu.Gemm{Type: cu.Float32, M: n, N: n, K: n, Alpha: 1, A: ptr(y), LDA: n, B: ptr(x), LDB: n,
				C: ptr(out), LDC: n, Batch: 1, TF32: tf32}))
		})
	}
	d.SetTF32(false)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		xh, yh := ops.Cast(x, dt), ops.Cast(y, dt)
		b.Run(fmt.Sprintf("op/%v", dt), func(b *testing.B) {
			benchTFLOPs(b, d, flops, func() { ops.MatMul(xh, yh).Release() })
		})
	}
	// FP8 (ops.ScaledMatMul, e4m3 operands, bfloat16 out), as PyTorch's
	// torch._scaled_mm: the op (b turned to [n k] first, as _scaled_mm
	// wants its second operand column-major) and the GEMM alone.
	x8, y8 := ops.Cast(x, tensor.Float8E4M3), ops.Cast(y, tensor.Float8E4M3)
	one := onGPU(b, d, tensor.Scalar(float32(1)))
	b.Run("op/float8_e4m3", func(b *testing.B) {
		benchTFLOPs(b, d, flops, func() { ops.ScaledMatMul(x8, y8, one, one, tensor.BFloat16).Release() })
	})
	b.Run("cublas/float8_e4m3", func(b *testing.B) {
		out, err := tensor.Empty(d, tensor.BFloat16, tensor.Shape{n, n})
		if err != nil {
			b.Fatal(err)
		}
		g := cu.Gemm{Type: cu.BFloat16, TransA: true, M: n, N: n, K: n, Alpha: 1, A: ptr(y8), LDA: n, B: ptr(x8), LDB: n,
			C: ptr(out), LDC: n, Batch: 1, FP8A: cu.Float8E4M3, FP8B: cu.Float8E4M3, ScaleA: ptr(one), ScaleB: ptr(one)}
		if err := d.gemm(g); err != nil {
			b.Skipf("no FP8 GEMM here: %v", err)
		}
		benchTFLOPs(b, d, flops, gemm(b, g))
	})
}

// benchTFLOPs times run, once before the clock starts (plans, workspace)
// and b.N times after, waiting for the device at both ends, and reports
// TFLOP/s for flops per run.
func benchTFLOPs(b *testing.B, d *Device, flops float64, run func()) {
	run()
	waitGPU(b, d)
	b.ResetTimer()
	for range b.N {
		run()
	}
	waitGPU(b, d)
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
}

// BenchmarkMLPStepGPU is one training step of a 784-512-512-10 MLP on a
// batch of 256 (forward, the tape's gradients, Adam), all on the GPU.
func BenchmarkMLPStepGPU(b *testing.B) {
	d := benchGPU(b)
	restore := device.SetDefault(d)
	defer restore()
	r := tensor.NewRNG(4)
	x := tensor.RandNormal(r, tensor.Float32, 256, 784)
	y := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 10, 256), tensor.Int32)
	model := nn.NewSequential(
		nn.NewDense("dense1", r, 784, 512, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("dense2", r, 512, 512, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("logits", r, 512, 10, nn.DenseOpts{}))
	opt := nn.NewAdam(nn.Constant(1e-3))
	step := func() {
		tp := tape.New(tape.Options{ReleaseIntermediates: true})
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(x), y)
		vars := model.Variables()
		if err := opt.Apply(vars, tp.Gradient(loss, nn.Values(vars)...)); err != nil {
			b.Fatal(err)
		}
	}
	timeSteps(b, d, step)
}

// BenchmarkMLPTrainStepGPU is BenchmarkMLPStepGPU's step as nn's steps
// take it, reading the loss each step: eager (nn.TrainStep), traced
// (nn.TracedTrainStep) and recorded (nn.RecordedTrainStep: one CUDA graph
// for the forward and backward pass; PyTorch's twin captures its step in
// one too).
func BenchmarkMLPTrainStepGPU(b *testing.B) {
	d := benchGPU(b)
	for _, mode := range []string{"eager", "traced", "recorded", "eager/mixed_bfloat16", "traced/mixed_bfloat16", "recorded/mixed_bfloat16"} {
		mode, policy := policyOf(mode)
		b.Run(benchName(mode, policy), func(b *testing.B) {
			restore := device.SetDefault(d)
			defer restore()
			r := tensor.NewRNG(4)
			x := tensor.RandNormal(r, tensor.Float32, 256, 784)
			y := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 10, 256), tensor.Int32)
			model := nn.NewSequential(
				nn.NewDense("dense1", r, 784, 512, nn.DenseOpts{Activation: ops.Relu}),
				nn.NewDense("dense2", r, 512, 512, nn.DenseOpts{Activation: ops.Relu}),
				nn.NewDense("logits", r, 512, 10, nn.DenseOpts{}))
			model.Policy = policy
			opt := nn.NewAdam(nn.Constant(1e-3))
			step := stepOf(mode)(model, nn.SparseSoftmaxCrossEntropy, opt)
			batch := data.Element{x, y}
			timeSteps(b, d, func() {
				if _, _, err := step(batch); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// policyOf splits a benchmark mode "eager/mixed_bfloat16" into the step's
// mode and the model's mixed-precision policy (none without a suffix).
func policyOf(mode string) (string, nn.Policy) {
	step, policy, _ := strings.Cut(mode, "/")
	switch policy {
	case "mixed_bfloat16":
		return step, nn.MixedBFloat16
	case "mixed_float16":
		return step, nn.MixedFloat16
	}
	return step, nn.Policy{}
}

// benchName is a sub-benchmark's name: the mode, and the policy if any.
func benchName(mode string, p nn.Policy) string {
	if p.Compute == tensor.Invalid {
		return mode
	}
	return mode + "/" + p.String()
}

// stepOf returns nn's step maker for a benchmark's mode.
func stepOf(mode string) func(nn.Module, nn.Loss, nn.Optimizer) nn.Step {
	return map[string]func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{
		"eager": nn.TrainStep, "traced": nn.TracedTrainStep, "recorded": nn.RecordedTrainStep,
	}[mode]
}

// timeSteps times b.N calls of step after two untimed (a traced step's
// first traces, a recorded one's second records), the GPU drained before
// and after.
func timeSteps(b *testing.B, d *Device, step func()) {
	step()
	step()
	waitGPU(b, d)
	b.ResetTimer()
	for range b.N {
		step()
	}
	waitGPU(b, d)
}

// rnnGrad returns the gradient in w of sum(h) after 50 steps of h ←
// tanh(h·w + x_t) through While (h [1 128], w [128 128], float32), the
// bench package's RNN loop gradient, on the default device.
func rnnGrad(w, xs, h0 *tensor.Tensor) *tensor.Tensor {
	tp := tape.New()
	tp.Watch(w)
	steps := tensor.FullOn(h0.Device(), tensor.Int64, float64(xs.Dim(0)))
	one := tensor.FullOn(h0.Device(), tensor.Int64, 1)
	out := control.While(
		func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], steps) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			x := ops.Gather(xs, v[0], 0)
			return []*tensor.Tensor{ops.Add(v[0], one), ops.Tanh(ops.Add(ops.MatMul(v[1], w), x))}
		},
		[]*tensor.Tensor{tensor.FullOn(h0.Device(), tensor.Int64, 0), h0})
	return tp.Gradient(ops.Sum(out[1]), w)[0]
}

// BenchmarkRNNLoopGradGPU is the RNN loop gradient (forward and backward
// of 50 steps) on the GPU, eager, traced (the loop a frame) and recorded
// (trace.Function.Record: its trip count fixed by constants, the loop is
// traced unrolled and replayed as one CUDA graph).
func BenchmarkRNNLoopGradGPU(b *testing.B) {
	d := benchGPU(b)
	r := tensor.NewRNG(11)
	w := ops.Mul(tensor.RandNormalOn(d, r, tensor.Float32, 128, 128), onGPU(b, d, tensor.Scalar(float32(0.08))))
	xs := tensor.RandNormalOn(d, r, tensor.Float32, 50, 128)
	h0 := tensor.FullOn(d, tensor.Float32, 0, 1, 128)
	for _, mode := range []string{"eager", "traced", "recorded"} {
		traced := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{rnnGrad(a[0], a[1], a[2])} })
		traced.Record = mode == "recorded"
		b.Run(mode, func(b *testing.B) {
			step := func() {
				if mode == "eager" {
					rnnGrad(w, xs, h0)
					return
				}
				if _, err := traced.Call(w, xs, h0); err != nil {
					b.Fatal(err)
				}
			}
			timeSteps(b, d, step)
		})
	}
}

// BenchmarkConvergenceLoopGPU iterates h ← tanh(h·w + x) (h [1 128], w
// [128 128] of N(0, 0.06²) entries, float32) until no element moves
// by more than 1e-5, at most 100 times: a loop whose trip count the data
// decide. Eager and traced (its frame run op by op), the host reads the
// predicate every iteration; recorded (trace.Function.Record), the loop
// is a conditional WHILE node of the CUDA graph: one launch a call, no
// host round trip inside. iters is the trip count (bench/peers'
// torch_gpu.py's twin loops in Python, reading its predicate with .item()).
func BenchmarkConvergenceLoopGPU(b *testing.B) {
	d := benchGPU(b)
	r := tensor.NewRNG(11)
	w := ops.Mul(tensor.RandNormalOn(d, r, tensor.Float32, 128, 128), onGPU(b, d, tensor.Scalar(float32(0.06))))
	x := tensor.RandNormalOn(d, r, tensor.Float32, 1, 128)
	h0 := tensor.FullOn(d, tensor.Float32, 0, 1, 128)
	tol, one := tensor.FullOn(d, tensor.Float32, 1e-5), tensor.FullOn(d, tensor.Float32, 1)
	var iters int
	loop := func(a []*tensor.Tensor) []*tensor.Tensor {
		out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Gt(v[1], tol) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				h := ops.Tanh(ops.Add(ops.MatMul(v[0], a[0]), a[1]))
				return []*tensor.Tensor{h, ops.Amax(ops.Abs(ops.Sub(h, v[0]))), ops.Add(v[2], one)}
			}, []*tensor.Tensor{a[2], one, tensor.FullOn(d, tensor.Float32, 0)}, control.WhileOptions{MaxIterations: 100})
		return []*tensor.Tensor{out[0], out[2]}
	}
	for _, mode := range []string{"eager", "traced", "recorded"} {
		traced := trace.NewFunction(loop)
		traced.Record = mode == "recorded"
		b.Run(mode, func(b *testing.B) {
			var last []*tensor.Tensor
			step := func() {
				if mode == "eager" {
					last = loop([]*tensor.Tensor{w, x, h0})
					return
				}
				var err error
				if last, err = traced.Call(w, x, h0); err != nil {
					b.Fatal(err)
				}
			}
			timeSteps(b, d, step)
			iters = int(tensor.ToSlice[float32](onHost(b, last[1]))[0])
			b.ReportMetric(float64(iters), "iters")
		})
	}
}

// BenchmarkLoopGradientGPU is the gradient in w of Σh² after h ←
// tanh(h·w) + h while Σh² < 200, at most 16 times (h [4 64], w [64 64] of
// N(0, 0.05²) entries, float32): a loop the data decide, on a tape.
// Eager and traced (the loop and its gradient frames run op by op), the
// host reads each predicate; recorded, the loop's gradient stacks live on
// the device and both loops are WHILE nodes: one launch a call. iters is
// the trip count (torch_gpu.py's twin runs its Python loop under
// autograd). recorded-unbounded is recorded with no MaxIterations: its
// stacks as deep as the trace saw, checked by a read of the device's
// overflow flag after each replay (what that wait costs).
func BenchmarkLoopGradientGPU(b *testing.B) {
	d := benchGPU(b)
	r := tensor.NewRNG(12)
	w := ops.Mul(tensor.RandNormalOn(d, r, tensor.Float32, 64, 64), onGPU(b, d, tensor.Scalar(float32(0.05))))
	x := ops.Mul(tensor.RandNormalOn(d, r, tensor.Float32, 4, 64), onGPU(b, d, tensor.Scalar(float32(0.2))))
	limit := tensor.FullOn(d, tensor.Float32, 200)
	gradBounded := func(bound int) func(a []*tensor.Tensor) []*tensor.Tensor {
		return func(a []*tensor.Tensor) []*tensor.Tensor {
			tp := tape.New()
			tp.Watch(a[0])
			out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(ops.Square(v[0])), limit) },
				func(v []*tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{ops.Add(ops.Tanh(ops.MatMul(v[0], a[0])), v[0]), ops.Add(v[1], ops.OnesLike(v[1]))}
				}, []*tensor.Tensor{a[1], tensor.FullOn(d, tensor.Float32, 0)}, control.WhileOptions{MaxIterations: bound})
			loss := ops.Sum(ops.Square(out[0]))
			return []*tensor.Tensor{tp.Gradient(loss, a[0])[0], out[1]}
		}
	}
	for _, mode := range []string{"eager", "traced", "recorded", "recorded-unbounded"} {
		grad := gradBounded(16)
		if mode == "recorded-unbounded" {
			grad = gradBounded(0)
		}
		f := trace.NewFunction(grad)
		f.Record = strings.HasPrefix(mode, "recorded")
		b.Run(mode, func(b *testing.B) {
			var last []*tensor.Tensor
			step := func() {
				if mode == "eager" {
					last = grad([]*tensor.Tensor{w, x})
					return
				}
				var err error
				if last, err = f.Call(w, x); err != nil {
					b.Fatal(err)
				}
			}
			timeSteps(b, d, step)
			b.ReportMetric(float64(tensor.ToSlice[float32](onHost(b, last[1]))[0]), "iters")
		})
	}
}

// BenchmarkFashionCNNNormedTrainStepGPU is BenchmarkFashionCNNTrainStepGPU's
// step of benchmodels.FashionCNNNormed (BatchNorm after each convolution,
// dropout after the dense layer), eager, traced and recorded: the traced
// step's graph carries the running statistics out and draws the masks
// itself, so the recorded step is still one replay (its PyTorch twin
// captures its step, BatchNorm and dropout in it, as one CUDA graph).
func BenchmarkFashionCNNNormedTrainStepGPU(b *testing.B) {
	d := benchGPU(b)
	for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		for _, mode := range []string{"eager", "traced", "recorded"} {
			b.Run(format.String()+"/"+mode, func(b *testing.B) {
				benchCNNStep(b, d, mode, nn.Policy{}, benchmodels.FashionCNNNormed, format)
			})
		}
	}
}

// benchCNNStep times steps of mode (stepOf) training the model build
// makes in format under policy on d, and reports its peak memory.
func benchCNNStep(b *testing.B, d *Device, mode string, policy nn.Policy, build func(ops.DataFormat) (*nn.Sequential, nn.Optimizer, *tensor.Tensor, *tensor.Tensor), format ops.DataFormat) {
	restore := device.SetDefault(d)
	defer restore()
	model, opt, x, y := build(format)
	model.Policy = policy
	step := stepOf(mode)(model, nn.SparseSoftmaxCrossEntropy, opt)
	batch := data.Element{onGPU(b, d, x), onGPU(b, d, y)}
	run := func() {
		if _, _, err := step(batch); err != nil {
			b.Fatal(err)
		}
	}
	// peak-MB counts the first steps too (a traced step's trace holds
	// every value of the call; a recorded one's recording is made),
	// steady-MB the steps after them.
	d.ResetPeak()
	run()
	run()
	waitGPU(b, d)
	first := d.MemoryStats().Peak
	d.ResetPeak()
	timeSteps(b, d, run)
	steady := d.MemoryStats().Peak
	b.ReportMetric(float64(max(first, steady))/(1<<20), "peak-MB")
	b.ReportMetric(float64(steady)/(1<<20), "steady-MB")
}

// BenchmarkFashionCNNTrainStepGPU is one training step of the
// Fashion-MNIST CNN (internal/benchmodels, batch 128, Adam) on the GPU,
// NHWC and NCHW, eager (nn.TrainStep), traced (nn.TracedTrainStep) and
// recorded (nn.RecordedTrainStep: the traced graph replayed as a CUDA
// graph; PyTorch's twin captures its step in one too), reading the loss on the host each step as its PyTorch twin in
// bench/peers/torch_gpu.py does (loss.item()). peak-MB is the most device
// memory its buffers held (MemoryStats.Peak), beside PyTorch's
// torch.cuda.max_memory_allocated; steady-MB the most after the first two
// steps (a trace's and a recording's).
func BenchmarkFashionCNNTrainStepGPU(b *testing.B) {
	d := benchGPU(b)
	for _, format := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		for _, mode := range []string{"eager", "traced", "recorded", "eager/mixed_bfloat16", "traced/mixed_bfloat16", "recorded/mixed_bfloat16"} {
			mode, policy := policyOf(mode)
			b.Run(format.String()+"/"+benchName(mode, policy), func(b *testing.B) {
				benchCNNStep(b, d, mode, policy, benchmodels.FashionCNN, format)
			})
		}
	}
}

// BenchmarkCharRNNStepGPU is examples/charrnn's training step (an LSTM of
// 96 over 32 characters, batch 16, vocabulary 65; internal/benchmodels)
// on the GPU, eager, traced (the LSTM a loop frame) and recorded (its 32
// steps traced one by one into one CUDA graph), the loss read each step.
func BenchmarkCharRNNStepGPU(b *testing.B) {
	d := benchGPU(b)
	for _, mode := range []string{"eager", "traced", "recorded"} {
		b.Run(mode, func(b *testing.B) {
			restore := device.SetDefault(d)
			defer restore()
			model, opt, x, y := benchmodels.CharLSTM(65)
			step := stepOf(mode)(model, nn.SparseSoftmaxCrossEntropy, opt)
			batch := data.Element{onGPU(b, d, x), onGPU(b, d, y)}
			timeSteps(b, d, func() {
				if _, _, err := step(batch); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// TestStepProfilesGPU prints eagerflow's profile (package profile: host
// and device time per op) of three eager training steps, after three
// unprofiled ones, of the Fashion-MNIST CNN (NHWC), examples/gpt's model
// in the benchmark's shape and the charrnn LSTM. It runs where
// EAGERFLOW_GPU_PROFILE=1 (scripts/gpu-run.sh sets it), on the GPU or,
// slowly, on the emulator, whose device times are its nominal clock's.
func TestStepProfilesGPU(t *testing.T) {
	if os.Getenv("EAGERFLOW_GPU_PROFILE") != "1" {
		t.Skip("EAGERFLOW_GPU_PROFILE=1 runs it (scripts/gpu-run.sh)")
	}
	d := testGPU(t)
	restore := device.SetDefault(d)
	defer restore()
	trainStep := func(model nn.Module, opt nn.Optimizer, x, y *tensor.Tensor) func() error {
		step := nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
		batch := data.Element{onGPU(t, d, x), onGPU(t, d, y)}
		return func() error { _, _, err := step(batch); return err }
	}
	for _, c := range []struct {
		name string
		make func() func() error
	}{
		{"NHWC Fashion-MNIST CNN", func() func() error {
			model, opt, x, y := benchmodels.FashionCNN(ops.NHWC)
			return trainStep(model, opt, x, y)
		}},
		{"GPT", func() func() error {
			shape, n := gptBenchShape(d)
			m, opt := model.New(tensor.NewRNG(1), shape), model.NewOptimizer(1000)
			v := make([]int32, n*shape.Context)
			for i := range v {
				v[i] = int32(32 + (i*7+i/5)%90)
			}
			x := onGPU(t, d, tensor.FromSlice(v, n, shape.Context))
			y := onGPU(t, d, tensor.FromSlice(append(v[1:], 32), n, shape.Context))
			return func() error { _, err := m.TrainStep(opt, x, y); return err }
		}},
		{"charrnn LSTM", func() func() error {
			model, opt, x, y := benchmodels.CharLSTM(65)
			return trainStep(model, opt, x, y)
		}},
	} {
		step := c.make()
		run := func() {
			for range 3 {
				if err := step(); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
		}
		run()
		if err := profile.Start(); err != nil {
			t.Fatal(err)
		}
		run()
		p, err := profile.Stop()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("three %s steps on %s:\n%s", c.name, d.Name(), p.Table())
	}
}

// gptBenchShape is nanoGPT's small character model (6 blocks of 384, 6
// heads, context 256; issue 34's GPU target) and its batch of 64, or a
// toy of it on the emulator (which only checks that the benchmarks run).
func gptBenchShape(d *Device) (model.Config, int) {
	if strings.Contains(d.Driver(), "emulator") {
		return model.Config{Layers: 1, Heads: 2, Dim: 16, Context: 8}, 2
	}
	return model.Config{Layers: 6, Heads: 6, Dim: 384, Context: 256}, 64
}

// BenchmarkGPTStepGPU is examples/gpt's model in nanoGPT's small shape, a
// training step on the GPU, the gradients clipped to a norm of 1 as the
// twin's (nn.ClippedOptimizer over AdamW): eager (model.TrainStep),
// traced (nn.TracedTrainStep) and recorded (nn.RecordedTrainStep: the
// clipping and the update in the recording), and eager in mixed bfloat16
// (model.Config's Compute; the twin runs under torch.autocast), and so
// with dropout 0.2 (the attention's weights materialised to be dropped,
// where the twin's SDPA drops inside its kernel); the loss read each
// step. Float32 attention there is cuBLAS products around row
// kernels, the score matrix materialised (backend/cuda/attention.go);
// bfloat16's takes the tensor-core flash kernels.
func BenchmarkGPTStepGPU(b *testing.B) {
	d := benchGPU(b)
	shape, n := gptBenchShape(d)
	for _, mode := range []string{"eager", "traced", "recorded", "eager/mixed_bfloat16", "eager/mixed_bfloat16/dropout"} {
		b.Run(mode, func(b *testing.B) {
			restore := device.SetDefault(d)
			defer restore()
			c := shape
			if strings.HasPrefix(mode, "eager/mixed_bfloat16") { // the blocks in bfloat16 (cuBLASLt's tensor cores), as torch.autocast
				c.Compute = tensor.BFloat16
				if strings.HasSuffix(mode, "/dropout") { // nanoGPT's character model's rate
					c.Dropout = 0.2
				}
				mode = "eager"
			}
			m := model.New(tensor.NewRNG(1), c)
			opt := model.NewOptimizer(1000)
			v := make([]int32, n*shape.Context)
			for i := range v {
				v[i] = int32(32 + (i*7+i/5)%90)
			}
			x := onGPU(b, d, tensor.FromSlice(v, n, shape.Context))
			y := onGPU(b, d, tensor.FromSlice(append(v[1:], 32), n, shape.Context))
			run := func() {
				if _, err := m.TrainStep(opt, x, y); err != nil {
					b.Fatal(err)
				}
			}
			if mode != "eager" {
				step := stepOf(mode)(m, model.Loss, nn.NewClippedOptimizer(opt, 1))
				batch := data.Element{x, y}
				run = func() {
					if _, _, err := step(batch); err != nil {
						b.Fatal(err)
					}
				}
			}
			d.ResetPeak()
			timeSteps(b, d, run)
			b.ReportMetric(float64(d.MemoryStats().Peak)/(1<<20), "peak-MB")
		})
	}
}

// BenchmarkGPTGenerateGPU generates the model's whole context one byte at
// a time from a one-byte prompt with the KV cache (greedy), and reports
// tokens per second: eager (Decode a byte at a time, the byte chosen on
// the device, as PyTorch's twin does) and recorded (model.Generate: one
// traced While over the positions, recorded as a CUDA graph whose loop
// is a conditional node: one launch a generation).
func BenchmarkGPTGenerateGPU(b *testing.B) {
	d := benchGPU(b)
	shape, _ := gptBenchShape(d)
	restore := device.SetDefault(d)
	defer restore()
	m := model.New(tensor.NewRNG(1), shape)
	first := onGPU(b, d, tensor.FromSlice([]int32{'f'}, 1, 1))
	b.Run("eager", func(b *testing.B) {
		timeSteps(b, d, func() {
			caches := m.NewCaches()
			next := first
			for range shape.Context {
				next = ops.Cast(ops.ArgMax(m.Decode(next, caches), -1), tensor.Int32)
			}
		})
		b.ReportMetric(float64(shape.Context)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
	b.Run("recorded", func(b *testing.B) {
		timeSteps(b, d, func() {
			if _, err := m.Generate([]byte("f"), shape.Context-1, 0, 0, 1); err != nil {
				b.Fatal(err)
			}
		})
		b.ReportMetric(float64(shape.Context-1)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}

// BenchmarkAttentionGPU is scaled dot-product attention, causal, forward
// and backward (the gradients of q, k and v), batch 4, 8 heads of 64, at
// sequences of 1024 and 4096 (issue 34's figures beside PyTorch's fused
// F.scaled_dot_product_attention); 128 on the emulator. Each length runs
// as the device chooses (the flash kernels where the score matrix would
// take FlashAutoBytes or more), then with each path forced: "flash" and
// "products" (the GEMMs and row kernels); "bfloat16" is the same in
// bfloat16 as the device chooses (the tensor-core flash kernels,
// kernels/flash_tc.go), "bfloat16/products" its products path (the
// scores materialised in float32: attention_half.go), and
// "bfloat16/heads128" the flash kernels at 4 heads of 128.
func BenchmarkAttentionGPU(b *testing.B) {
	d := benchGPU(b)
	lengths := []int{1024, 4096}
	if strings.Contains(d.Driver(), "emulator") {
		lengths = []int{128}
	}
	defer d.flashMode.Store(flashAuto)
	for _, t := range lengths {
		for _, path := range []struct {
			name         string
			mode         int32
			dt           tensor.DType
			heads, depth int
		}{{"", flashAuto, tensor.Float32, 8, 64}, {"/flash", flashAlways, tensor.Float32, 8, 64}, {"/products", flashNever, tensor.Float32, 8, 64},
			{"/bfloat16", flashAuto, tensor.BFloat16, 8, 64}, {"/bfloat16/products", flashNever, tensor.BFloat16, 8, 64},
			// Heads of 128 (the same products: half the heads): the
			// kernels whose tiles are in dynamic shared memory.
			{"/bfloat16/heads128", flashAuto, tensor.BFloat16, 4, 128},
			// The weights dropped at 0.1 (ops.AttentionDropout: the flash
			// kernels' _drop twins draw the mask themselves), float32's too.
			{"/bfloat16/dropout", flashAuto, tensor.BFloat16, 8, 64}, {"/dropout", flashAuto, tensor.Float32, 8, 64}} {
			b.Run(fmt.Sprint(t)+path.name, func(b *testing.B) {
				d.flashMode.Store(path.mode)
				restore := device.SetDefault(d)
				defer restore()
				rng := tensor.NewRNG(2)
				shape := []int{4, path.heads, t, path.depth}
				q, k, v := tensor.RandNormal(rng, path.dt, shape...), tensor.RandNormal(rng, path.dt, shape...), tensor.RandNormal(rng, path.dt, shape...)
				q, k, v = onGPU(b, d, q), onGPU(b, d, k), onGPU(b, d, v)
				timeSteps(b, d, func() {
					tp := tape.New()
					tp.Watch(q, k, v)
					var o *tensor.Tensor
					if strings.HasSuffix(path.name, "/dropout") {
						o = ops.AttentionDropout(q, k, v, nil, true, 0, 0.1, nil, 0, 0, [2]uint32{1, 2})
					} else {
						o = ops.Attention(q, k, v, nil, true, 0)
					}
					for _, g := range tp.Gradient(ops.Sum(o), q, k, v) {
						g.Release()
					}
				})
			})
		}
	}
}

// BenchmarkWindowOpsGPU is max pooling (3x3 at a stride of 2, VALID), a
// depthwise convolution (3x3 at a stride of 2, SAME) and BatchNorm in
// training with their gradients, ResNet's and MobileNet's shapes at batch
// 32 ([32 64 112 112] and [32 96 112 112], float32) in both layouts: the
// band kernels' work (pooling's select and scatter, the depthwise
// kernels' bands of rows) and BatchNorm's sums beside PyTorch's (cuDNN's
// pooling, its grouped convolution, its batch norm).
// depthwiseGrads is a depthwise convolution's gradients (3x3, stride 2,
// padding 1) in x and f, for BenchmarkWindowOpsGPU.
func depthwiseGrads(x, f *tensor.Tensor, format ops.DataFormat) []*tensor.Tensor {
	tp := tape.New()
	tp.Watch(x, f)
	o := ops.Conv2DOpts{Padding: ops.Explicit, Explicit: [2][2]int{{1, 1}, {1, 1}}, Strides: [2]int{2, 2}, Format: format}
	return tp.Gradient(ops.Sum(ops.DepthwiseConv2D(x, f, o)), x, f)
}

func BenchmarkWindowOpsGPU(b *testing.B) {
	d := benchGPU(b)
	n, size := 32, 112
	if strings.Contains(d.Driver(), "emulator") {
		n, size = 1, 16
	}
	for _, op := range []struct {
		name     string
		channels int
		run      func(x, f *tensor.Tensor, format ops.DataFormat) []*tensor.Tensor
	}{
		{"MaxPool3x3s2", 64, func(x, _ *tensor.Tensor, format ops.DataFormat) []*tensor.Tensor {
			tp := tape.New()
			tp.Watch(x)
			y := ops.MaxPool2D(x, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Format: format})
			return tp.Gradient(ops.Sum(y), x)
		}},
		// Padding 1 on every side, as PyTorch's twin pads (SAME pads the
		// end alone at a stride of 2 over an even size): cuDNN's grouped
		// convolution, and the GPU's own kernels with cuDNN off.
		// Padding 1 on every side, counted out of each border window's
		// average (PyTorch's count_include_pad=False): the gradient's
		// pool2d_spread.
		{"AvgPool3x3s2", 64, func(x, _ *tensor.Tensor, format ops.DataFormat) []*tensor.Tensor {
			tp := tape.New()
			tp.Watch(x)
			y := ops.AvgPool2D(x, ops.PoolOpts{Size: [2]int{3, 3}, Strides: [2]int{2, 2}, Padding: ops.Explicit,
				Explicit: [2][2]int{{1, 1}, {1, 1}}, Format: format})
			return tp.Gradient(ops.Sum(y), x)
		}},
		{"Depthwise3x3s2", 96, func(x, f *tensor.Tensor, format ops.DataFormat) []*tensor.Tensor {
			return depthwiseGrads(x, f, format)
		}},
		{"Depthwise3x3s2OwnKernels", 96, func(x, f *tensor.Tensor, format ops.DataFormat) []*tensor.Tensor {
			d.SetCuDNN(false)
			defer d.SetCuDNN(true)
			return depthwiseGrads(x, f, format)
		}},
		{"BatchNorm", 64, func(x, f *tensor.Tensor, format ops.DataFormat) []*tensor.Tensor {
			axis := 1
			if format == ops.NHWC {
				axis = 3
			}
			// The scale and offset: two [channels] rows of the filter.
			gamma, beta := ops.Reshape(ops.Index(f, 0, 0), -1), ops.Reshape(ops.Index(f, 1, 1), -1)
			tp := tape.New()
			tp.Watch(x, gamma, beta)
			y, _, _ := ops.BatchNorm(x, gamma, beta, axis, 1e-3)
			return tp.Gradient(ops.Sum(y), x, gamma, beta)
		}},
	} {
		for _, format := range []ops.DataFormat{ops.NCHW, ops.NHWC} {
			b.Run(op.name+"/"+format.String(), func(b *testing.B) {
				restore := device.SetDefault(d)
				defer restore()
				r := tensor.NewRNG(3)
				shape := []int{n, op.channels, size, size}
				if format == ops.NHWC {
					shape = []int{n, size, size, op.channels}
				}
				x := onGPU(b, d, tensor.RandNormal(r, tensor.Float32, shape...))
				f := onGPU(b, d, tensor.RandNormal(r, tensor.Float32, 3, 3, op.channels, 1))
				timeSteps(b, d, func() {
					for _, g := range op.run(x, f, format) {
						g.Release()
					}
				})
			})
		}
	}
}

// gpuOpSizes are BenchmarkOpStepGPU's sizes: the CPU's sweep scaled to a
// GPU's memory and bandwidth ([16384 2048] float32 rows, 128 MB; GPT-2's
// embedding table, [50304 768], looked up by [64 1024] ids; a Conv1D over
// [64 1024 256]; 128 products [256 128]·[128 256]; the factorizations of
// 1024 matrices of order 32), and on the emulator
// (EAGERFLOW_BENCH_EMULATOR=1) small enough to run.
func gpuOpSizes(d *Device) benchmodels.OpSizes {
	if strings.Contains(d.Driver(), "emulator") {
		return benchmodels.OpSizes{Rows: 64, Cols: 100, Vocab: 300, Width: 16, IDs: 32, IDRows: 4, Batch: 2, Length: 16, Channels: 8, Mat: 16, Mats: 4, Order: 8}
	}
	return benchmodels.OpSizes{Rows: 16384, Cols: 2048, Vocab: 50304, Width: 768, IDs: 1024, IDRows: 64, Batch: 64, Length: 1024, Channels: 256, Mat: 256,
		Mats: 1024, Order: 32}
}

// BenchmarkOpStepGPU is the CPU's op-step sweep (internal/benchmodels'
// OpSteps: one op's forward, its sum's gradients) on the GPU at
// gpuOpSizes, beside BenchmarkTorchOpStepGPU (bench/peers/torch_gpu.py),
// to find the ops a GPU step loses on, as the CPU's sweep found its.
func BenchmarkOpStepGPU(b *testing.B) {
	d := benchGPU(b)
	restore := device.SetDefault(d)
	defer restore()
	for _, s := range benchmodels.OpSteps(gpuOpSizes(d)) {
		b.Run(s.Name, func(b *testing.B) { timeSteps(b, d, s.Run) })
	}
}
