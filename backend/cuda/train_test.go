package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
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

// mlpLosses trains a small classifier with Adam for steps full-batch steps
// on the default device and returns each step's loss.
func mlpLosses(t *testing.T, steps int) []float64 {
	r := tensor.NewRNG(5)
	x := tensor.RandNormal(r, tensor.Float32, 64, 3)
	y := ops.Cast(ops.Gt(ops.Sum(x, -1), tensor.Scalar[float32](0)), tensor.Int32)
	model := nn.NewSequential(
		nn.NewDense("dense1", r, 3, 16, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("dense2", r, 16, 16, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("logits", r, 16, 2, nn.DenseOpts{}))
	opt := nn.NewAdam(nn.Constant(0.05))
	var losses []float64
	for range steps {
		tp := tape.New()
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(x), y)
		vars := model.Variables()
		if err := opt.Apply(vars, tp.Gradient(loss, nn.Values(vars)...)); err != nil {
			t.Fatal(err)
		}
		if d := loss.Device(); d != device.Default() {
			t.Fatalf("the loss is on %s, not %s", d.Name(), device.Default().Name())
		}
		losses = append(losses, loss.Float())
	}
	return losses
}

// An nn training loop (Dense layers, ReLU and Tanh, the sparse
// cross-entropy, the tape's gradients, Adam) runs on the GPU and follows
// the CPU's run step for step.
func TestMLPTrainsOnGPU(t *testing.T) {
	d := testGPU(t)
	const steps = 15
	var cpu, gpu []float64
	onDevice(device.Host(), func() { cpu = mlpLosses(t, steps) })
	onDevice(d, func() { gpu = mlpLosses(t, steps) })
	for i := range cpu {
		if math.Abs(cpu[i]-gpu[i]) > 1e-4*math.Max(1, math.Abs(cpu[i])) {
			t.Fatalf("step %d: loss %v on the GPU, %v on the CPU", i, gpu[i], cpu[i])
		}
	}
	if !(gpu[steps-1] < 0.7*gpu[0]) {
		t.Fatalf("the loss went from %v to %v", gpu[0], gpu[steps-1])
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
