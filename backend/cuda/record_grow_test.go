package cuda

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

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

// squaringLoopGradient is the gradient, for a[0], of a loop without
// MaxIterations that maps v to v·(v + 1) while Σv < a[1].
func squaringLoopGradient(a []*tensor.Tensor) []*tensor.Tensor {
	tp := tape.New()
	tp.Watch(a[0])
	out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(v[0]), a[1]) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Mul(v[0], ops.Add(v[0], ops.OnesLike(v[0])))}
		},
		[]*tensor.Tensor{a[0]})
	return tp.Gradient(ops.Sum(out[0]), a[0])
}

// A loop a tape records without MaxIterations is recorded with stacks of
// the depth its trace saw, checked after every replay: a call whose loop
// runs deeper gives the eager results (run op by op: many calls queued,
// where a replay queues a few), and the next call records again with room
// for it; calls as deep or shallower replay. The trip counts below: 2
// (the trace), 2, 3 (past 2: op by op), 3, 0, 5 (past max(3, 2·2)), 5, 5.
func TestRecordedLoopGuessedDepth(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	awaitNoObservers(t)
	fn := squaringLoopGradient
	f := trace.NewFunction(fn)
	f.Record = true
	var notes []string
	f.Logf = func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	for call, c := range []struct {
		threshold float32
		opByOp    bool
	}{{3, true}, {3, false}, {30, true}, {30, false}, {0, false}, {1e6, true}, {1e6, false}, {1e4, false}} {
		args := []*tensor.Tensor{onGPU(t, d, tensor.FromSlice([]float32{0.5, 1}, 2)), onGPU(t, d, tensor.Scalar(c.threshold))}
		want := tensor.ToSlice[float32](onHost(t, fn(args)[0]))
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		launches := graphLaunches(d)()
		queued := 0
		if emulated {
			queued = ctx.Queued
		}
		got, err := f.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		if g := tensor.ToSlice[float32](onHost(t, got[0])); !slices.Equal(g, want) {
			t.Errorf("call %d (threshold %g): %v, want %v", call, c.threshold, g, want)
		}
		if !emulated {
			continue
		}
		q := ctx.Queued - queued
		if n := graphLaunches(d)() - launches; n != min(call, 1) {
			t.Errorf("call %d: %d graph launches, want %d", call, n, min(call, 1))
		}
		if opByOp := q > 20; opByOp != c.opByOp {
			t.Errorf("call %d (threshold %g): %d calls queued; want it run op by op: %v", call, c.threshold, q, c.opByOp)
		}
	}
	if err := f.RecordError(onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2)), onGPU(t, d, tensor.Scalar(float32(1)))); err != nil {
		t.Errorf("RecordError: %v", err)
	}
	if len(notes) != 0 {
		t.Errorf("Logf heard %q, want nothing", notes)
	}
}

// Where a call outgrew a recording's stacks and the graph cannot be
// recorded again (the emulator refuses the capture, as a device out of
// memory would), the calls run op by op, with the eager results, and
// RecordError says why; the graph is not recorded again afterwards.
func TestRecordedLoopNotRecordedAgain(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	if !emulated {
		t.Skip("the emulator refuses the capture")
	}
	awaitNoObservers(t)
	fn := squaringLoopGradient
	f := trace.NewFunction(fn)
	f.Record = true
	args := func(threshold float32) []*tensor.Tensor {
		return []*tensor.Tensor{onGPU(t, d, tensor.FromSlice([]float32{0.5, 1}, 2)), onGPU(t, d, tensor.Scalar(threshold))}
	}
	// Trip counts 2 (the trace), 2 (recorded), 3 (past the stacks: op by
	// op, the recording dropped), then 3 and 2 where it cannot be made
	// again.
	for call, threshold := range []float32{3, 3, 30, 30, 3} {
		if call == 3 {
			ctx.RefuseCaptures(1)
		}
		a := args(threshold)
		want := tensor.ToSlice[float32](onHost(t, fn(a)[0]))
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		launches := graphLaunches(d)()
		got, err := f.Call(a...)
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		if g := tensor.ToSlice[float32](onHost(t, got[0])); !slices.Equal(g, want) {
			t.Errorf("call %d (threshold %g): %v, want %v", call, threshold, g, want)
		}
		// Calls 1 and 2 replay (2 then finds its stacks overflowed); 3 and
		// 4 have no recording.
		if n, replays := graphLaunches(d)()-launches, call == 1 || call == 2; (n > 0) != replays {
			t.Errorf("call %d: %d graph launches, want replayed: %v", call, n, replays)
		}
		err = f.RecordError(args(3)...)
		if refused := call >= 3; refused != (err != nil) || refused && !strings.Contains(err.Error(), "RefuseCaptures") {
			t.Errorf("call %d: RecordError %v, want the refusal: %v", call, err, refused)
		}
	}
	ctx.RefuseCaptures(0)
}

// repeatedDense is a model whose loop the batch decides: a Dense layer
// with tanh applied while fewer than max(x) passes ran, then a Dense
// layer of two logits.
type repeatedDense struct{ cell, out *nn.Dense }

func newRepeatedDense(r *tensor.RNG) *repeatedDense {
	return &repeatedDense{
		cell: nn.NewDense("cell", r, 4, 4, nn.DenseOpts{Activation: ops.Tanh}),
		out:  nn.NewDense("out", r, 4, 2, nn.DenseOpts{}),
	}
}

func (m *repeatedDense) Forward(x *tensor.Tensor) *tensor.Tensor {
	limit := ops.Amax(x)
	h := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[1], limit) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{m.cell.Forward(v[0]), ops.Add(v[1], ops.OnesLike(v[1]))}
		}, []*tensor.Tensor{x, ops.ZerosLike(limit)})
	return m.out.Forward(h[0])
}

func (m *repeatedDense) Variables() []*tape.Variable {
	return append(m.cell.Variables(), m.out.Variables()...)
}

// A recorded training step whose model loops as the batch says, without
// MaxIterations: each step's loss, variables and Adam's slots are bit for
// bit TracedTrainStep's, the steps whose loop runs deeper than the
// recording's stacks hold update nothing from the replay (its tail, the
// update, is a recording of its own, replayed once the stacks are known
// to have held) and run op by op, and the next step records again.
func TestRecordedTrainStepGuessedDepth(t *testing.T) {
	d := testGPU(t)
	ctx, emulated := d.ctx.(*emu.Context)
	trips := []int{2, 2, 3, 3, 1, 5, 5, 4} // the trace saw 2: 3 and 5 go deeper
	deeper := []bool{false, false, true, false, false, true, false, false}
	batch := func(k int) data.Element {
		r := tensor.NewRNG(uint64(40 + k))
		x := tensor.ToSlice[float32](tensor.RandUniform(r, tensor.Float32, -0.5, 0.5, 8, 4))
		x[0] = float32(trips[k])
		y := make([]int32, 8)
		for i := range y {
			y[i] = int32(i % 2)
		}
		return data.Element{onGPU(t, d, tensor.FromSlice(x, 8, 4)), onGPU(t, d, tensor.FromSlice(y, 8))}
	}
	var losses [2][]float64
	var state [2][][]byte
	for i, record := range []bool{false, true} {
		onDevice(d, func() {
			model := newRepeatedDense(tensor.NewRNG(3))
			opt := nn.NewAdam(nn.Constant(0.05))
			step := nn.TracedTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
			if record {
				step = nn.RecordedTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
				awaitNoObservers(t)
			}
			for k := range trips {
				b := batch(k)
				launches, queued := graphLaunches(d)(), 0
				if emulated {
					queued = ctx.Queued
				}
				l, _, err := step(b)
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = append(losses[i], l)
				if !record || !emulated || k == 0 {
					continue
				}
				// A step that holds: the graph's replay and the update's.
				want := 2
				if deeper[k] {
					want = 1
				}
				if n := graphLaunches(d)() - launches; n != want {
					t.Errorf("step %d (%d passes): %d graph launches, want %d", k, trips[k], n, want)
				}
				if q := ctx.Queued - queued; (q > 30) != deeper[k] {
					t.Errorf("step %d (%d passes): %d calls queued; want it run op by op: %v", k, trips[k], q, deeper[k])
				}
			}
			for _, v := range append(model.Variables(), opt.Slots()...) {
				state[i] = append(state[i], onHost(t, v.Value()).HostBytes())
			}
		})
	}
	sameTraining(t, losses, state)
}

// A loop a tape records whose body holds a Cond inside a Cond records
// too: the backward loop pops the inner Cond's predicate only where the
// outer branch was taken (its gate made before the pops it orders, so
// that the graph's nodes come after what they read). Each call is one
// graph launch and gives the eager loss and gradient.
func TestRecordedNestedCondGradients(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	r := tensor.NewRNG(8)
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(a[0])
		w := a[0]
		out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(ops.Abs(v[0])), a[2]) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				h := ops.Mul(v[0], w)
				return control.Cond(ops.Gt(ops.Sum(h), ops.ScalarLike(h, 0)),
					func() []*tensor.Tensor {
						return control.Cond(ops.Gt(ops.Amax(h), ops.ScalarLike(h, 0.5)),
							func() []*tensor.Tensor { return []*tensor.Tensor{ops.Add(ops.Sin(h), v[0])} },
							func() []*tensor.Tensor { return []*tensor.Tensor{ops.Add(ops.Mul(h, w), ops.ScalarLike(h, 0.3))} })
					},
					func() []*tensor.Tensor { return []*tensor.Tensor{ops.Sub(ops.Square(h), v[0])} })
			}, []*tensor.Tensor{a[1]})
		loss := ops.Sum(ops.Square(out[0]))
		return []*tensor.Tensor{loss, tp.Gradient(loss, w)[0]}
	}
	f := trace.NewFunction(fn)
	f.Record = true
	w := onGPU(t, d, ops.Add(tensor.RandUniform(r, tensor.Float32, -0.8, 0.9, 3), tensor.Scalar(float32(0.6))))
	for call, thr := range []float32{4, 2, 9, 0, 6} {
		x := onGPU(t, d, tensor.RandUniform(r, tensor.Float32, -0.8, 0.9, 2, 3))
		got, want := callRecorded(t, d, f, fn, []*tensor.Tensor{w, x, onGPU(t, d, tensor.Scalar(thr))}, call)
		for i := range want {
			if want[i] == nil {
				continue // no iteration: no gradient eagerly
			}
			agreeWithin(t, fmt.Sprintf("call %d (threshold %v), result %d", call, thr, i), got[i], onHost(t, want[i]), 1e-5)
		}
	}
	if err := f.RecordError(w, onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)), onGPU(t, d, tensor.Scalar(float32(1)))); err != nil {
		t.Errorf("RecordError: %v", err)
	}
}

// The gradient of a Case (Conds nested in a branch) records, at the top
// and inside a loop a tape records: the gradient's Switches read values
// made inside the nested Conds, alive only where those decide as they
// did, which the gradient's own nested Conds do (graph's lifted
// Switches owing decisions). Every call is one graph launch, and calls
// take each of the three branches, giving the eager loss and gradients.
func TestRecordedCaseGradients(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	branches := func(x, w *tensor.Tensor) []func() []*tensor.Tensor {
		return []func() []*tensor.Tensor{
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(ops.Exp(x), w)} },
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Sub(ops.Square(x), w)} },
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Tanh(ops.Add(x, w))} },
		}
	}
	top := func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(a[0], a[1])
		y := control.Case(ops.ArgMax(ops.Sum(a[0], 0), 0), branches(a[0], a[1])...)
		loss := ops.Sum(ops.Square(y[0]))
		return append([]*tensor.Tensor{loss}, tp.Gradient(loss, a[0], a[1])...)
	}
	inLoop := func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(a[0], a[1])
		out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(ops.Abs(v[0])), a[2]) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				return control.Case(ops.ArgMax(ops.Sum(v[0], 0), 0), branches(v[0], a[1])...)
			}, []*tensor.Tensor{a[0]}, control.WhileOptions{MaxIterations: 5})
		loss := ops.Sum(ops.Square(out[0]))
		return append([]*tensor.Tensor{loss}, tp.Gradient(loss, a[0], a[1])...)
	}
	w := onGPU(t, d, tensor.FromSlice([]float32{0.3, -0.2, 0.1}, 3))
	thr := onGPU(t, d, tensor.Scalar(float32(6)))
	for name, fn := range map[string]func([]*tensor.Tensor) []*tensor.Tensor{"at the top": top, "in a loop": inLoop} {
		f := trace.NewFunction(fn)
		f.Record = true
		// Each call's column sums pick a branch: 0, 2, 1, 0, 1.
		for call, hot := range []int{0, 2, 1, 0, 1} {
			v := []float32{0.2, -0.1, 0.3, -0.4, 0.1, 0.2}
			v[hot], v[3+hot] = 0.9, 0.5
			x := onGPU(t, d, tensor.FromSlice(v, 2, 3))
			got, want := callRecorded(t, d, f, fn, []*tensor.Tensor{x, w, thr}, call)
			for i := range want {
				agreeWithin(t, fmt.Sprintf("%s, call %d (branch %d), result %d", name, call, hot, i), got[i], onHost(t, want[i]), 1e-5)
			}
		}
		if err := f.RecordError(onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)), w, thr); err != nil {
			t.Errorf("%s: RecordError: %v", name, err)
		}
	}
}

// A gradient Cond's Switch reading a value made inside a Cond nested in
// the forward branch owes that Cond's decision: a graph whose reader of
// it is an op, not a Switch of a Cond deciding the same (so that it reads
// the value where it is dead: the executor fails there), is refused, not
// recorded to read a stale buffer.
func TestRecordRefusesOwedDecisions(t *testing.T) {
	d := testGPU(t)
	g := &graph.Graph{Device: d}
	x, p1, p2 := g.Input("x"), g.Input("p1"), g.Input("p2")
	op := func(name string, in ...graph.Output) graph.Output {
		return g.Apply(eager.Lookup(name), nil, 1, in...).Out(0)
	}
	cond := func(n *graph.Node, c int) *graph.Node { n.Cond = c; return n }
	s1 := cond(g.Switch(x, p1), 1)         // Cond 1 on p1
	s2 := cond(g.Switch(s1.Out(1), p2), 2) // Cond 2 on p2, inside Cond 1's true branch
	v := op("Neg", s2.Out(1))              // made where p1 and p2 hold
	m2 := cond(g.Merge(op("Abs", s2.Out(0)), v), 2)
	m1 := cond(g.Merge(op("Exp", s1.Out(0)), m2.Out(0)), 1)
	s3 := cond(g.Switch(v, p1), 3) // the gradient Cond on p1: lifted, owing p2
	s4 := cond(g.Switch(x, p1), 3)
	m3 := cond(g.Merge(op("Sin", s4.Out(0)), op("Exp", s3.Out(1))), 3) // Exp reads v where p2 may not hold
	g.Result = []graph.Output{m1.Out(0), m3.Out(0)}
	args := []*tensor.Tensor{onGPU(t, d, tensor.FromSlice([]float32{0.5, -1}, 2)), onGPU(t, d, tensor.Scalar(true)), onGPU(t, d, tensor.Scalar(false))}
	if _, err := graph.Execute(g, args...); err == nil {
		t.Error("Execute where Exp reads a dead value: no error")
	}
	_, err := graph.Record(g, args...)
	if !errors.Is(err, device.ErrCapture) || !strings.Contains(err.Error(), "alive only where") {
		t.Errorf("Record: %v, want ErrCapture naming the owed decision", err)
	}
}
