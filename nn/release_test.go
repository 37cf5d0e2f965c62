package nn

import (
	"errors"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// keeper is a layer that keeps its input (as a layer must not): the test
// reads it afterwards to see whether Sequential released it.
type keeper struct{ seen *tensor.Tensor }

func (k *keeper) Forward(x *tensor.Tensor) *tensor.Tensor { k.seen = x; return ops.Neg(x) }
func (k *keeper) Variables() []*tape.Variable             { return nil }

func TestSequentialReleasesIntermediatesUnobserved(t *testing.T) {
	rng := tensor.NewRNG(1)
	first, second := &keeper{}, &keeper{}
	model := NewSequential(first, NewDense("d", rng, 3, 3, DenseOpts{Activation: ops.Relu}), second, Flatten{})
	x := tensor.RandNormal(rng, tensor.Float32, 2, 3)
	out := model.Forward(x)
	if err := tensor.Catch(func() { ops.Sum(x) }); err != nil {
		t.Fatalf("the model's input was touched: %v", err)
	}
	if err := tensor.Catch(func() { ops.Sum(out) }); err != nil {
		t.Fatalf("the output is unreadable: %v", err)
	}
	if err := tensor.Catch(func() { ops.Sum(second.seen) }); !errors.Is(err, tensor.ErrReleased) {
		t.Errorf("an intermediate between layers was not released: %v", err)
	}
	// The last layer (Flatten) returns a view of second's output: the view
	// keeps the buffer alive through the release.
	want := tensor.ToSlice[float32](ops.Neg(model.Layers[1].Forward(ops.Neg(x))))
	if got := tensor.ToSlice[float32](out); !slices.Equal(got, want) {
		t.Errorf("output %v, want %v", got, want)
	}

	tp := tape.New() // observed: nothing is released, the gradient needs it all
	defer tp.Stop()
	tp.Watch(x)
	y := ops.Sum(model.Forward(x))
	if err := tensor.Catch(func() { ops.Sum(second.seen) }); err != nil {
		t.Errorf("an intermediate was released under a tape: %v", err)
	}
	if g := tp.Gradient(y, x)[0]; !g.Shape().Equal(x.Shape()) {
		t.Errorf("gradient shape %v", g.Shape())
	}
}
