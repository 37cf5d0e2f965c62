package cuda

import (
	"bytes"
	bin "encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// graphLaunches returns a counter of the graphs the emulator launched
// (always 0 on a real GPU, where the tests check values alone).
func graphLaunches(d *Device) func() int {
	ctx, ok := d.ctx.(*emu.Context)
	return func() int {
		if !ok {
			return 0
		}
		return ctx.GraphLaunches
	}
}

// awaitNoObservers waits for the garbage collector to count off the
// tapes earlier tests dropped while recording (tape.New's cleanup): while
// one counts as observing, a recorded function runs op by op (so that the
// tape sees the ops) and replays nothing.
func awaitNoObservers(t *testing.T) {
	t.Helper()
	for range 20 {
		if !eager.Observing() {
			return
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d observers still active: a tape of this test is recording", eager.Activations())
}

// A traced function with Record set replays its graph as one recording
// from its first run from the graph on: each call computes what the
// unrecorded function computes, from its own arguments (a transposed
// view among them) and the variable's value at the call, and its results
// stay its own when later calls replay.
func TestTracedFunctionRecords(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	launches := graphLaunches(d)
	_, emulated := d.ctx.(*emu.Context)
	v := tape.NewVariable("v", onGPU(t, d, tensor.FromSlice([]float32{1, -1, 2}, 3)))
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		h := ops.Relu(ops.Add(ops.MatMul(a[0], a[1]), v.Value()))
		return []*tensor.Tensor{ops.Sum(ops.Mul(h, h), 0), ops.Reshape(h, 6)}
	}
	recorded, plain := trace.NewFunction(fn), trace.NewFunction(fn)
	recorded.Record = true
	r := tensor.NewRNG(3)
	var kept []*tensor.Tensor
	var keptWant [][]float32
	for call := range 4 {
		x := onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 2, 4))
		w := ops.Transpose(onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 3, 4)), 1, 0)
		if call == 2 {
			v.Assign(onGPU(t, d, tensor.FromSlice([]float32{0, 3, -2}, 3)))
		}
		before := launches()
		got, owned, err := recorded.CallOwned(x, w)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Call(x, w)
		if err != nil {
			t.Fatal(err)
		}
		wantLaunches := 0
		if call > 0 && emulated {
			wantLaunches = 1
		}
		if n := launches() - before; n != wantLaunches {
			t.Errorf("call %d: %d graph launches, want %d", call, n, wantLaunches)
		}
		for i := range want {
			g, w := tensor.ToSlice[float32](onHost(t, got[i])), tensor.ToSlice[float32](onHost(t, want[i]))
			if !slices.Equal(g, w) {
				t.Errorf("call %d, result %d: %v, want %v", call, i, g, w)
			}
			if call > 0 && !owned[i] {
				t.Errorf("call %d, result %d is not owned", call, i)
			}
		}
		kept = append(kept, got[1])
		keptWant = append(keptWant, tensor.ToSlice[float32](onHost(t, want[1])))
	}
	for i, k := range kept {
		if got := tensor.ToSlice[float32](onHost(t, k)); !slices.Equal(got, keptWant[i]) {
			t.Errorf("call %d's result changed to %v by later calls (was %v)", i, got, keptWant[i])
		}
	}
	if recorded.Traces() != 1 {
		t.Errorf("%d traces", recorded.Traces())
	}
}

// A loop frame is recorded with its loop on the device (conditional
// nodes); where a tape observes the call, a function with Record set runs
// its graph op by op, with the same results.
func TestTracedFunctionRecordFallbacks(t *testing.T) {
	d := testGPU(t)
	launches := graphLaunches(d)
	_, emulated := d.ctx.(*emu.Context)
	loop := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		out := control.While(func(vs []*tensor.Tensor) *tensor.Tensor {
			return ops.Lt(ops.Sum(vs[0]), ops.ScalarLike(vs[0], 100))
		}, func(vs []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Mul(vs[0], ops.ScalarLike(vs[0], 2))}
		}, []*tensor.Tensor{a[0]})
		return out
	})
	loop.Record = true
	for call, want := range [][]float32{{64, 128}, {64, 128}} {
		before := launches()
		in := onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2))
		if call == 1 {
			in = onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2))
			in = ops.Mul(in, ops.ScalarLike(in, 2))
		}
		out, err := loop.Call(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := tensor.ToSlice[float32](onHost(t, out[0])); !slices.Equal(got, want) {
			t.Errorf("loop call %d: %v, want %v", call, got, want)
		}
		if n, want := launches()-before, call; emulated && n != want {
			t.Errorf("loop call %d: %d graph launches, want %d (a loop the data decides runs on the device)", call, n, want)
		}
	}

	x := tape.NewVariable("x", onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3}, 3)))
	square := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Sum(ops.Mul(a[0], x.Value()))}
	})
	square.Record = true
	in := onGPU(t, d, tensor.FromSlice([]float32{4, 5, 6}, 3))
	for call := range 3 {
		tp := tape.New()
		out, err := square.Call(in)
		if err != nil {
			t.Fatal(err)
		}
		g := tp.Gradient(out[0], x.Value())[0]
		if got := tensor.ToSlice[float32](onHost(t, g)); !slices.Equal(got, []float32{4, 5, 6}) {
			t.Errorf("call %d under a tape: the gradient is %v", call, got)
		}
	}
}

// graph.Record refuses what it cannot record, with device.ErrCapture,
// and a recording's Run checks its arguments.
func TestRecordErrors(t *testing.T) {
	d := testGPU(t)
	host := &graph.Graph{}
	in := host.Input("x")
	host.Result = []graph.Output{in}
	if _, err := graph.Record(host, tensor.FromSlice([]float32{1}, 1)); !errors.Is(err, device.ErrCapture) {
		t.Errorf("a host graph: %v, want ErrCapture", err)
	}
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Neg(a[0])} })
	x := onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2))
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	g := f.Graph(x)
	if _, err := graph.Record(g, onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2)), x); err == nil {
		t.Error("Record with two arguments for one: no error")
	}
	if _, err := graph.Record(g, tensor.FromSlice([]float32{1, 2}, 2)); !errors.Is(err, device.ErrCapture) {
		t.Errorf("Record with a host argument: %v, want ErrCapture", err)
	}
	passThrough := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{a[0], ops.Neg(a[0])} })
	if _, err := passThrough.Call(x); err != nil {
		t.Fatal(err)
	}
	if _, err := graph.Record(passThrough.Graph(x), x); !errors.Is(err, device.ErrCapture) {
		t.Errorf("Record of a graph returning its argument: %v, want ErrCapture", err)
	}
	rec, err := graph.Record(g, x)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		args []*tensor.Tensor
	}{
		{"no argument", nil},
		{"a nil argument", []*tensor.Tensor{nil}},
		{"another shape", []*tensor.Tensor{onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3}, 3))}},
		{"another dtype", []*tensor.Tensor{onGPU(t, d, tensor.FromSlice([]float64{1, 2}, 2))}},
		{"the host", []*tensor.Tensor{tensor.FromSlice([]float32{1, 2}, 2)}},
	} {
		if _, err := rec.Run(c.args...); err == nil {
			t.Errorf("Run with %s: no error", c.what)
		}
	}
	out, err := rec.Run(onGPU(t, d, tensor.FromSlice([]float32{3, -4}, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if got := tensor.ToSlice[float32](onHost(t, out[0])); !slices.Equal(got, []float32{-3, 4}) {
		t.Errorf("Run: %v", got)
	}
	rec.Release()
	rec.Release()
	if _, err := rec.Run(x); err == nil {
		t.Error("Run after Release: no error")
	}
}

// RecordedTrainStep follows TracedTrainStep to the bit, step for step
// (losses, variables and the optimizer's slots), on an MLP and a CNN in
// both layouts with Adam on a schedule that changes the rate every step,
// and on the MLP with AdamW's two groups, SGD with Nesterov's momentum,
// RMSProp with momentum and plain SGD (whose update is not a device's and
// runs after the replay), and behind a ClippedOptimizer (the clipping
// recorded with the update), replaying one recording per step after its
// first two. Where the optimizer's step is a device's, the recording
// holds it: a step then queues its arguments' copies, the step's
// constants, the replay and the loss's copy, whatever the model's size.
func TestRecordedTrainStepFollowsTraced(t *testing.T) {
	d := testGPU(t)
	// A step that is not recorded says why on standard error.
	t.Setenv("EAGERFLOW_DEBUG", "record")
	launches := graphLaunches(d)
	ctx, emulated := d.ctx.(*emu.Context)
	cnn := func(l ops.DataFormat) func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		return func() (nn.Module, *tensor.Tensor, *tensor.Tensor) { return smallCNN(l) }
	}
	adam := func() nn.Optimizer { return nn.NewAdam(nn.Cosine(0.05, 10, 0.001)) }
	adamW := func() nn.Optimizer {
		o := nn.NewAdamW(nn.Constant(0.02), 0.1)
		o.Decays = nn.DecayMatrices
		return o
	}
	nesterov := func() nn.Optimizer { return &nn.SGD{LR: nn.Constant(0.02), Momentum: 0.9, Nesterov: true} }
	rms := func() nn.Optimizer {
		o := nn.NewRMSProp(nn.Constant(0.01))
		o.Momentum = 0.5
		return o
	}
	plain := func() nn.Optimizer { return &nn.SGD{LR: nn.Constant(0.05)} }
	// Clipped below the gradients' norm: the norm, the factor and the
	// update all in the recording, the refresh computing nothing.
	clipped := func(o func() nn.Optimizer) func() nn.Optimizer {
		return func() nn.Optimizer { return nn.NewClippedOptimizer(o(), 1e-3) }
	}
	recurrent := func(cell func(r *tensor.RNG) nn.Cell) func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		return func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			r := tensor.NewRNG(6)
			m := nn.NewSequential(&nn.RNN{Cell: cell(r)}, nn.NewDense("o", r, 16, 2, nn.DenseOpts{}))
			x := tensor.RandNormal(r, tensor.Float32, 4, 5, 8)
			return m, x, ops.Cast(ops.Gt(ops.Sum(x, 1, 2), tensor.Scalar[float32](0)), tensor.Int32)
		}
	}
	// A CNN with BatchNorm: its running statistics are results of the
	// step's graph, copied into their variables by the recording.
	normed := func(f ops.DataFormat) func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		return func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			m, x, y, _ := normedCNN(f)
			return m, x, y
		}
	}
	dropped := func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		m, x, y := smallMLP()
		layers := m.(*nn.Sequential).Modules()
		return nn.NewSequential(layers[0], nn.NewDropout(0.3, tensor.NewRNG(9)), layers[1], nn.NewDropout(0.2, tensor.NewRNG(10)), layers[2]), x, y
	}
	lstm := recurrent(func(r *tensor.RNG) nn.Cell { return nn.NewLSTMCell("l", r, 8, 16, tensor.Float32) })
	gru := recurrent(func(r *tensor.RNG) nn.Cell { return nn.NewGRUCell("g", r, 8, 16, tensor.Float32) })
	plainRNN := recurrent(func(r *tensor.RNG) nn.Cell { return newTanhCell(r, 8, 16) })
	for _, c := range []struct {
		name  string
		build func() (nn.Module, *tensor.Tensor, *tensor.Tensor)
		opt   func() nn.Optimizer
		// queued is what a step queues where the recording holds the
		// update: the two arguments' copies, the constants of each device
		// step, the replay, the loss's read (from the recording's own
		// buffer, graph.Tail.Lend), and the read of the recorded gathers'
		// index checks (reset by every replay).
		queued int
	}{
		{"MLP, Adam", smallMLP, adam, 6},
		{"NHWC CNN, Adam", cnn(ops.NHWC), adam, 6},
		{"NCHW CNN, Adam", cnn(ops.NCHW), adam, 6},
		{"MLP, AdamW", smallMLP, adamW, 7},
		{"MLP, Nesterov", smallMLP, nesterov, 6},
		{"MLP, RMSProp", smallMLP, rms, 6},
		{"MLP, SGD", smallMLP, plain, 0},
		{"MLP, Adam clipped", smallMLP, clipped(adam), 6},
		{"MLP, AdamW clipped", smallMLP, clipped(adamW), 7},
		{"NHWC CNN, RMSProp clipped", cnn(ops.NHWC), clipped(rms), 6},
		// Accumulated over two steps: not recorded (its update every
		// other call), the sums on the GPU.
		{"MLP, Adam accumulated", smallMLP, func() nn.Optimizer { return nn.NewAccumulatedOptimizer(adam(), 2) }, 0},
		// Dropout: the masks drawn by the recording from where the RNGs
		// stand, an argument (two calls more: its copy to the GPU, then
		// into the recording).
		{"MLP with Dropout, Adam", dropped, adam, 8},
		{"NHWC CNN with BatchNorm, Adam", normed(ops.NHWC), adam, 6},
		{"NCHW CNN with BatchNorm, Adam", normed(ops.NCHW), adam, 6},
		// Recurrent layers: an LSTM's or a GRU's steps are one op each
		// way on the GPU (ops.LSTMSequence, ops.GRUSequence), traced or
		// recorded: to the bit.
		{"LSTM, Adam", lstm, adam, 6},
		{"GRU, Adam", gru, adam, 6},
		// A cell of its own is a Scan, traced step by step where the step
		// records (its five steps fixed by the batch's shape): one graph
		// too, where TracedTrainStep's frame runs op by op. Its
		// recurrent kernel's gradient, five products summed where the
		// loop is unrolled, is one product there (the graph's
		// mergeProductSums), which rounds differently: the two runs
		// agree to float32's rounding, not to the bit.
		{"tanh RNN, Adam", plainRNN, adam, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			var losses, norms [2][]float64
			var state [2][][]byte
			for i, record := range []bool{false, true} {
				onDevice(d, func() {
					model, x, y := c.build()
					opt := c.opt()
					step := nn.TracedTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
					if record {
						step = nn.RecordedTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
					}
					batch := data.Element{onGPU(t, d, x), onGPU(t, d, y)}
					if record {
						awaitNoObservers(t)
					}
					before, queued := launches(), 0
					for k := range 4 {
						if k == 3 && emulated {
							queued = ctx.Queued
						}
						l, _, err := step(batch)
						if err != nil {
							t.Fatal(err)
						}
						losses[i] = append(losses[i], l)
						if co, ok := opt.(*nn.ClippedOptimizer); ok && k < 3 { // the norm the replay computed (a read: not in the last step's count)
							norms[i] = append(norms[i], co.Norm())
						}
					}
					if emulated {
						queued = ctx.Queued - queued
					}
					for _, v := range append(nn.AllVariables(model), opt.Slots()...) {
						state[i] = append(state[i], onHost(t, v.Value()).HostBytes())
					}
					if !emulated || !record {
						return
					}
					if n, want := launches()-before, 3; n != want {
						t.Errorf("%d graph launches in 4 steps, want %d (a tape observes: %v)", n, want, eager.Observing())
					}
					if c.queued > 0 && queued != c.queued {
						t.Errorf("a recorded step queued %d calls, want %d", queued, c.queued)
					}
				})
			}
			if !slices.Equal(norms[0], norms[1]) {
				t.Errorf("the clipped norms: traced %v, recorded %v", norms[0], norms[1])
			}
			if c.name == "tanh RNN, Adam" {
				closeTraining(t, losses, state)
				return
			}
			sameTraining(t, losses, state)
		})
	}
}

// normedCNN is smallCNN with a BatchNorm (momentum 0.8) after its first
// convolution, which it also returns.
func normedCNN(f ops.DataFormat) (nn.Module, *tensor.Tensor, *tensor.Tensor, *nn.BatchNorm) {
	m, x, y := smallCNN(f)
	bn := nn.NewBatchNorm("bn", 6, tensor.Float32)
	bn.Momentum = 0.8
	if f == ops.NCHW {
		bn.Axis = 1
	}
	layers := m.(*nn.Sequential).Modules()
	return nn.NewSequential(slices.Concat(layers[:1], []nn.Module{bn}, layers[1:])...), x, y, bn
}

// A recorded step's replay, which copies BatchNorm's new running
// statistics into their variables, counts as their assignment: a cast of
// a statistic after each step is its new value's, not a kept copy of the
// value before the replay (and a tape would refuse a gradient through
// the old one).
func TestRecordedStepMarksItsStateChanged(t *testing.T) {
	d := testGPU(t)
	onDevice(d, func() {
		model, x, y, bn := normedCNN(ops.NHWC)
		step := nn.RecordedTrainStep(model, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
		batch := data.Element{onGPU(t, d, x), onGPU(t, d, y)}
		awaitNoObservers(t)
		for k := range 5 {
			if _, _, err := step(batch); err != nil {
				t.Fatal(err)
			}
			mean := bn.RunningMean.Value()
			kept := ops.Cast(mean, tensor.BFloat16)
			fresh := ops.Cast(ops.Identity(mean), tensor.BFloat16)
			if !bytes.Equal(onHost(t, kept).HostBytes(), onHost(t, fresh).HostBytes()) {
				t.Fatalf("step %d: the running mean's cast is not its value's", k)
			}
			kept.Release()
		}
	})
}

// closeTraining fails t where the traced run (0) and the recorded one (1)
// differ in a loss or an element of a float32 variable or slot by more
// than float32's rounding of a few sums (a relative 1e-5, or 1e-7 near
// 0), or where every loss and element is the same to the bit (the test
// would not see the difference it allows for).
func closeTraining(t *testing.T, losses [2][]float64, state [2][][]byte) {
	t.Helper()
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Abs(b)+1e-7 }
	same := slices.Equal(losses[0], losses[1])
	for k, l := range losses[1] {
		if !near(losses[0][k], l) {
			t.Errorf("loss %d: traced %v, recorded %v", k, losses[0][k], l)
		}
	}
	for k := range state[1] {
		a, b := state[0][k], state[1][k]
		same = same && bytes.Equal(a, b)
		for j := 0; j+4 <= len(b); j += 4 {
			x := math.Float32frombits(bin.LittleEndian.Uint32(a[j:]))
			y := math.Float32frombits(bin.LittleEndian.Uint32(b[j:]))
			if !near(float64(x), float64(y)) {
				t.Errorf("variable or slot %d, element %d: traced %g, recorded %g", k, j/4, x, y)
				break
			}
		}
	}
	if same {
		t.Error("the runs are the same to the bit: the recurrent kernel's products were not merged")
	}
}

// sameTraining fails t where the traced run (0) and the recorded one (1)
// differ in a loss or in the bytes of a variable or slot after the steps.
func sameTraining(t *testing.T, losses [2][]float64, state [2][][]byte) {
	t.Helper()
	if !slices.Equal(losses[0], losses[1]) {
		t.Errorf("losses: traced %v, recorded %v", losses[0], losses[1])
	}
	for k := range state[1] {
		if !bytes.Equal(state[0][k], state[1][k]) {
			t.Errorf("variable or slot %d differs after the steps", k)
		}
	}
}

// A recording with a tail replays the tail's work after the graph's,
// runs its host function before every replay and returns only the kept
// results; a tail that keeps what is not there or records nothing is
// refused, and the errors of its recording and of its host function are
// the recording's and the run's.
func TestRecordTail(t *testing.T) {
	d := testGPU(t)
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Neg(a[0]), ops.Add(a[0], a[0])}
	})
	x := onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2))
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	g := f.Graph(x)
	sink := onGPU(t, d, tensor.FromSlice([]float32{0, 0}, 2)) // where the tail copies the second result
	befores := 0
	tail := &graph.Tail{Keep: 1, Record: func(out []*tensor.Tensor) (func() error, error) {
		if err := d.Copy(sink.Buffer(), 0, []int{1}, out[1].Buffer(), 0, []int{1}, []int{2}, 4); err != nil {
			return nil, err
		}
		return func() error { befores++; return nil }, nil
	}}
	rec, err := graph.RecordTail(g, tail, x)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for i, in := range [][]float32{{3, 4}, {5, 6}} {
		out, err := rec.Run(onGPU(t, d, tensor.FromSlice(in, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 {
			t.Fatalf("Run returned %d results, want the one kept", len(out))
		}
		if got := tensor.ToSlice[float32](onHost(t, sink)); !slices.Equal(got, []float32{2 * in[0], 2 * in[1]}) {
			t.Errorf("run %d: the tail copied %v", i, got)
		}
		if befores != i+1 {
			t.Errorf("run %d: the tail's host function ran %d times", i, befores)
		}
	}
	for what, bad := range map[string]*graph.Tail{
		"keeping 3 of 2":    {Keep: 3, Record: tail.Record},
		"keeping -1":        {Keep: -1, Record: tail.Record},
		"recording nothing": {Keep: 1},
	} {
		if _, err := graph.RecordTail(g, bad, x); err == nil {
			t.Errorf("a tail %s: no error", what)
		}
	}
	lent, err := graph.RecordTail(g, &graph.Tail{Keep: 1, Lend: true, Record: tail.Record}, x)
	if err != nil {
		t.Fatal(err)
	}
	defer lent.Release()
	first, err := lent.Run(x)
	if err != nil {
		t.Fatal(err)
	}
	second, err := lent.Run(onGPU(t, d, tensor.FromSlice([]float32{7, 8}, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if first[0] != second[0] {
		t.Error("a lending recording's runs returned two tensors: its result was copied")
	}
	if got := tensor.ToSlice[float32](onHost(t, second[0])); !slices.Equal(got, []float32{-7, -8}) {
		t.Errorf("the lent result: %v", got)
	}
	refused := errors.New("refused")
	if _, err := graph.RecordTail(g, &graph.Tail{Keep: 1, Record: func([]*tensor.Tensor) (func() error, error) { return nil, refused }}, x); !errors.Is(err, refused) {
		t.Errorf("a tail whose recording fails: %v", err)
	}
	failing, err := graph.RecordTail(g, &graph.Tail{Keep: 2, Record: func([]*tensor.Tensor) (func() error, error) {
		return func() error { return refused }, nil
	}}, x)
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Release()
	if _, err := failing.Run(x); !errors.Is(err, refused) {
		t.Errorf("a tail whose host function fails: Run's error is %v", err)
	}
}

// With Record, a loop whose trip count does not vary between calls (the
// RNN loop gradient's While, counted by constants) is traced unrolled
// and replayed as one recording; a loop whose trip count an argument
// decides stays a frame, recorded as a loop the device runs, and gives
// each call its own trip count.
func TestRecordedLoops(t *testing.T) {
	d := testGPU(t)
	launches := graphLaunches(d)
	_, emulated := d.ctx.(*emu.Context)
	r := tensor.NewRNG(13)
	w := onGPU(t, d, ops.Mul(tensor.RandNormal(r, tensor.Float32, 16, 16), tensor.Scalar(float32(0.2))))
	xs := onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 6, 16))
	h0 := onGPU(t, d, tensor.FullOn(device.Host(), tensor.Float32, 0, 1, 16))
	want := onHost(t, rnnGrad(w, xs, h0))
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{rnnGrad(a[0], a[1], a[2])} })
	f.Record = true
	awaitNoObservers(t)
	before := launches()
	for call := range 3 {
		out, err := f.Call(w, xs, h0)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, fmt.Sprintf("the RNN loop gradient, call %d", call), out[0], want)
	}
	if n := launches() - before; emulated && n != 2 {
		t.Errorf("the counted loop's calls launched %d graphs, want 2 (one a call after the first)", n)
	}
	doubling := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		return control.While(func(v []*tensor.Tensor) *tensor.Tensor {
			return ops.Lt(ops.Sum(v[0]), onGPU(t, d, tensor.Scalar(float32(100))))
		},
			func(v []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Add(v[0], v[0])} }, []*tensor.Tensor{a[0]})
	})
	doubling.Record = true
	before = launches()
	for _, start := range []float32{1, 30, 2} { // 7, 2 and 6 doublings
		out, err := doubling.Call(onGPU(t, d, tensor.FromSlice([]float32{start}, 1)))
		if err != nil {
			t.Fatal(err)
		}
		v := start
		for v < 100 {
			v += v
		}
		if got := tensor.ToSlice[float32](onHost(t, out[0]))[0]; got != v {
			t.Errorf("doubling from %v: %v, want %v", start, got, v)
		}
	}
	if n := launches() - before; emulated && n != 2 {
		t.Errorf("a loop an argument decides launched %d graphs, want 2 (its loop on the device)", n)
	}
}
