package graph

import (
	"errors"
	"testing"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // the ops' kernels
	"github.com/eagerflow/eagerflow/eager"
	_ "github.com/eagerflow/eagerflow/ops" // the ops the graphs run
	"github.com/eagerflow/eagerflow/tensor"
)

func opNamed(t *testing.T, name string) *eager.Op {
	t.Helper()
	op := eager.Lookup(name)
	if op == nil {
		t.Fatalf("no op %q", name)
	}
	return op
}

// graphBuilder wraps a Graph with the ops these tests use.
type graphBuilder struct {
	*Graph
	t *testing.T
}

func (b graphBuilder) op(name string, in ...Output) Output {
	return b.Apply(opNamed(b.t, name), nil, 1, in...).Out(0)
}

func (b graphBuilder) i64(v int64) Output { return b.Constant(tensor.Scalar(v)) }

// while builds a loop the way the tracer does: per loop value an Enter,
// a Merge, a Switch on the predicate, NextIteration for the body's result
// and an Exit; invariants enter as constants.
func (b graphBuilder) while(frame string, init, invariants []Output,
	cond func(vars, inv []Output) Output, body func(vars, inv []Output) []Output) []Output {
	return b.whileP(frame, 10, init, invariants, cond, body)
}

// whileP is while with parallel as the frame's ParallelIterations.
func (b graphBuilder) whileP(frame string, parallel int, init, invariants []Output,
	cond func(vars, inv []Output) Output, body func(vars, inv []Output) []Output) []Output {
	merges := make([]*Node, len(init))
	vars := make([]Output, len(init))
	for i, x := range init {
		merges[i] = b.Merge(b.Enter(x, frame, false, parallel))
		vars[i] = merges[i].Out(0)
	}
	inv := make([]Output, len(invariants))
	for i, x := range invariants {
		inv[i] = b.Enter(x, frame, true, parallel)
	}
	pred := cond(vars, inv)
	inside, exits := make([]Output, len(init)), make([]Output, len(init))
	for i, v := range vars {
		sw := b.Switch(v, pred)
		inside[i], exits[i] = sw.Out(1), b.Exit(sw.Out(0))
	}
	for i, next := range body(inside, inv) {
		b.SetBackEdge(merges[i], b.NextIteration(next))
	}
	return exits
}

// sumBelow builds a loop whose exits are (n, sum of i for i < n).
func (b graphBuilder) sumBelow(frame string, n Output) []Output {
	return b.while(frame, []Output{b.i64(0), b.i64(0)}, []Output{n},
		func(v, inv []Output) Output { return b.op("Lt", v[0], inv[0]) },
		func(v, inv []Output) []Output { return []Output{b.op("Add", v[0], b.i64(1)), b.op("Add", v[1], v[0])} })
}

// nestedLoops builds "for i < n: for j < i: acc++" (acc = n(n-1)/2) in
// frames "outer" and "inner"; its exits are (i, acc).
func (b graphBuilder) nestedLoops(n Output) []Output {
	return b.while("outer", []Output{b.i64(0), b.i64(0)}, []Output{n},
		func(v, inv []Output) Output { return b.op("Lt", v[0], inv[0]) },
		func(v, inv []Output) []Output {
			inner := b.while("inner", []Output{b.op("Mul", v[0], b.i64(0)), v[1]}, []Output{v[0]},
				func(w, jinv []Output) Output { return b.op("Lt", w[0], jinv[0]) },
				func(w, jinv []Output) []Output {
					return []Output{b.op("Add", w[0], b.i64(1)), b.op("Add", w[1], b.i64(1))}
				})
			return []Output{b.op("Add", v[0], b.i64(1)), inner[1]}
		})
}

func ints(t *testing.T, xs []*tensor.Tensor) []int64 {
	t.Helper()
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = x.Item().(int64)
	}
	return out
}

func TestCondRunsOnlyTheTakenBranch(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	x, p := b.Input("x"), b.Input("pred")
	sw := b.Switch(x, p)
	m := b.Merge(b.op("Mul", sw.Out(0), b.i64(2)), b.op("Add", sw.Out(1), b.i64(1)))
	b.Result = []Output{m.Out(0), m.Out(1)}
	for _, c := range []struct {
		pred bool
		want int64
		from int32
	}{{true, 8, 1}, {false, 14, 0}} {
		out, st, err := execute(b.Graph, ExecOptions{}, []*tensor.Tensor{tensor.Scalar(int64(7)), tensor.Scalar(c.pred)})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].Item().(int64) != c.want || out[1].Item().(int32) != c.from || st.runs != 1 {
			t.Errorf("pred %v: %v from input %v after %d ops, want %d from %d after 1", c.pred, out[0], out[1], st.runs, c.want, c.from)
		}
	}
}

func TestWhileLoops(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	n := b.Input("n")
	exits := b.sumBelow("loop", n)
	b.Result = exits
	for _, c := range []struct{ n, sum int64 }{{5, 10}, {1, 0}, {0, 0}} {
		out, err := Execute(b.Graph, tensor.Scalar(c.n))
		if err != nil {
			t.Fatal(err)
		}
		if got := ints(t, out); got[1] != c.sum || got[0] != c.n {
			t.Errorf("n=%d: got %v, want sum %d and i %d", c.n, got, c.sum, c.n)
		}
	}
}

func TestCondInsideALoopAndTwoLoops(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	n := b.Input("n")
	// acc += i when i is even, 10*i when odd: a Switch/Merge in the body.
	withCond := b.while("a", []Output{b.i64(0), b.i64(0)}, []Output{n},
		func(v, inv []Output) Output { return b.op("Lt", v[0], inv[0]) },
		func(v, inv []Output) []Output {
			even := b.op("Eq", b.op("Rem", v[0], b.i64(2)), b.i64(0))
			sw := b.Switch(v[0], even)
			m := b.Merge(b.op("Mul", sw.Out(0), b.i64(10)), sw.Out(1))
			return []Output{b.op("Add", v[0], b.i64(1)), b.op("Add", v[1], m.Out(0))}
		})
	other := b.sumBelow("b", b.op("Add", n, b.i64(1))) // an independent loop in the same graph
	b.Result = []Output{withCond[1], other[1]}
	out, err := Execute(b.Graph, tensor.Scalar(int64(5)))
	if err != nil {
		t.Fatal(err)
	}
	// 0 + 10 + 2 + 30 + 4 = 46; sum below 6 = 15.
	if got := ints(t, out); got[0] != 46 || got[1] != 15 {
		t.Errorf("got %v, want [46 15]", got)
	}
}

func TestNestedLoops(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	n := b.Input("n")
	b.Result = []Output{b.nestedLoops(n)[1]}
	for _, c := range []struct{ n, want int64 }{{4, 6}, {1, 0}, {6, 15}} {
		out, err := Execute(b.Graph, tensor.Scalar(c.n))
		if err != nil {
			t.Fatal(err)
		}
		if got := ints(t, out)[0]; got != c.want {
			t.Errorf("n=%d: %d, want %d", c.n, got, c.want)
		}
	}
}

// A loop on the branch not taken: its Exits come out dead once it can do
// nothing more, and the Merge after the cond takes the other branch.
func TestExitOfALoopOnADeadBranch(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	n, p := b.Input("n"), b.Input("pred")
	sw := b.Switch(n, p)
	loop := b.sumBelow("loop", sw.Out(1))
	m := b.Merge(b.op("Neg", sw.Out(0)), loop[1])
	b.Result = []Output{m.Out(0)}
	out, st, err := execute(b.Graph, ExecOptions{}, []*tensor.Tensor{tensor.Scalar(int64(4)), tensor.Scalar(false)})
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].Item().(int64); got != -4 || st.runs != 1 {
		t.Errorf("dead branch: %d after %d ops, want -4 after 1 (the loop must not run)", got, st.runs)
	}
	out, err = Execute(b.Graph, tensor.Scalar(int64(4)), tensor.Scalar(true))
	if err != nil || out[0].Item().(int64) != 6 {
		t.Errorf("live branch: %v %v, want 6", out, err)
	}
	// A result that is dead is an error, not a value.
	b.Result = []Output{loop[1]}
	if _, err := Execute(b.Graph, tensor.Scalar(int64(4)), tensor.Scalar(false)); !errors.Is(err, ErrDeadOutput) {
		t.Errorf("dead result: %v", err)
	}
	if _, err := Execute(b.Graph, tensor.Scalar(int64(4))); err == nil {
		t.Error("a missing argument was accepted")
	}
}

// A Merge's index output, read by an op, stays valid across executions
// (the index scalars are shared by every execution, never released).
func TestMergeIndexIsReusable(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	x, p := b.Input("x"), b.Input("pred")
	sw := b.Switch(x, p)
	m := b.Merge(sw.Out(0), sw.Out(1))
	b.Result = []Output{b.op("Add", m.Out(1), m.Out(1))}
	for i := range 6 {
		pred := i%2 == 1
		out, err := Execute(b.Graph, tensor.Scalar(int64(3)), tensor.Scalar(pred))
		if err != nil {
			t.Fatal(err)
		}
		want := int32(0)
		if pred {
			want = 2
		}
		if got := out[0].Item().(int32); got != want {
			t.Errorf("run %d: %d, want %d", i, got, want)
		}
	}
}
