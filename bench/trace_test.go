package bench

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// elementwiseChain is issue 5's chain: x*1.01, +0.5, tanh three times over,
// then *1.01, on float32.
func elementwiseChain(args []*tensor.Tensor) []*tensor.Tensor {
	x, scale, bias := args[0], tensor.Scalar(float32(1.01)), tensor.Scalar(float32(0.5))
	for range 3 {
		x = ops.Tanh(ops.Add(ops.Mul(x, scale), bias))
	}
	return []*tensor.Tensor{ops.Mul(x, scale)}
}

// BenchmarkTraceElementwiseChain1K runs the chain on 1000 elements eagerly
// and from its traced graph.
func BenchmarkTraceElementwiseChain1K(b *testing.B) {
	x := tensor.RandUniform(tensor.NewRNG(5), tensor.Float32, 0, 1, 1000)
	// Both release the result they are done with, as the other benchmarks
	// do, so its buffer comes back from the device cache.
	b.Run("eager", func(b *testing.B) {
		for b.Loop() {
			elementwiseChain([]*tensor.Tensor{x})[0].Release()
		}
	})
	b.Run("traced", func(b *testing.B) {
		f := trace.NewFunction(elementwiseChain)
		for b.Loop() {
			out, err := f.Call(x)
			if err != nil {
				b.Fatal(err)
			}
			out[0].Release()
		}
	})
}

// tracedMLPGrad traces the MLP's forward and backward: it returns the loss
// and the four gradients; the SGD update (an assignment, not an op) runs
// outside the graph.
func (m *mlp) tracedGrad() *trace.Function {
	return trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		x, labels := a[0], a[1]
		tp := tape.New()
		h := ops.Relu(ops.Add(ops.MatMul(x, m.w1.Value()), m.b1.Value()))
		logits := ops.Add(ops.MatMul(h, m.w2.Value()), m.b2.Value())
		loss := ops.Mean(ops.SparseSoftmaxCrossEntropy(logits, labels))
		grads := tp.Gradient(loss, m.w1.Value(), m.b1.Value(), m.w2.Value(), m.b2.Value())
		return append([]*tensor.Tensor{loss}, grads...)
	})
}

func (m *mlp) tracedStep(f *trace.Function, x, labels *tensor.Tensor, lr float64) (*tensor.Tensor, error) {
	out, err := f.Call(x, labels)
	if err != nil {
		return nil, err
	}
	for i, v := range []*tape.Variable{m.w1, m.b1, m.w2, m.b2} {
		v.AssignScaled(-lr, out[i+1])
		out[i+1].Release() // as the eager step does
	}
	return out[0], nil
}

// BenchmarkTracedMLPStep is BenchmarkMLPStep with forward and backward
// run from a traced graph.
func BenchmarkTracedMLPStep(b *testing.B) {
	m := newMLP()
	x, labels := mlpBatch()
	f := m.tracedGrad()
	steady(b, func() error { _, err := m.tracedStep(f, x, labels, 0.01); return err })
}

// TestTracedMLPStepMatchesEager keeps the benchmark honest: the traced step
// gives the eager step's losses, step after step.
func TestTracedMLPStepMatchesEager(t *testing.T) {
	eager, traced := newMLP(), newMLP()
	x, labels := mlpBatch()
	f := traced.tracedGrad()
	for i := range 5 {
		want := eager.step(x, labels, 0.1).Float()
		got, err := traced.tracedStep(f, x, labels, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Float() != want {
			t.Errorf("step %d: traced loss %v, eager %v", i, got.Float(), want)
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}

// BenchmarkTracedRNNLoopGrad is BenchmarkRNNLoopGrad traced: the loop and
// its gradient are two frames, the backward one popping the stacks the
// forward one pushes.
func BenchmarkTracedRNNLoopGrad(b *testing.B) {
	r := newRNN()
	f := r.tracedGrad()
	steady(b, func() error { _, err := f.Call(r.h0); return err })
}

func (r *rnnSetup) tracedGrad() *trace.Function {
	return trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		h := r.forwardFrom(a[0], control.WhileOptions{})
		return tp.Gradient(ops.Sum(h), r.w.Value())
	})
}

// The traced loop's gradient of the RNN's weight is the eager loop's to
// float32's rounding: the eager backward takes the weight's products over
// the steps as one product (control's Loop.Backward), the traced frame
// step by step.
func TestTracedRNNLoopGradMatchesEager(t *testing.T) {
	r := newRNN()
	f := r.tracedGrad()
	tp := tape.New()
	want := tensor.ToSlice[float32](tp.Gradient(ops.Sum(r.forward(control.WhileOptions{})), r.w.Value())[0])
	largest := float32(0)
	for _, v := range want {
		largest = max(largest, v, -v)
	}
	for range 2 {
		got, err := f.Call(r.h0)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range tensor.ToSlice[float32](got[0]) {
			if d := v - want[i]; d > 1e-5*largest || -d > 1e-5*largest {
				t.Fatalf("traced RNN gradient element %d: %g, eager %g", i, v, want[i])
			}
		}
	}
}

// BenchmarkTracedRNNLoopForward is BenchmarkRNNLoopForward traced with no
// tape: the While becomes one loop frame run by the frame executor.
func BenchmarkTracedRNNLoopForward(b *testing.B) {
	r := newRNN()
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{r.forwardFrom(a[0], control.WhileOptions{})}
	})
	steady(b, func() error { _, err := f.Call(r.h0); return err })
}

func TestTracedRNNLoopForwardIsAFrame(t *testing.T) {
	r := newRNN()
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{r.forwardFrom(a[0], control.WhileOptions{})}
	})
	want := r.forward(control.WhileOptions{})
	for range 2 {
		got, err := f.Call(r.h0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tensor.ToSlice[float32](got[0]), tensor.ToSlice[float32](want)) {
			t.Fatal("traced RNN forward differs from eager")
		}
	}
	if g := f.Graph(r.h0); len(g.Nodes) > 40 {
		t.Errorf("%d nodes: the loop was unrolled", len(g.Nodes))
	}
}

// BenchmarkPartitionedLoop is a traced loop of 100 iterations whose body
// computes on a [256] float32 on each of the two CPU devices (a copy
// there and back each iteration): run by one executor ("one executor"),
// and cut into a partition per device run at once (graph.Partition,
// "partitioned": a send and a receive per crossing, the second
// partition's control loop driven by the predicate each iteration);
// "one device" is the same loop with both halves on cpu:0. Reports
// ns/iteration.
func BenchmarkPartitionedLoop(b *testing.B) {
	const iters = 100
	x := tensor.RandUniform(tensor.NewRNG(5), tensor.Float32, 0, 1, 256)
	n := tensor.Scalar(int32(iters))
	loop := func(far device.Device) func(a []*tensor.Tensor) []*tensor.Tensor {
		return func(a []*tensor.Tensor) []*tensor.Tensor {
			l := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], a[1]) }, func(v []*tensor.Tensor) []*tensor.Tensor {
				there, err := ops.Tanh(v[1]).To(far)
				if err != nil {
					panic(err)
				}
				back, err := ops.Mul(there, there).To(device.Host())
				if err != nil {
					panic(err)
				}
				return []*tensor.Tensor{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Add(back, v[1])}
			}, []*tensor.Tensor{tensor.Scalar(int32(0)), a[0]})
			return []*tensor.Tensor{l[1]}
		}
	}
	report := func(b *testing.B, run func() ([]*tensor.Tensor, error)) {
		for b.Loop() {
			out, err := run()
			if err != nil {
				b.Fatal(err)
			}
			out[0].Release()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iters), "ns/iteration")
	}
	for _, c := range []struct {
		name string
		far  device.Device
	}{{"one device", device.Host()}, {"one executor", device.SecondCPU()}} {
		b.Run(c.name, func(b *testing.B) {
			f := trace.NewFunction(loop(c.far))
			report(b, func() ([]*tensor.Tensor, error) { return f.Call(x, n) })
		})
	}
	b.Run("partitioned", func(b *testing.B) {
		f := trace.NewFunction(loop(device.SecondCPU()))
		if _, err := f.Call(x, n); err != nil {
			b.Fatal(err)
		}
		p, err := graph.Partition(f.Graph(x, n))
		if err != nil {
			b.Fatal(err)
		}
		report(b, func() ([]*tensor.Tensor, error) { return p.Execute(x, n) })
	})
}
