package trace_test

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Second derivatives through loops inside a traced function, and tapes
// around traced calls whose graphs hold loops: every call equals the
// eager function.

func f64s(v ...float64) T { return tensor.FromSlice(v) }

// secondDerivative differentiates loss(x) twice with nested tapes made
// inside the function, returning loss, its gradient and the gradient of
// the gradient's sum.
func secondDerivative(loss func(x T) T) func(a []T) []T {
	return func(a []T) []T {
		x := a[0]
		outer := tape.New()
		outer.Watch(x)
		inner := tape.New()
		inner.Watch(x)
		y := loss(x)
		g := inner.Gradient(y, x)[0]
		g2 := outer.Gradient(ops.Sum(g), x)[0]
		return []T{y, g, g2}
	}
}

func TestTracedSecondDerivativesThroughLoops(t *testing.T) {
	three := func(v []T) T { return ops.Lt(v[1], ops.ScalarLike(v[1], 3)) }
	power := func(x T) T { // x^3 by a While
		out := control.While(three, func(v []T) []T { return []T{ops.Mul(v[0], x), ops.Add(v[1], ops.ScalarLike(v[1], 1))} },
			[]T{ops.OnesLike(x), ops.ScalarLike(x, 0)})
		return ops.Sum(out[0])
	}
	poly := func(x T) T { // a loop value times itself, through a Fori
		out := control.Fori(0, 3, func(_ T, v []T) []T { return []T{ops.Add(ops.Mul(v[0], v[0]), x)} }, []T{x})
		return ops.Sum(out[0])
	}
	tripsOnX := func(x T) T { // the trip count depends on x
		limit := ops.Mul(ops.Sum(x), ops.ScalarLike(x, 10))
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(v[0]), limit) },
			func(v []T) []T { return []T{ops.Add(ops.Mul(v[0], ops.ScalarLike(x, 1.5)), ops.Square(x))} }, []T{x})
		return ops.Sum(ops.Sin(out[0]))
	}
	// No iteration at the trace, some later: the second derivative's path
	// through the loop is not in the trace's eager record at all.
	zeroFirst := func(x T) T {
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(v[0]), ops.ScalarLike(x, 3)) },
			func(v []T) []T { return []T{ops.Add(ops.Mul(v[0], x), x)} }, []T{x}, control.WhileOptions{MaxIterations: 10})
		return ops.Sum(ops.Sin(out[0]))
	}
	// A loop in one branch of a Cond: the retrace with loops unrolled
	// decides the Cond too (a guard), where tracing it made a second
	// derivative that read the branch's values outside it: a call taking
	// the other branch failed ("a graph result is dead").
	loopInCond := func(x T) T {
		y := control.Cond(ops.Gt(ops.Sum(x), ops.ScalarLike(x, 0)),
			func() []T {
				return control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[0])), ops.ScalarLike(x, 3)) },
					func(v []T) []T { return []T{ops.Add(ops.Mul(v[0], x), ops.ScalarLike(x, 0.5))} },
					[]T{x}, control.WhileOptions{MaxIterations: 8})
			},
			func() []T { return []T{ops.Mul(ops.Sin(x), x)} })
		return ops.Sum(ops.Square(y[0]))
	}
	// A Case (nested Conds) on an index the data choose: the second
	// derivative of a traced Cond's gradient read its branches' values
	// outside them (a call taking another branch failed: "a graph result
	// is dead"); it is traced with the decisions guarded instead.
	caseOnX := func(x T) T {
		i := ops.ArgMax(x, 0)
		y := control.Case(i,
			func() []T { return []T{ops.Exp(x)} },
			func() []T { return []T{ops.Mul(ops.Square(x), ops.Sin(x))} },
			func() []T { return []T{ops.Tanh(ops.Mul(x, x))} })
		return ops.Sum(ops.Square(y[0]))
	}
	calls := [][]T{{f64s(0.5, 1.5)}, {f64s(0.7, 1.1)}, {f64s(1.3, 2.5)}, {f64s(0.2, 0.3)}, {f64s(0.5, 1.5)}}
	for name, loss := range map[string]func(T) T{"power": power, "poly": poly, "trips on x": tripsOnX, "zero trips first": zeroFirst,
		"loop in a cond": loopInCond, "case on x": caseOnX} {
		fn := secondDerivative(loss)
		f := trace.NewFunction(fn)
		c := calls
		switch name {
		case "zero trips first":
			c = [][]T{{f64s(2, 1.5)}, {f64s(0.5, 0.6)}, {f64s(0.2, 0.1)}, {f64s(2, 1.5)}}
		case "loop in a cond":
			c = [][]T{{f64s(0.5, 0.2)}, {f64s(-0.5, -0.2)}, {f64s(0.3, 0.1)}, {f64s(-1, 0.1)}}
		case "case on x":
			c = [][]T{{f64s(0.5, 0.2, 0.1)}, {f64s(0.1, 0.7, 0.3)}, {f64s(0.2, 0.1, 0.9)}, {f64s(0.9, 0.2, 0.1)}}
		}
		checkCalls(t, name, f, fn, c, 1e-9)
	}
}

// A Hessian-vector product of an RNN written with Scan, traced: the same
// as eager on every call.
func TestTracedScanHessianVectorProduct(t *testing.T) {
	rng := tensor.NewRNG(5)
	xs := tensor.RandUniform(rng, tensor.Float64, -1, 1, 6, 1, 3)
	fn := func(a []T) []T {
		w, v := a[0], a[1]
		outer := tape.New()
		outer.Watch(w)
		inner := tape.New()
		inner.Watch(w)
		h0 := tensor.Zeros(tensor.Float64, 1, 3)
		carry, ys := control.Scan(func(c, x []T) ([]T, []T) {
			h := ops.Tanh(ops.Add(ops.MatMul(c[0], w), x[0]))
			return []T{h}, []T{h}
		}, []T{h0}, []T{xs})
		loss := ops.Add(ops.Sum(ops.Square(carry[0])), ops.Mean(ys[0]))
		g := inner.Gradient(loss, w)[0]
		hvp := outer.Gradient(ops.Sum(ops.Mul(g, v)), w)[0]
		return []T{loss, g, hvp}
	}
	f := trace.NewFunction(fn)
	var calls [][]T
	for i := range 4 {
		calls = append(calls, []T{tensor.RandUniform(rng, tensor.Float64, -0.8, 0.8, 3, 3), tensor.RandUniform(rng, tensor.Float64, -1, 1, 3, 3)})
		if i == 3 {
			calls = append(calls, calls[0])
		}
	}
	checkCalls(t, "scan hvp", f, fn, calls, 1e-9)
}

// A tape around calls of a traced function whose graph holds loops (a
// Fori unrolled at the trace, a While frame inside it, a Cond) gives the
// eager gradients on every call, not only the tracing one.
func TestTapeAroundTracedLoops(t *testing.T) {
	thr := tensor.Scalar(4.0)
	cases := map[string]func(a []T) []T{
		"Fori": func(a []T) []T {
			out := control.Fori(0, 2, func(_ T, v []T) []T { return []T{ops.Tanh(ops.Mul(v[0], v[0]))} }, []T{a[0]})
			return []T{ops.Sum(out[0])}
		},
		"While inside Fori": func(a []T) []T {
			out := control.Fori(0, 2, func(_ T, v []T) []T {
				h := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Mul(v[0], v[0])), thr) },
					func(v []T) []T { return []T{ops.Mul(v[0], ops.ScalarLike(v[0], 1.5))} }, []T{v[0]})
				return []T{ops.Tanh(h[0])}
			}, []T{a[0]})
			return []T{ops.Sum(out[0])}
		},
		"Cond and Scan": func(a []T) []T {
			c := control.Cond(ops.Gt(ops.Sum(a[0]), ops.ScalarLike(a[0], 0)),
				func() []T { return []T{ops.Exp(a[0])} }, func() []T { return []T{ops.Square(a[0])} })
			carry, _ := control.Scan(func(c, x []T) ([]T, []T) { return []T{ops.Add(ops.Mul(c[0], x[0]), c[0])}, nil },
				[]T{ops.Sum(c[0])}, []T{a[0]})
			return []T{carry[0]}
		},
	}
	for name, fn := range cases {
		f := trace.NewFunction(fn)
		for call, x := range []T{f64s(0.3, -0.2, 0.5), f64s(0.9, 0.1, -0.4), f64s(-0.3, -0.2, -0.5), f64s(0.3, -0.2, 0.5)} {
			tp := tape.New()
			tp.Watch(x)
			got, err := f.Call(x)
			if err != nil {
				t.Fatalf("%s call %d: %v", name, call, err)
			}
			g := tp.Gradient(got[0], x)[0]
			ref := tape.New()
			ref.Watch(x)
			want := ref.Gradient(fn([]T{x})[0], x)[0]
			closeTo(t, fmt.Sprintf("%s call %d", name, call), g, want, 1e-12)
		}
	}
}

// x^n by a counter loop whose bound n is an argument, differentiated
// twice inside the traced function: a trace made where the loop takes no
// iteration, or one whose first derivative is then a constant, holds no
// second derivative in its eager record, yet later calls of the same
// shape take more iterations (issue 31: their second derivatives were 0).
func TestTracedSecondDerivativeOfACountedLoop(t *testing.T) {
	orZeros := func(g, x T) T {
		if g == nil {
			return ops.ZerosLike(x) // no path at all: the loop took no iteration
		}
		return g
	}
	fn := func(a []T) []T {
		x, n := a[0], a[1]
		outer := tape.New()
		outer.Watch(x)
		inner := tape.New()
		inner.Watch(x)
		out := control.While(func(v []T) T { return ops.Lt(v[0], n) },
			func(v []T) []T { return []T{ops.Add(v[0], ops.ScalarLike(v[0], 1)), ops.Mul(v[1], x)} },
			[]T{ops.ScalarLike(n, 0), ops.OnesLike(x)})
		d1 := orZeros(inner.Gradient(ops.Sum(out[1]), x)[0], x)
		d2 := orZeros(outer.Gradient(ops.Sum(d1), x)[0], x)
		return []T{out[1], d1, d2}
	}
	call := func(n int64, x ...float64) []T { return []T{f64s(x...), tensor.Scalar(n)} }
	for _, first := range []int64{0, 1, 2} {
		f := trace.NewFunction(fn)
		calls := [][]T{call(first, 0.7, 1.3, 0.9), call(5, 0.8, 1.1, 1.2), call(0, 1.5, 0.6, 1.0),
			call(3, 0.5, 1.4), call(7, 1.1, 0.9, 0.8), call(1, 1.2, 0.7, 1.3), call(2, 0.6, 1.2, 1.1, 0.9)}
		checkCalls(t, fmt.Sprintf("x^n traced at n=%d", first), f, fn, calls, 1e-9)
	}
	// The eager function itself against the formula n(n-1)x^(n-2).
	for _, n := range []int64{0, 1, 2, 5} {
		x := f64s(0.7, 1.3)
		want := ops.Mul(ops.ScalarLike(x, float64(n*(n-1))), ops.Pow(x, ops.ScalarLike(x, float64(n-2))))
		closeTo(t, fmt.Sprintf("eager second derivative of x^%d", n), fn([]T{x, tensor.Scalar(n)})[2], want, 1e-12)
	}
}
