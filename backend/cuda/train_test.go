package cuda

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// onDevice runs fn with dev as the default device, so that constructors
// and layers put their tensors there.
func onDevice(dev device.Device, fn func()) {
	restore := device.SetDefault(dev)
	defer restore()
	fn()
}

// classifierLosses trains model with Adam for steps full-batch steps on
// x, y and returns each step's loss, checking that it stays on the
// default device. traced runs the forward and backward pass as one traced
// graph (trace.Function), Adam applying its gradients after each call.
func classifierLosses(t *testing.T, model nn.Module, x, y *tensor.Tensor, steps int, traced bool) []float64 {
	opt := nn.NewAdam(nn.Constant(0.05))
	vars := nn.AllVariables(model)
	grads := func(in []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(in[0]), in[1])
		return append([]*tensor.Tensor{loss}, tp.Gradient(loss, nn.Values(vars)...)...)
	}
	f := trace.NewFunction(grads)
	var losses []float64
	for range steps {
		var out []*tensor.Tensor
		if traced {
			var err error
			if out, err = f.Call(x, y); err != nil {
				t.Fatal(err)
			}
		} else {
			out = grads([]*tensor.Tensor{x, y})
		}
		loss := out[0]
		if err := opt.Apply(vars, out[1:]); err != nil {
			t.Fatal(err)
		}
		if d := loss.Device(); d != device.Default() {
			t.Fatalf("the loss is on %s, not %s", d.Name(), device.Default().Name())
		}
		losses = append(losses, loss.Float())
	}
	return losses
}

// follows fails unless the GPU's losses follow the CPU's step for step
// (relative tolerance tol) and the last is below 0.7 of the first.
func follows(t *testing.T, what string, gpu, cpu []float64, tol float64) {
	t.Helper()
	for i := range cpu {
		if math.Abs(cpu[i]-gpu[i]) > tol*math.Max(1, math.Abs(cpu[i])) {
			t.Fatalf("%s, step %d: loss %v on the GPU, %v on the CPU", what, i, gpu[i], cpu[i])
		}
	}
	if n := len(gpu); !(gpu[n-1] < 0.7*gpu[0]) {
		t.Fatalf("%s: the loss went from %v to %v", what, gpu[0], gpu[n-1])
	}
}

// mlpLosses trains a small classifier with Adam for steps full-batch steps
// on the default device and returns each step's loss.
func mlpLosses(t *testing.T, steps int, traced bool) []float64 {
	model, x, y := smallMLP()
	return classifierLosses(t, model, x, y, steps, traced)
}

// smallMLP is a classifier of 3 features in 2 classes (Dense layers, ReLU
// and Tanh) and a batch of 64 labelled by the sign of their sum, on the
// default device.
func smallMLP() (model nn.Module, x, y *tensor.Tensor) {
	r := tensor.NewRNG(5)
	x = tensor.RandNormal(r, tensor.Float32, 64, 3)
	y = ops.Cast(ops.Gt(ops.Sum(x, -1), tensor.Scalar[float32](0)), tensor.Int32)
	model = nn.NewSequential(
		nn.NewDense("dense1", r, 3, 16, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("dense2", r, 16, 16, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("logits", r, 16, 2, nn.DenseOpts{}))
	return model, x, y
}

// cnnLosses trains a small CNN (conv 3x3, ReLU, max pool, conv 3x3 with
// stride 2 and SAME padding, average pool, dense) on images labelled by
// the sign of their sum, in layout f.
func cnnLosses(t *testing.T, f ops.DataFormat, steps int, traced bool) []float64 {
	model, x, y := smallCNN(f)
	return classifierLosses(t, model, x, y, steps, traced)
}

// smallCNN is cnnLosses' model and batch, on the default device.
func smallCNN(f ops.DataFormat) (model nn.Module, x, y *tensor.Tensor) {
	r := tensor.NewRNG(8)
	shape := []int{16, 10, 10, 2}
	if f == ops.NCHW {
		shape = []int{16, 2, 10, 10}
	}
	x = tensor.RandNormal(r, tensor.Float32, shape...)
	y = ops.Cast(ops.Gt(ops.Sum(x, 1, 2, 3), tensor.Scalar[float32](0)), tensor.Int32)
	conv := func(name string, in, out int, o ops.Conv2DOpts) *nn.Conv2D {
		o.Format = f
		return nn.NewConv2D(name, r, 3, 3, in, out, nn.Conv2DOpts{Conv2DOpts: o, Activation: ops.Relu})
	}
	model = nn.NewSequential(
		conv("conv1", 2, 6, ops.Conv2DOpts{}),
		nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Format: f}},
		conv("conv2", 6, 8, ops.Conv2DOpts{Strides: [2]int{2, 2}, Padding: ops.Same}),
		nn.AvgPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}, Format: f}},
		nn.Flatten{},
		nn.NewDense("logits", r, 8, 2, nn.DenseOpts{}))
	return model, x, y
}

// An nn training loop (Dense layers, ReLU and Tanh, the sparse
// cross-entropy, the tape's gradients, Adam) runs on the GPU and follows
// the CPU's run step for step.
func TestMLPTrainsOnGPU(t *testing.T) {
	d := testGPU(t)
	const steps = 15
	var cpu, gpu []float64
	onDevice(device.Host(), func() { cpu = mlpLosses(t, steps, false) })
	for _, traced := range []bool{false, true} {
		onDevice(d, func() { gpu = mlpLosses(t, steps, traced) })
		follows(t, fmt.Sprintf("MLP (traced %v)", traced), gpu, cpu, 1e-4)
	}
}

// A CNN (convolutions with their gradients in both layouts, max and
// average pooling, bias, ReLU) trains on the GPU and follows the CPU,
// eagerly and traced (max pooling keeping its choices in the graph).
func TestCNNTrainsOnGPU(t *testing.T) {
	d := testGPU(t)
	const steps = 12
	for _, f := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		var cpu, gpu []float64
		onDevice(device.Host(), func() { cpu = cnnLosses(t, f, steps, false) })
		for _, traced := range []bool{false, true} {
			onDevice(d, func() { gpu = cnnLosses(t, f, steps, traced) })
			follows(t, fmt.Sprintf("%v (traced %v)", f, traced), gpu, cpu, 1e-3)
		}
	}
}

// A model of the other convolution layers (a causal Conv1D, a strided
// Conv2DTranspose with an output padding, a DepthwiseConv2D), in both
// layouts, trains on the GPU and follows the CPU, eagerly and traced.
func TestConvLayerVariantsTrainOnGPU(t *testing.T) {
	d := testGPU(t)
	const steps = 10
	build := func(f ops.DataFormat) func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		return func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			r := tensor.NewRNG(12)
			x := tensor.RandNormal(r, tensor.Float32, 8, 6, 3) // [N L C]
			y := ops.Cast(ops.Gt(ops.Sum(x, 1, 2), tensor.Scalar[float32](0)), tensor.Int32)
			rows := func(x *tensor.Tensor) *tensor.Tensor { return ops.Reshape(x, x.Dim(0), 1, x.Dim(1), x.Dim(2)) } // [N 1 L C]
			if f == ops.NCHW {
				x = ops.Transpose(x, 0, 2, 1) // [N C L]
				rows = func(x *tensor.Tensor) *tensor.Tensor { return ops.Reshape(x, x.Dim(0), x.Dim(1), 1, x.Dim(2)) }
			}
			conv := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{1, 2}, Format: f}, Activation: ops.Relu}
			model := nn.NewSequential(
				nn.NewConv1D("seq", r, 3, 3, 4, nn.Conv1DOpts{Causal: true, Dilation: 2, Format: f, Activation: ops.Tanh}),
				nn.Activation(rows),
				nn.NewConv2DTranspose("up", r, 1, 3, 4, 5, nn.Conv2DTransposeOpts{Conv2DOpts: conv, OutputPadding: [2]int{0, 1}}),
				nn.NewDepthwiseConv2D("dw", r, 1, 3, 5, 2, nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: f}}),
				nn.Flatten{},
				nn.NewDense("logits", r, 10*14, 2, nn.DenseOpts{}))
			return model, x, y
		}
	}
	for _, f := range []ops.DataFormat{ops.NHWC, ops.NCHW} {
		var cpu, gpu []float64
		onDevice(device.Host(), func() {
			m, x, y := build(f)()
			cpu = classifierLosses(t, m, x, y, steps, false)
		})
		for _, traced := range []bool{false, true} {
			onDevice(d, func() {
				m, x, y := build(f)()
				gpu = classifierLosses(t, m, onGPU(t, d, x), onGPU(t, d, y), steps, traced)
			})
			follows(t, fmt.Sprintf("%v (traced %v)", f, traced), gpu, cpu, 1e-3)
		}
	}
}

// A Bidirectional LSTM and GRU classifier (two Scans, the reversals)
// trains on the GPU and follows the CPU, eagerly and traced.
func TestBidirectionalTrainsOnGPU(t *testing.T) {
	d := testGPU(t)
	build := func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		r := tensor.NewRNG(13)
		x := tensor.RandNormal(r, tensor.Float32, 8, 5, 3)
		y := ops.Cast(ops.Gt(ops.Sum(ops.Index(x, ":", 0), -1), tensor.Scalar[float32](0)), tensor.Int32)
		model := nn.NewSequential(
			&nn.Bidirectional{FromStart: nn.NewLSTMCell("f", r, 3, 4, tensor.Float32), FromEnd: nn.NewGRUCell("b", r, 3, 4, tensor.Float32)},
			nn.NewDense("out", r, 8, 2, nn.DenseOpts{}))
		return model, x, y
	}
	const steps = 10
	var cpu, gpu []float64
	onDevice(device.Host(), func() {
		m, x, y := build()
		cpu = classifierLosses(t, m, x, y, steps, false)
	})
	for _, traced := range []bool{false, true} {
		onDevice(d, func() {
			m, x, y := build()
			gpu = classifierLosses(t, m, onGPU(t, d, x), onGPU(t, d, y), steps, traced)
		})
		follows(t, fmt.Sprintf("bidirectional (traced %v)", traced), gpu, cpu, 1e-3)
	}
}

// A While loop's gradient (x³ by repeated multiplication) and a traced
// function run on the GPU as on the CPU.
func TestControlFlowAndTracingOnGPU(t *testing.T) {
	d := testGPU(t)
	cube := func(x *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
		tp := tape.New()
		tp.Watch(x)
		out := control.While(
			func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], ops.ScalarLike(v[0], 3)) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Add(v[0], ops.ScalarLike(v[0], 1)), ops.Mul(v[1], x)}
			},
			[]*tensor.Tensor{tensor.FullOn(x.Device(), tensor.Float64, 0), ops.OnesLike(x)})
		return out[1], tp.Gradient(ops.Sum(out[1]), x)[0]
	}
	x := tensor.FromSlice([]float64{-1.5, 0.5, 2}, 3)
	wantY, wantG := cube(x)
	gotY, gotG := cube(onGPU(t, d, x))
	agree(t, "While x³", gotY, wantY)
	agree(t, "While x³ gradient", gotG, wantG)

	f := trace.NewFunction(func(in []*tensor.Tensor) []*tensor.Tensor {
		h := ops.Tanh(ops.MatMul(in[0], in[1]))
		return []*tensor.Tensor{ops.Softmax(ops.Add(h, ops.Exp(h)), -1)}
	})
	r := tensor.NewRNG(9)
	a, b := tensor.RandNormal(r, tensor.Float32, 4, 5), tensor.RandNormal(r, tensor.Float32, 5, 6)
	want, err := f.Call(a, b)
	if err != nil {
		t.Fatal(err)
	}
	for call := range 2 { // the trace, then the graph
		got, err := f.Call(onGPU(t, d, a), onGPU(t, d, b))
		if err != nil {
			t.Fatalf("call %d on the GPU: %v", call, err)
		}
		agree(t, "traced function", got[0], want[0])
	}
}

// Scan (an RNN with a per-step output), Cond on a predicate computed on
// the GPU, and their gradients on a tape give on the GPU what they give on
// the CPU, eagerly and traced (the traced step twice: the trace, then the
// graph).
func TestScanAndCondOnGPU(t *testing.T) {
	d := testGPU(t)
	step := func(in []*tensor.Tensor) []*tensor.Tensor {
		h0, w, xs := in[0], in[1], in[2]
		tp := tape.New()
		tp.Watch(h0)
		tp.Watch(w)
		carry, ys := control.Scan(func(c, xt []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
			h := ops.Tanh(ops.Add(ops.MatMul(c[0], w), xt[0]))
			return []*tensor.Tensor{h}, []*tensor.Tensor{ops.Square(h)}
		}, []*tensor.Tensor{h0}, []*tensor.Tensor{xs})
		branch := control.Cond(ops.Gt(ops.Sum(carry[0]), ops.ScalarLike(h0, 0)),
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Exp(carry[0])} },
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Sin(carry[0])} })
		loss := ops.Add(ops.Sum(branch[0]), ops.Mean(ys[0]))
		g := tp.Gradient(loss, h0, w)
		return []*tensor.Tensor{loss, g[0], g[1]}
	}
	r := tensor.NewRNG(21)
	for _, sign := range []float64{1, -1} { // each branch taken
		h0 := ops.Mul(tensor.RandNormal(r, tensor.Float64, 1, 5), tensor.Scalar(0.2))
		w := ops.Mul(tensor.RandNormal(r, tensor.Float64, 5, 5), tensor.Scalar(0.4))
		xs := ops.Add(tensor.RandNormal(r, tensor.Float64, 6, 1, 5), tensor.Scalar(sign))
		want := step([]*tensor.Tensor{h0, w, xs})
		gin := []*tensor.Tensor{onGPU(t, d, h0), onGPU(t, d, w), onGPU(t, d, xs)}
		check := func(what string, got []*tensor.Tensor) {
			for i := range want {
				agree(t, what, got[i], want[i])
			}
		}
		check("eager", step(gin))
		f := trace.NewFunction(step)
		for range 2 {
			got, err := f.Call(gin...)
			if err != nil {
				t.Fatal(err)
			}
			check("traced", got)
		}
	}
}

// A traced loop whose body runs on the host and on the GPU by turns (a
// Cond on the GPU inside), with its gradient: the same values as the
// eager loop, call after call; the copies between the devices are op
// nodes of the graph (ops.ToDevice).
func TestTracedLoopAlternatingHostAndGPU(t *testing.T) {
	gpu := testGPU(t)
	step := func(h, w *tensor.Tensor) *tensor.Tensor {
		a := ops.Tanh(ops.MatMul(h, w)) // on the host
		b := ops.ToDevice(a, gpu)
		pos := ops.Gt(ops.Sum(b), tensor.FullOn(gpu, tensor.Float32, 0))
		c := control.Cond(pos,
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(b, tensor.FullOn(gpu, tensor.Float32, 0.5))} },
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Neg(b)} })[0]
		return ops.ToDevice(c, h.Device())
	}
	run := func(a []*tensor.Tensor) []*tensor.Tensor {
		x, w := a[0], a[1]
		tp := tape.New()
		tp.Watch(w)
		h := control.Fori(0, 3, func(_ *tensor.Tensor, v []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{step(v[0], w)} }, []*tensor.Tensor{x})[0]
		loss := ops.Sum(ops.Square(h))
		return []*tensor.Tensor{loss, tp.Gradient(loss, w)[0]}
	}
	f := trace.NewFunction(run)
	rng := tensor.NewRNG(8)
	for call := range 2 {
		x := tensor.RandNormal(rng, tensor.Float32, 2, 3)
		w := tensor.RandNormal(rng, tensor.Float32, 3, 3)
		got, err := f.Call(x, w)
		if err != nil {
			t.Fatal(err)
		}
		want := run([]*tensor.Tensor{x, w})
		for i := range want {
			g, e := tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](want[i])
			for k := range e {
				if math.Abs(float64(g[k]-e[k])) > 1e-5*(1+math.Abs(float64(e[k]))) {
					t.Fatalf("call %d, result %d: traced %v, eager %v", call, i, g, e)
				}
			}
		}
	}
}

// plainOptimizer hides its optimizer's kind from nn.TrainStep, which then
// asks its tape for float32 gradients, as for a user's optimizer.
type plainOptimizer struct{ nn.Optimizer }

// A mixed-precision step on the GPU (Adam's one launch widening the
// bfloat16 or float16 gradients and writing the weights' half copies,
// which the next forward pass reads without a cast) moves the variables
// to the bit as the same step given float32 gradients does, the
// weights cast by a kernel each step: eager, traced, and recorded (whose
// recording widens the gradients and casts the weights by kernels);
// behind a loss scale, a global-norm clip (its factor, computed on the
// device from the half gradients, multiplied in Adam's launch), or both.
func TestMixedStepWithHalfGradientsOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, mode := range []string{"eager", "traced", "recorded"} {
		for _, c := range []struct {
			p               nn.Policy
			scaled, clipped bool
		}{{nn.MixedBFloat16, false, false}, {nn.MixedFloat16, false, false}, {nn.MixedFloat16, true, false}, {nn.MixedBFloat16, false, true}, {nn.MixedFloat16, true, true}} {
			p := c.p
			var vals [2][][]byte
			for k := range vals {
				onDevice(d, func() {
					model, x, y := smallMLP()
					model.(*nn.Sequential).Policy = p
					var opt nn.Optimizer = nn.NewAdam(nn.Constant(0.01))
					if k == 1 {
						opt = plainOptimizer{opt}
					}
					if c.clipped { // a bound below the gradients' norm
						opt = nn.NewClippedOptimizer(opt, 1e-3)
					}
					if c.scaled {
						ls := nn.NewLossScaleOptimizer(opt)
						ls.GrowthInterval = 2 // the scale changes between steps
						opt = ls
					}
					step := stepOf(mode)(model, nn.SparseSoftmaxCrossEntropy, opt)
					batch := data.Element{onGPU(t, d, x), onGPU(t, d, y)}
					for range 4 {
						if _, _, err := step(batch); err != nil {
							t.Fatal(err)
						}
					}
					for _, v := range model.Variables() {
						vals[k] = append(vals[k], onHost(t, v.Value()).HostBytes())
					}
				})
			}
			for i := range vals[0] {
				if !bytes.Equal(vals[0][i], vals[1][i]) {
					t.Errorf("%s %v (loss scaled %v, clipped %v): variable %d differs from the steps with float32 gradients", mode, p, c.scaled, c.clipped, i)
				}
			}
		}
	}
}
