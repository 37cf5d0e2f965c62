package graph

import (
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// passThrough hands its input back as its output (a view that is the input
// itself) and remembers it, so that a test can see whether the run let it
// go.
var passThrough, passed = func() (*eager.Op, *[]*tensor.Tensor) {
	var seen []*tensor.Tensor
	op := eager.Register(&eager.Op{Name: "TestPassThrough", Inputs: 1, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		View: func(c *eager.Call, _ []eager.Out) []*tensor.Tensor {
			seen = append(seen, c.Inputs[0])
			return []*tensor.Tensor{c.Inputs[0]}
		}})
	return op, &seen
}()

// A tensor an op hands back as its own output is one value with two names:
// counted once, it stays until the last reader of either name has run, and
// is released then; the result is never released. (A Switch and Merge
// make the graph one the executor runs, not a straight-line plan.)
func TestHandedBackTensorLivesUntilItsLastReader(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	x, p := b.Input("x"), b.Input("pred")
	sw := b.Switch(x, p)
	m := b.Merge(sw.Out(0), sw.Out(1))
	y := b.op("Add", m.Out(0), m.Out(0))                       // made by the run
	z := b.Apply(passThrough, nil, 1, y).Out(0)                // y itself
	w := b.op("Add", z, b.Constant(tensor.Scalar(float32(1)))) // reads z, then z's hold ends
	b.Result = []Output{b.op("Add", w, y)}                     // reads y after that
	for run := range 3 {
		*passed = nil
		out, err := Execute(b.Graph, tensor.FromSlice([]float32{1, 2}), tensor.Scalar(run%2 == 0))
		if err != nil {
			t.Fatal(err)
		}
		if got := tensor.ToSlice[float32](out[0]); got[0] != 5 || got[1] != 9 {
			t.Fatalf("run %d: %v, want [5 9]", run, got)
		}
		if len(*passed) != 1 {
			t.Fatalf("run %d: the pass-through ran %d times", run, len(*passed))
		}
		if (*passed)[0].Buffer() != nil {
			t.Errorf("run %d: the intermediate y was not released after its last reader", run)
		}
	}
}

// An Identity (an op that Forwards) hands its input on without running
// when no tape observes: the same tensor comes back. A variable's is a
// copy, as eagerly, since the variable may change in place later.
func TestIdentityForwardsItsInput(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	x, p := b.Input("x"), b.Input("pred")
	sw := b.Switch(x, p)
	m := b.Merge(sw.Out(0), sw.Out(1))
	b.Result = []Output{b.op("Identity", m.Out(0))}
	plain := tensor.FromSlice([]float32{1, 2})
	out, err := Execute(b.Graph, plain, tensor.Scalar(true))
	if err != nil {
		t.Fatal(err)
	}
	if out[0] != plain {
		t.Errorf("Identity of a plain tensor gave %p, want its input %p", out[0], plain)
	}
	v := tensor.FromSlice([]float32{1, 2})
	plumb.Tensor.SetFlags(v, tensor.FlagVariable)
	out, err = Execute(b.Graph, v, tensor.Scalar(true))
	if err != nil {
		t.Fatal(err)
	}
	if out[0] == v || out[0].IsVariable() || tensor.ToSlice[float32](out[0])[1] != 2 {
		t.Errorf("Identity of a variable gave %v (variable %v), want a copy of [1 2]", out[0], out[0].IsVariable())
	}
}
