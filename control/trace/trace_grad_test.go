package trace_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Gradients of traced While loops: the loop and its gradient are frames
// (the backward one reading stacks the forward one pushes), equal to the
// eager tape's gradients whatever the trip count of each call.

// closeTo fails unless got and want have the same shape and agree to tol
// relative to the larger magnitude (fusion may reorder float rounding). A
// nil want (eagerly, no gradient: the loop took no iteration) asks for
// zeros: a graph's result cannot be missing on some calls only.
func closeTo(t *testing.T, what string, got, want T, tol float64) {
	t.Helper()
	if want == nil && got == nil {
		return
	}
	if want == nil && got != nil {
		want = ops.ZerosLike(got)
	}
	if got == nil || want == nil {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	if !got.Shape().Equal(want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := tensor.ToSlice[float64](ops.Cast(got, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
	for i := range g {
		if d := math.Abs(g[i] - w[i]); d > tol*math.Max(1, math.Max(math.Abs(g[i]), math.Abs(w[i]))) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, g[i], w[i])
		}
	}
}

// checkTracedGrad calls fn traced on each argument list and compares every
// result with fn run eagerly; it expects one trace.
func checkTracedGrad(t *testing.T, name string, fn func([]T) []T, calls [][]T) *trace.Function {
	t.Helper()
	f := trace.NewFunction(fn)
	checkCalls(t, name, f, fn, calls, 1e-5)
	if f.Traces() != 1 {
		t.Errorf("%s: %d traces", name, f.Traces())
	}
	return f
}

// checkCalls calls f (fn traced) on each argument list and compares every
// result with fn run eagerly, to tol.
func checkCalls(t *testing.T, name string, f *trace.Function, fn func([]T) []T, calls [][]T, tol float64) {
	t.Helper()
	for c, args := range calls {
		got, err := f.Call(args...)
		if err != nil {
			t.Fatalf("%s call %d: %v", name, c, err)
		}
		want := fn(args)
		if len(got) != len(want) {
			t.Fatalf("%s call %d: %d results, want %d", name, c, len(got), len(want))
		}
		for i := range want {
			closeTo(t, fmt.Sprintf("%s call %d %v result %d", name, c, args[0].Shape(), i), got[i], want[i], tol)
		}
	}
}

func TestTracedWhileGradient(t *testing.T) {
	w := tape.NewVariable("w", tensor.Scalar(float32(1.5)))
	ten, one := tensor.Scalar(float32(10)), tensor.Scalar(float32(1))
	// Two loop values, a variable read in the body, a trip count that
	// depends on the argument; the first call (the trace) takes no
	// iteration at all.
	f := checkTracedGrad(t, "counter", func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		y := control.While(func(v []T) T { return ops.Lt(v[1], ten) },
			func(v []T) []T { return []T{ops.Mul(ops.Tanh(v[0]), w.Value()), ops.Add(v[1], one)} }, []T{a[0], a[0]})
		g := tp.Gradient(ops.Add(ops.Mul(y[0], y[0]), y[1]), a[0], w.Value())
		return []T{y[0], y[1], g[0], g[1]}
	}, [][]T{{tensor.Scalar(float32(20))}, {tensor.Scalar(float32(1))}, {tensor.Scalar(float32(-4.5))}, {tensor.Scalar(float32(9.5))}, {tensor.Scalar(float32(10))}})
	g := f.Graph(tensor.Scalar(float32(0))).String()
	for _, want := range []string{`{"while1_grad"}`, "StackPush", "StackPop"} {
		if !strings.Contains(g, want) {
			t.Errorf("the graph has no %s:\n%s", want, g)
		}
	}
	// The body's gradient reads tanh's output: one stack, not one per op.
	if n := strings.Count(g, "= StackPush("); n != 1 {
		t.Errorf("%d pushes, want 1:\n%s", n, g)
	}
}

// An RNN over a sequence argument, the step read with Gather by an integer
// loop value, the length given by the argument's values (so the trip count
// varies without a retrace): gradients for the weights, the initial state
// and the whole sequence.
func TestTracedWhileGradientRNN(t *testing.T) {
	rng := tensor.NewRNG(7)
	w := tape.NewVariable("w", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 4, 4), tensor.Scalar(0.5)))
	b := tape.NewVariable("b", tensor.RandNormal(rng, tensor.Float64, 1, 4))
	fn := func(a []T) []T {
		xs, h0, steps := a[0], a[1], a[2]
		tp := tape.New()
		tp.Watch(xs, h0)
		out := control.While(func(v []T) T { return ops.Lt(v[0], steps) },
			func(v []T) []T {
				x := ops.Reshape(ops.Gather(xs, v[0], 0), 1, 4)
				h := ops.Tanh(ops.Add(ops.Add(ops.MatMul(v[1], w.Value()), x), b.Value()))
				return []T{ops.Add(v[0], tensor.Scalar(int64(1))), h, ops.Add(v[2], ops.Sum(ops.Mul(h, h)))}
			}, []T{tensor.Scalar(int64(0)), h0, tensor.Scalar(0.0)})
		loss := ops.Add(out[2], ops.Sum(out[1]))
		g := tp.Gradient(loss, w.Value(), b.Value(), xs, h0)
		return append([]T{loss}, g...)
	}
	xs := tensor.RandNormal(rng, tensor.Float64, 6, 4)
	h0 := tensor.RandNormal(rng, tensor.Float64, 1, 4)
	var calls [][]T
	for _, n := range []int64{3, 6, 0, 1, 5} {
		calls = append(calls, []T{xs, h0, tensor.Scalar(n)})
	}
	checkTracedGrad(t, "rnn", fn, calls)
}

// MaxIterations, a loop value that is an integer, a body that passes one
// value through unchanged, and a result that is not used by the loss.
func TestTracedWhileGradientShapes(t *testing.T) {
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0], a[1])
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(v[1]), tensor.Scalar(float32(50))) },
			func(v []T) []T {
				return []T{v[0], ops.Mul(v[1], ops.Add(v[0], tensor.Scalar(float32(1)))), ops.Add(v[2], tensor.Scalar(int32(3)))}
			}, []T{a[0], a[1], tensor.Scalar(int32(0))}, control.WhileOptions{MaxIterations: 4})
		g := tp.Gradient(ops.Sum(out[1]), a[0], a[1])
		return []T{out[1], ops.Cast(out[2], tensor.Float32), g[0], g[1]}
	}
	checkTracedGrad(t, "shapes", fn, [][]T{
		{f32(0.5, 1), f32(1, 2)},
		{f32(2, 0.1), f32(3, -1)},
		{f32(0, 0), f32(60, 0)},
		{f32(0.01, 0.02), f32(0.5, 0.25)},
	})
}

// A loop inside the body (a fixed count) is traced with the outer loop:
// the inner one unrolled inside the outer frame, its gradient too.
func TestTracedWhileGradientNested(t *testing.T) {
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		out := control.While(func(v []T) T { return ops.Lt(v[1], tensor.Scalar(float32(3))) },
			func(v []T) []T {
				inner := control.Fori(0, 2, func(i T, u []T) []T { return []T{ops.Sin(ops.Mul(u[0], v[0]))} }, []T{v[0]})
				return []T{ops.Add(inner[0], v[0]), ops.Add(v[1], ops.Exp(v[0]))}
			}, []T{a[0], tensor.Scalar(float32(0))})
		return []T{out[0], tp.Gradient(out[0], a[0])[0]}
	}
	f := checkTracedGrad(t, "nested", fn, [][]T{{tensor.Scalar(float32(0.3))}, {tensor.Scalar(float32(-1))}, {tensor.Scalar(float32(2))}})
	t.Log(f.Graph(tensor.Scalar(float32(0))))
}

// Gradients through traced conds: a cond of the branches' gradients on the
// same predicate, right whichever branch each call takes.
func TestTracedCondGradient(t *testing.T) {
	w := tape.NewVariable("w", f32(0.5, -2))
	pos := func(x T) T { return ops.Gt(ops.Sum(x), tensor.Scalar(float32(0))) }
	cond := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		y := control.Cond(pos(a[0]),
			func() []T { return []T{ops.Mul(ops.Square(a[0]), w.Value()), a[0]} },
			func() []T { return []T{ops.Mul(a[0], tensor.Scalar(float32(3))), ops.Exp(a[0])} })
		g := tp.Gradient(ops.Add(ops.Sum(y[0]), ops.Sum(ops.Mul(y[1], y[1]))), a[0], w.Value())
		return []T{y[0], y[1], g[0], g[1]}
	}
	checkTracedGrad(t, "cond", cond, [][]T{{f32(1, 2)}, {f32(-1, -2)}, {f32(3, -1)}, {f32(-4, 0.5)}})
	// Case is a chain of conds: nested ones, each with its gradient.
	caseFn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		y := control.Case(ops.Cast(ops.Sum(a[0]), tensor.Int32),
			func() []T { return []T{ops.Tanh(a[0])} },
			func() []T { return []T{ops.Mul(a[0], w.Value())} },
			func() []T { return []T{ops.Sin(a[0])} })
		return []T{y[0], tp.Gradient(ops.Sum(y[0]), a[0])[0]}
	}
	checkTracedGrad(t, "case", caseFn, [][]T{{f32(0.25, 0.5)}, {f32(1, 0.5)}, {f32(2, 1)}, {f32(-3, 1)}, {f32(0.1, 0.2)}})
	// A cond in a loop of fixed trip count, which is traced unrolled.
	loop := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		y := control.Fori(0, 3, func(i T, v []T) []T {
			return control.Cond(pos(v[0]), func() []T { return []T{ops.Sub(v[0], w.Value())} },
				func() []T { return []T{ops.Mul(v[0], ops.Neg(v[0]))} })
		}, a)
		return []T{y[0], tp.Gradient(ops.Sum(y[0]), a[0], w.Value())[0]}
	}
	checkTracedGrad(t, "loop", loop, [][]T{{f32(1, 2)}, {f32(-1, 0.5)}, {f32(4, 3)}})
}

// Conds inside a While whose trip count varies, under a tape: each
// forward iteration pushes its predicate, and the values a branch's
// gradient reads are pushed only where the branch was taken and popped
// likewise (the pops wait on the popped predicate), nested conds included.
func TestTracedCondInWhileGradient(t *testing.T) {
	w := tape.NewVariable("w", f32(0.75, -0.5))
	pos := func(x T) T { return ops.Gt(ops.Sum(x), tensor.Scalar(float32(0))) }
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		y := control.While(func(v []T) T { return ops.Lt(v[1], tensor.Scalar(float32(6))) },
			func(v []T) []T {
				x := control.Cond(pos(v[0]),
					func() []T {
						return control.Cond(ops.Gt(ops.Sum(v[0]), tensor.Scalar(float32(1))),
							func() []T { return []T{ops.Tanh(ops.Mul(v[0], w.Value()))} },
							func() []T { return []T{ops.Exp(v[0])} })
					},
					func() []T { return []T{ops.Sub(ops.Sigmoid(v[0]), w.Value())} })
				return []T{x[0], ops.Add(v[1], ops.Exp(ops.Sum(v[0])))}
			}, []T{a[0], tensor.Scalar(float32(0))})
		g := tp.Gradient(ops.Sum(ops.Mul(y[0], y[0])), a[0], w.Value())
		return []T{y[0], y[1], g[0], g[1]}
	}
	f := checkTracedGrad(t, "cond in while", fn, [][]T{{f32(1, 2)}, {f32(-1, -2)}, {f32(0.5, -0.25)}, {f32(-3, 1)}, {f32(0.2, 0.3)}})
	g := f.Graph(f32(0, 0)).String()
	if !strings.Contains(g, "StackPop") || strings.Count(g, "= Merge(") < 6 {
		t.Errorf("want stacks and the conds' Merges in both loops:\n%s", g)
	}
}

// A Cond in a loop whose values no tape watches but whose body reads a
// watched weight (a training step's loop): tracing the body finds the
// Cond's gradient needed only inside it, and traces the loop again with
// its gradient (it failed, telling the caller to run eagerly).
func TestTracedCondInWhileGradientOfAWeight(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float32{0.5, -0.25, 0.75, 0.25}, 2, 2))
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(w.Value())
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), a[1]) },
			func(v []T) []T {
				h := ops.MatMul(v[0], w.Value())
				y := control.Cond(ops.Gt(ops.Sum(h), ops.ScalarLike(h, 0)),
					func() []T { return []T{ops.Mul(ops.Sin(h), ops.ScalarLike(h, 2))} },
					func() []T { return []T{ops.Sub(ops.Mul(h, h), v[0])} })
				return []T{ops.Add(y[0], v[0])}
			}, []T{a[0]}, control.WhileOptions{MaxIterations: 5})
		loss := ops.Sum(ops.Square(out[0]))
		return []T{loss, tp.Gradient(loss, w.Value())[0]}
	}
	x := tensor.FromSlice([]float32{0.5, 1, -0.5, 0.25}, 2, 2)
	checkTracedGrad(t, "cond in a while, a weight's gradient", fn, [][]T{{x, tensor.Scalar(float32(40))},
		{x, tensor.Scalar(float32(3))}, {x, tensor.Scalar(float32(1e9))}, {x, tensor.Scalar(float32(0.5))}})
}

// Nested While loops, both of varying trip count, under a tape: the inner
// loop's frames nest in the outer ones, its trip count per outer iteration
// is itself pushed, and its stacks fill and empty one outer iteration at a
// time.
func TestTracedNestedWhileGradient(t *testing.T) {
	w := tape.NewVariable("w", f32(1.25, 0.5))
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		small := func(limit float32) func(v []T) T {
			return func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[0])), tensor.Scalar(limit)) }
		}
		y := control.While(small(60), func(v []T) []T {
			inner := control.While(small(20), func(u []T) []T {
				return []T{ops.Add(ops.Mul(u[0], w.Value()), ops.Tanh(v[0]))}
			}, []T{ops.Mul(v[0], tensor.Scalar(float32(0.5)))})
			return []T{ops.Add(v[0], ops.Sqrt(ops.Abs(inner[0])))}
		}, a)
		g := tp.Gradient(ops.Sum(ops.Square(y[0])), a[0], w.Value())
		return []T{y[0], g[0], g[1]}
	}
	f := checkTracedGrad(t, "nested", fn, [][]T{{f32(1, 2)}, {f32(0.5, 0.25)}, {f32(30, 40)}, {f32(3, -1)}})
	g := f.Graph(f32(0, 0)).String()
	for _, frame := range []string{`"while1_grad"`, `"while2_grad"`} {
		if !strings.Contains(g, frame) {
			t.Errorf("no frame %s:\n%s", frame, g)
		}
	}
}

// Scan under a tape inside a traced function: one loop frame and its
// gradient frame, whatever the sequence length (which a signature leaves
// unknown); gradients for the weights, the initial carry and the sequence.
func TestTracedScanGradient(t *testing.T) {
	rng := tensor.NewRNG(5)
	w := tape.NewVariable("w", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 3, 3), tensor.Scalar(0.5)))
	fn := func(a []T) []T {
		xs, h0 := a[0], a[1]
		tp := tape.New()
		tp.Watch(xs, h0)
		carry, ys := control.Scan(func(c, x []T) ([]T, []T) {
			h := ops.Tanh(ops.Add(ops.MatMul(c[0], w.Value()), ops.Reshape(x[0], 1, 3)))
			return []T{h}, []T{ops.Sum(h)}
		}, []T{h0}, []T{xs})
		loss := ops.Add(ops.Sum(ops.Square(ys[0])), ops.Sum(carry[0]))
		g := tp.Gradient(loss, w.Value(), xs, h0)
		return append([]T{loss, ys[0]}, g...)
	}
	f := trace.NewFunctionWithSignature(fn, trace.InputSpec{DType: tensor.Float64, Shape: []int{-1, 3}},
		trace.InputSpec{DType: tensor.Float64, Shape: []int{1, 3}})
	h0 := tensor.RandNormal(rng, tensor.Float64, 1, 3)
	var calls [][]T
	for _, n := range []int{4, 7, 2, 9, 1} {
		calls = append(calls, []T{tensor.RandNormal(rng, tensor.Float64, n, 3), h0})
	}
	checkCalls(t, "scan", f, fn, calls, 1e-12)
	if f.Traces() != 3 {
		t.Errorf("%d traces, want 3", f.Traces())
	}
	if g := f.Graph(tensor.Zeros(tensor.Float64, 4, 3), h0).String(); !strings.Contains(g, "_grad") {
		t.Errorf("no gradient frame:\n%s", g)
	}
}
