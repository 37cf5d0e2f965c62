package cuda

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Loops whose trip counts the data decide, recorded with their loops on
// the device (conditional WHILE nodes; graph.Record's regions): each call
// after the first is one graph launch, with no wait for the host between
// iterations, and gives bit for bit what the function gives run eagerly
// on the GPU, for every call's own trip counts (none among them, too).
func TestRecordedLoopsOnTheDevice(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	ctx, emulated := d.ctx.(*emu.Context)
	scalar := func(v float32) *tensor.Tensor { return onGPU(t, d, tensor.Scalar(v)) }
	vector := func(vs ...float32) *tensor.Tensor { return onGPU(t, d, tensor.FromSlice(vs, len(vs))) }
	r := tensor.NewRNG(5)
	w := onGPU(t, d, ops.Mul(tensor.RandNormal(r, tensor.Float32, 8, 8), tensor.Scalar(float32(0.3))))
	cases := []struct {
		name  string
		fn    func(a []*tensor.Tensor) []*tensor.Tensor
		calls [][]*tensor.Tensor
	}{{
		// Fibonacci: the next a is the current b, a loop value's own buffer.
		name: "swap",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[2], a[0]) },
				func(v []*tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{v[1], ops.Add(v[0], v[1]), ops.Add(v[2], ops.ScalarLike(v[2], 1))}
				}, []*tensor.Tensor{vector(0, 1), vector(1, 1), scalar(0)})
		},
		calls: [][]*tensor.Tensor{{scalar(5)}, {scalar(9)}, {scalar(0)}, {scalar(1)}},
	}, {
		// Each loop value takes the next one's: the third takes the
		// first's, which the first's copy overwrites unless it is kept.
		name: "rotate",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[3], a[0]) },
				func(v []*tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{v[1], v[2], v[0], ops.Add(v[3], ops.ScalarLike(v[3], 1))}
				}, []*tensor.Tensor{vector(1, 2), vector(3, 4), vector(5, 6), scalar(0)})
		},
		calls: [][]*tensor.Tensor{{scalar(1)}, {scalar(2)}, {scalar(4)}},
	}, {
		// A loop in a loop, each counted by an argument.
		name: "nested",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[1], a[0]) },
				func(v []*tensor.Tensor) []*tensor.Tensor {
					inner := control.While(func(u []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(u[0]), a[1]) },
						func(u []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Add(u[0], u[0])} },
						[]*tensor.Tensor{ops.Add(ops.OnesLike(v[0]), v[0])})
					return []*tensor.Tensor{ops.Mul(inner[0], ops.ScalarLike(v[0], 0.25)), ops.Add(v[1], ops.ScalarLike(v[1], 1))}
				}, []*tensor.Tensor{a[2], scalar(0)})
		},
		calls: [][]*tensor.Tensor{{scalar(3), scalar(40), vector(1, 2, 3)}, {scalar(5), scalar(100), vector(0.5, 0.25, 0)},
			{scalar(0), scalar(10), vector(1, 1, 1)}},
	}, {
		// The body reads a value the condition computed (the condition is
		// computed again at each pass's start) and a loop constant.
		name: "condition read by the body",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			var norm *tensor.Tensor
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor {
				norm = ops.Sqrt(ops.Sum(ops.Mul(v[0], v[0])))
				return ops.Gt(norm, a[1])
			}, func(v []*tensor.Tensor) []*tensor.Tensor {
				h := ops.Tanh(ops.MatMul(v[0], w))
				return []*tensor.Tensor{ops.Sub(h, ops.Mul(ops.Mul(norm, ops.ScalarLike(norm, 0.01)), h))}
			}, []*tensor.Tensor{a[0]})
		},
		calls: [][]*tensor.Tensor{{onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 2, 8)), scalar(0.5)},
			{onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 2, 8)), scalar(0.01)},
			{onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 2, 8)), scalar(100)}},
	}, {
		// MaxIterations bounds a loop the data would run longer.
		name: "bounded",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(v[0]), a[1]) },
				func(v []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Add(v[0], ops.Exp(v[0]))} },
				[]*tensor.Tensor{a[0]}, control.WhileOptions{MaxIterations: 4})
		},
		calls: [][]*tensor.Tensor{{vector(0, 0.5), scalar(1e6)}, {vector(0.5, 0.1), scalar(3)}, {vector(1, 2), scalar(1e6)}},
	}, {
		// A Cond in a loop's body: two IF nodes in the WHILE node's body.
		name: "cond in a loop",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[1], a[1]) },
				func(v []*tensor.Tensor) []*tensor.Tensor {
					x := control.Cond(ops.Gt(ops.Sum(v[0]), ops.ScalarLike(v[1], 4)),
						func() []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(v[0], ops.ScalarLike(v[0], 0.5))} },
						func() []*tensor.Tensor { return []*tensor.Tensor{ops.Add(v[0], ops.OnesLike(v[0]))} })
					return []*tensor.Tensor{x[0], ops.Add(v[1], ops.ScalarLike(v[1], 1))}
				}, []*tensor.Tensor{a[0], ops.ZerosLike(a[1])})
		},
		calls: [][]*tensor.Tensor{{vector(1, 2), scalar(3)}, {vector(1, 2), scalar(7)}, {vector(1, 2), scalar(0)}},
	}, {
		// Conds at the top level, one nested in the other's branch, one
		// branch handing back an argument untouched, a loop in a branch:
		// each call takes its own sides.
		name: "conds",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			big := ops.Gt(ops.Sum(a[0]), a[1])
			y := control.Cond(big,
				func() []*tensor.Tensor {
					inner := control.Cond(ops.Gt(ops.Amax(a[0]), ops.Mul(a[1], ops.ScalarLike(a[1], 0.5))),
						func() []*tensor.Tensor { return []*tensor.Tensor{ops.Exp(a[0])} },
						func() []*tensor.Tensor { return []*tensor.Tensor{ops.Neg(a[0])} })
					return []*tensor.Tensor{inner[0], a[1]}
				},
				func() []*tensor.Tensor {
					grown := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(v[0]), a[1]) },
						func(v []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Add(v[0], ops.Abs(v[0]))} },
						[]*tensor.Tensor{ops.Add(ops.Abs(a[0]), ops.OnesLike(a[0]))})
					return []*tensor.Tensor{grown[0], ops.Sum(grown[0])}
				})
			return []*tensor.Tensor{ops.Mul(y[0], ops.ScalarLike(y[0], 3)), y[1]}
		},
		calls: [][]*tensor.Tensor{{vector(1, 2, 3), scalar(2)}, {vector(1, 2, 3), scalar(40)}, {vector(1, 1, 1), scalar(2.5)},
			{vector(-1, 0, 1), scalar(0.5)}},
	}, {
		// A Cond computes the predicate: IF nodes before the WHILE node
		// and at the end of its body.
		name: "a Cond computes the predicate",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor {
				return control.Cond(ops.Gt(ops.Sum(v[0]), a[1]),
					func() []*tensor.Tensor { return []*tensor.Tensor{ops.Lt(v[1], ops.ScalarLike(v[1], 2))} },
					func() []*tensor.Tensor { return []*tensor.Tensor{ops.Lt(v[1], ops.ScalarLike(v[1], 5))} })[0]
			}, func(v []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Add(v[0], v[0]), ops.Add(v[1], ops.ScalarLike(v[1], 1))}
			}, []*tensor.Tensor{a[0], ops.ZerosLike(a[1])})
		},
		calls: [][]*tensor.Tensor{{vector(1, 2), scalar(3)}, {vector(1, 2), scalar(7)}, {vector(1, 2), scalar(0)}},
	}, {
		// The condition holds a loop of its own (how many doublings reach
		// a bound): a WHILE node before the outer one and in its body.
		name: "a loop in the condition",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor {
				inner := control.While(func(u []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(u[0]), a[1]) },
					func(u []*tensor.Tensor) []*tensor.Tensor {
						return []*tensor.Tensor{ops.Add(u[0], u[0]), ops.Add(u[1], ops.ScalarLike(u[1], 1))}
					}, []*tensor.Tensor{ops.Add(ops.Abs(v[0]), ops.OnesLike(v[0])), ops.ZerosLike(a[1])})
				return ops.Gt(inner[1], ops.ScalarLike(inner[1], 1))
			}, func(v []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Mul(v[0], ops.ScalarLike(v[0], 1.5))}
			}, []*tensor.Tensor{a[0]})
		},
		calls: [][]*tensor.Tensor{{vector(1, 2), scalar(40)}, {vector(0.1, 0.1), scalar(100)}, {vector(5, 5), scalar(3)}},
	}, {
		// The body reads the value of a Cond in the condition: the
		// condition, its Cond with it, is computed again at each pass's
		// start.
		name: "the body reads the condition's Cond",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			var lim *tensor.Tensor
			return control.While(func(v []*tensor.Tensor) *tensor.Tensor {
				lim = control.Cond(ops.Gt(v[1], ops.ScalarLike(v[1], 2)),
					func() []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(a[1], ops.ScalarLike(a[1], 2))} },
					func() []*tensor.Tensor { return []*tensor.Tensor{a[1]} })[0]
				return ops.Lt(ops.Sum(v[0]), lim)
			}, func(v []*tensor.Tensor) []*tensor.Tensor {
				step := ops.Mul(ops.OnesLike(v[0]), ops.Mul(lim, ops.ScalarLike(lim, 0.05)))
				return []*tensor.Tensor{ops.Add(v[0], step), ops.Add(v[1], ops.ScalarLike(v[1], 1))}
			}, []*tensor.Tensor{a[0], ops.ZerosLike(a[1])})
		},
		calls: [][]*tensor.Tensor{{vector(1, 2), scalar(30)}, {vector(0, 0), scalar(4)}, {vector(9, 9), scalar(5)}},
	}, {
		// A Case (a chain of Conds) on an index the caller gives, out of
		// range taking the last branch.
		name: "case",
		fn: func(a []*tensor.Tensor) []*tensor.Tensor {
			return control.Case(a[1],
				func() []*tensor.Tensor { return []*tensor.Tensor{ops.Exp(a[0])} },
				func() []*tensor.Tensor { return []*tensor.Tensor{ops.Neg(a[0])} },
				func() []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(a[0], a[0])} })
		},
		calls: [][]*tensor.Tensor{{vector(1, 2), onGPU(t, d, tensor.Scalar(int32(0)))}, {vector(1, 2), onGPU(t, d, tensor.Scalar(int32(1)))},
			{vector(1, 2), onGPU(t, d, tensor.Scalar(int32(2)))}, {vector(3, 2), onGPU(t, d, tensor.Scalar(int32(7)))}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := trace.NewFunction(c.fn)
			f.Record = true
			var passes int
			if emulated {
				passes = ctx.LoopPasses + ctx.BranchesTaken
			}
			for call, args := range c.calls {
				got, want := callRecorded(t, d, f, c.fn, args, call)
				for i := range want {
					g, w := tensor.ToSlice[float32](onHost(t, got[i])), tensor.ToSlice[float32](onHost(t, want[i]))
					if !slices.EqualFunc(g, w, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
						t.Errorf("call %d, result %d: %v, want %v (run eagerly)", call, i, g, w)
					}
				}
			}
			if emulated && ctx.LoopPasses+ctx.BranchesTaken == passes {
				t.Errorf("no loop or branch ran on the device")
			}
			// On a GPU the counts above are not seen: record the graph
			// again, which fails where the driver refused the loop (the
			// calls then ran its frame op by op).
			args := c.calls[0]
			if err := f.RecordError(args...); err != nil {
				t.Errorf("RecordError: %v", err)
			}
			rec, err := graph.Record(f.Graph(args...), args...)
			if err != nil {
				t.Fatalf("the loop's graph is not recorded on %s: %v", d.Name(), err)
			}
			rec.Release()
		})
	}
}

// callRecorded runs fn eagerly and f (fn traced with Record) on args for
// call number call, and checks on the emulator that f launched one graph
// where it had traced already (call 0 traces).
func callRecorded(t *testing.T, d *Device, f *trace.Function, fn func([]*tensor.Tensor) []*tensor.Tensor, args []*tensor.Tensor, call int) (got, want []*tensor.Tensor) {
	t.Helper()
	_, emulated := d.ctx.(*emu.Context)
	want = fn(args)
	before := graphLaunches(d)()
	got, err := f.Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	if n := graphLaunches(d)() - before; emulated && n != min(call, 1) {
		t.Errorf("call %d: %d graph launches, want %d", call, n, min(call, 1))
	}
	return got, want
}

// A graph the device cannot record (one returning its argument: a result
// must be an op's output of its own) runs op by op, with the same
// results, and says why once.
func TestRecordedLoopFallbacks(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(v[0]), a[1]) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Mul(v[0], ops.Add(v[0], ops.OnesLike(v[0])))}
			},
			[]*tensor.Tensor{a[0]})
		return []*tensor.Tensor{out[0], a[0]}
	}
	f := trace.NewFunction(fn)
	f.Record = true
	var notes []string
	f.Logf = func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	for call, n := range []float32{3, 30, 0} {
		args := []*tensor.Tensor{onGPU(t, d, tensor.FromSlice([]float32{0.5, 1}, 2)), onGPU(t, d, tensor.Scalar(n))}
		want := tensor.ToSlice[float32](onHost(t, fn(args)[0]))
		before := graphLaunches(d)()
		got, err := f.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		if n := graphLaunches(d)() - before; n != 0 {
			t.Errorf("call %d: %d graph launches of a graph returning its argument", call, n)
		}
		if g := tensor.ToSlice[float32](onHost(t, got[0])); !slices.Equal(g, want) {
			t.Errorf("call %d: %v, want %v", call, g, want)
		}
	}
	args := []*tensor.Tensor{onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2)), onGPU(t, d, tensor.Scalar(float32(1)))}
	if err := f.RecordError(args...); err == nil || !strings.Contains(err.Error(), "result 1") {
		t.Errorf("RecordError of a graph returning its argument: %v", err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "runs op by op") {
		t.Errorf("Logf heard %q, want one note that the graph runs op by op", notes)
	}
}

// A loop the data decide costs a recorded call a few calls on the
// stream and no wait, where the frame executor waits for each
// iteration's predicate and launches each op: the emulator's counts for
// BenchmarkConvergenceLoopGPU's loop (16 iterations of a [1 128] x [128
// 128] product, tanh and a max).
func TestLoopQueuedCalls(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's calls")
	}
	awaitNoObservers(t)
	r := tensor.NewRNG(11)
	w := ops.Mul(tensor.RandNormalOn(d, r, tensor.Float32, 128, 128), onGPU(t, d, tensor.Scalar(float32(0.06))))
	x := tensor.RandNormalOn(d, r, tensor.Float32, 1, 128)
	h0 := tensor.FullOn(d, tensor.Float32, 0, 1, 128)
	tol, one := tensor.FullOn(d, tensor.Float32, 1e-5), tensor.FullOn(d, tensor.Float32, 1)
	loop := func(a []*tensor.Tensor) []*tensor.Tensor {
		out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Gt(v[1], tol) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				h := ops.Tanh(ops.Add(ops.MatMul(v[0], a[0]), a[1]))
				return []*tensor.Tensor{h, ops.Amax(ops.Abs(ops.Sub(h, v[0])))}
			}, []*tensor.Tensor{a[2], one})
		return out[:1]
	}
	for _, record := range []bool{false, true} {
		f := trace.NewFunction(loop)
		f.Record = record
		for range 2 { // the trace, then the graph (and its recording)
			if _, err := f.Call(w, x, h0); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		// The waits are the context's: the collector's release of a
		// recording an earlier test dropped waits too, whenever it runs,
		// so a recorded call gets three tries at showing none.
		for try := range 3 {
			queued, waits, passes := ctx.Queued, ctx.Waits, ctx.LoopPasses
			if _, err := f.Call(w, x, h0); err != nil {
				t.Fatal(err)
			}
			q, wt := ctx.Queued-queued, ctx.Waits-waits
			if err := d.Synchronize(); err != nil {
				t.Fatal(err)
			}
			t.Logf("Record %v: %d calls queued, %d waits, %d passes on the device", record, q, wt, ctx.LoopPasses-passes)
			if record && wt != 0 && try < 2 {
				continue
			}
			switch {
			case record && (q > 5 || wt != 0 || ctx.LoopPasses-passes != 16):
				t.Errorf("recorded: %d calls queued, %d waits, %d passes on the device; want at most 5, none, 16", q, wt, ctx.LoopPasses-passes)
			case !record && wt < 16:
				t.Errorf("op by op: %d waits, want one an iteration at least (the predicate read)", wt)
			}
			break
		}
	}
}

// A loop a tape records, bounded by MaxIterations, is recorded with its
// gradient: the forward loop pushes what the backward loop pops onto
// stacks of MaxIterations elements on the device (device.PositionCopier),
// and both loops are WHILE nodes: each call's trip count (two, five, the
// bound) gives the eager loss and gradient.
func TestRecordedLoopGradients(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	r := tensor.NewRNG(21)
	w := onGPU(t, d, ops.Mul(tensor.RandNormal(r, tensor.Float32, 4, 4), tensor.Scalar(float32(0.4))))
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(a[0])
		out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(ops.Square(v[0])), a[2]) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Add(ops.Mul(ops.Tanh(ops.MatMul(v[0], a[0])), ops.ScalarLike(v[0], 1.5)), v[0])}
			}, []*tensor.Tensor{a[1]}, control.WhileOptions{MaxIterations: 6})
		loss := ops.Sum(ops.Square(out[0]))
		return []*tensor.Tensor{loss, tp.Gradient(loss, a[0])[0]}
	}
	f := trace.NewFunction(fn)
	f.Record = true
	x := onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 2, 4))
	for call, thr := range []float32{3, 50, 1e9, 0, 20} {
		got, want := callRecorded(t, d, f, fn, []*tensor.Tensor{w, x, onGPU(t, d, tensor.Scalar(thr))}, call)
		for i := range want {
			if want[i] == nil { // no iteration: no gradient eagerly, zeros in the graph
				if got[i] != nil && slices.ContainsFunc(tensor.ToSlice[float32](onHost(t, got[i])), func(v float32) bool { return v != 0 }) {
					t.Errorf("call %d, result %d: %v, want zeros", call, i, got[i])
				}
				continue
			}
			agreeWithin(t, fmt.Sprintf("call %d (threshold %v), result %d", call, thr, i), got[i], onHost(t, want[i]), 1e-5)
		}
	}
	if err := f.RecordError(w, x, onGPU(t, d, tensor.Scalar(float32(1)))); err != nil {
		t.Errorf("RecordError: %v", err)
	}
}

// A recurrent layer's Scan, traced as a frame with its gradient (as a
// sequence too long to unroll would be), records with its stacks on the
// device: a Scan's steps bound its loop. The recording's loss and
// gradients are the frame executor's.
func TestRecordedScanGradient(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	onDevice(d, func() {
		r := tensor.NewRNG(6)
		// A cell of its own (an LSTM's or a GRU's steps are one op on
		// the GPU: ops.LSTMSequence, ops.GRUSequence).
		rnn := &nn.RNN{Cell: newTanhCell(r, 8, 16)}
		vars := nn.AllVariables(rnn)
		x := tensor.RandNormal(r, tensor.Float32, 4, 7, 8)
		fn := func(a []*tensor.Tensor) []*tensor.Tensor {
			tp := tape.New()
			values := make([]*tensor.Tensor, len(vars))
			for i, v := range vars {
				values[i] = v.Value()
			}
			tp.Watch(values...)
			loss := ops.Sum(ops.Square(rnn.Forward(a[0])))
			return append([]*tensor.Tensor{loss}, tp.Gradient(loss, values...)...)
		}
		f := trace.NewFunction(fn) // no Record: the Scan is a frame
		want, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		g := f.Graph(x)
		stacks := 0
		for _, n := range g.Nodes {
			if n.Kind == graph.Stack {
				stacks++
				if n.Capacity != 7 {
					t.Errorf("%v holds %d values, want the 7 steps", n, n.Capacity)
				}
			}
		}
		if stacks == 0 {
			t.Fatal("the traced gradient has no stack: the Scan was not a frame")
		}
		rec, err := graph.Record(g, x)
		if err != nil {
			t.Fatalf("the Scan's gradient was not recorded: %v", err)
		}
		defer rec.Release()
		for call := range 2 {
			got, err := rec.Run(x)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				agreeWithin(t, fmt.Sprintf("run %d, result %d", call, i), got[i], onHost(t, want[i]), 1e-5)
			}
		}
		if ctx, ok := d.ctx.(*emu.Context); ok { // what each costs the host, counted
			for _, run := range []struct {
				name string
				fn   func() error
			}{{"the frames, op by op", func() error { _, err := f.Call(x); return err }},
				{"the recording", func() error { _, err := rec.Run(x); return err }}} {
				if err := d.Synchronize(); err != nil {
					t.Fatal(err)
				}
				queued, waits := ctx.Queued, ctx.Waits
				if err := run.fn(); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d calls queued, %d waits", run.name, ctx.Queued-queued, ctx.Waits-waits)
			}
		}
	})
}

// A Cond in a loop a tape records: the values its branches push are
// popped where the popped predicate takes the same branch (a gate of its
// own, an IF node), and the gradient's Cond reads them there.
func TestRecordedLoopGradientWithCond(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	r := tensor.NewRNG(22)
	w := onGPU(t, d, ops.Mul(tensor.RandNormal(r, tensor.Float32, 4, 4), tensor.Scalar(float32(0.5))))
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(a[0])
		out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(ops.Square(v[0])), a[2]) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				h := ops.MatMul(v[0], a[0])
				y := control.Cond(ops.Gt(ops.Sum(h), ops.ScalarLike(h, 0)),
					func() []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(ops.Sin(h), ops.ScalarLike(h, 2))} },
					func() []*tensor.Tensor { return []*tensor.Tensor{ops.Sub(ops.Mul(h, h), v[0])} })
				return []*tensor.Tensor{ops.Add(y[0], v[0])}
			}, []*tensor.Tensor{a[1]}, control.WhileOptions{MaxIterations: 5})
		loss := ops.Sum(ops.Square(out[0]))
		return []*tensor.Tensor{loss, tp.Gradient(loss, a[0])[0]}
	}
	x := onGPU(t, d, tensor.RandNormal(r, tensor.Float32, 2, 4))
	f := trace.NewFunction(fn) // frames: traced once, recorded below
	thr := onGPU(t, d, tensor.Scalar(float32(40)))
	if _, err := f.Call(w, x, thr); err != nil {
		t.Fatal(err)
	}
	rec, err := graph.Record(f.Graph(w, x, thr), w, x, thr)
	if err != nil {
		t.Fatalf("the loop's gradient with a Cond was not recorded: %v", err)
	}
	defer rec.Release()
	for _, v := range []float32{40, 3, 1e9, 0.5, 12} {
		th := onGPU(t, d, tensor.Scalar(v))
		want, err := f.Call(w, x, th)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rec.Run(w, x, th)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			agreeWithin(t, fmt.Sprintf("threshold %v, result %d", v, i), got[i], onHost(t, want[i]), 1e-5)
		}
	}
}

// refine is a layer that applies h ← tanh(h·W) + h until h's squares sum
// past a threshold, at most four times: a loop the data decide, inside a
// model a training step differentiates.
type refine struct{ w *tape.Variable }

func (r refine) Forward(x *tensor.Tensor) *tensor.Tensor {
	thr := ops.ScalarLike(x, 40)
	return control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(ops.Square(v[0])), thr) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Add(ops.Tanh(ops.MatMul(v[0], r.w.Value())), v[0])}
		}, []*tensor.Tensor{x}, control.WhileOptions{MaxIterations: 4})[0]
}

func (r refine) Variables() []*tape.Variable { return []*tape.Variable{r.w} }

// A training step whose model holds a loop the data decide (its trip
// count differs between batches) records as one graph with the
// optimizer's update, the loop and its gradient as WHILE nodes: the
// losses and variables of TracedTrainStep, bit for bit, one launch a step.
func TestRecordedTrainStepWithALoop(t *testing.T) {
	d := testGPU(t)
	_, emulated := d.ctx.(*emu.Context)
	build := func() (nn.Module, []data.Element) {
		r := tensor.NewRNG(9)
		m := nn.NewSequential(refine{tape.NewVariable("w", ops.Mul(tensor.RandNormal(r, tensor.Float32, 6, 6), tensor.Scalar(float32(0.5))))},
			nn.NewDense("o", r, 6, 3, nn.DenseOpts{}))
		var batches []data.Element
		for i := range 4 {
			x := ops.Mul(tensor.RandNormal(r, tensor.Float32, 5, 6), tensor.Scalar(float32(0.5+float64(i))))
			batches = append(batches, data.Element{onGPU(t, d, x), onGPU(t, d, tensor.FromSlice([]int32{0, 1, 2, 1, 0}, 5))})
		}
		return m, batches
	}
	var losses [2][]float64
	var state [2][][]byte
	for i, record := range []bool{false, true} {
		onDevice(d, func() {
			model, batches := build()
			opt := nn.NewAdam(nn.Constant(0.01))
			step := nn.TracedTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
			if record {
				step = nn.RecordedTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
				awaitNoObservers(t)
			}
			before := graphLaunches(d)()
			for _, b := range append(batches, batches...) {
				l, _, err := step(b)
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = append(losses[i], l)
			}
			for _, v := range append(model.Variables(), opt.Slots()...) {
				state[i] = append(state[i], onHost(t, v.Value()).HostBytes())
			}
			if record && emulated {
				if n := graphLaunches(d)() - before; n < 6 {
					t.Errorf("%d graph launches in 8 steps, want one a step after the first two", n)
				}
			}
		})
	}
	if !slices.Equal(losses[0], losses[1]) {
		t.Errorf("losses: traced %v, recorded %v", losses[0], losses[1])
	}
	for k := range state[1] {
		if !bytes.Equal(state[0][k], state[1][k]) {
			t.Errorf("variable or slot %d differs after the steps", k)
		}
	}
}

// tanhCell is a plain recurrent cell, h' = tanh(x·W + h·U): a Scan's
// steps, whatever the device.
type tanhCell struct{ w, u *tape.Variable }

func newTanhCell(r *tensor.RNG, in, hidden int) *tanhCell {
	return &tanhCell{
		w: tape.NewVariable("w", tensor.RandNormal(r, tensor.Float32, in, hidden)),
		u: tape.NewVariable("u", tensor.RandNormal(r, tensor.Float32, hidden, hidden)),
	}
}

func (c *tanhCell) Step(x *tensor.Tensor, state []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
	h := ops.Tanh(ops.Add(ops.MatMul(x, c.w.Value()), ops.MatMul(state[0], c.u.Value())))
	return h, []*tensor.Tensor{h}
}

func (c *tanhCell) InitialState(n int) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Zeros(tensor.Float32, n, c.u.Value().Dim(0))}
}

func (c *tanhCell) Variables() []*tape.Variable { return []*tape.Variable{c.w, c.u} }
