package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Residual adds its input to its Block's output (a ResNet's or a
// transformer's skip connection) so that a Sequential can hold one:
// x -> x + Block(x), the block's output of x's shape. It is a
// Container: SetTraining and the traced steps reach the layers inside
// (its dropout, its batch normalisation's statistics).
type Residual struct{ Block Module }

// Forward computes x + Block(x).
func (r Residual) Forward(x *tensor.Tensor) *tensor.Tensor {
	mustArgs("Residual", arg{"the block", r.Block}, arg{"x", x})
	y := r.Block.Forward(x)
	if !y.Shape().Equal(x.Shape()) {
		panic(tensor.NewError("nn", "Residual", tensor.ErrShape, []*tensor.Tensor{x, y}, "", "the block maps %v to %v: a residual needs the input's shape back", x.Shape(), y.Shape()))
	}
	return ops.Add(x, y)
}

// Variables returns the block's.
func (r Residual) Variables() []*tape.Variable { return r.Block.Variables() }

// Modules returns the block (Container).
func (r Residual) Modules() []Module { return []Module{r.Block} }

// String describes the block.
func (r Residual) String() string { return fmt.Sprintf("Residual: %s", Describe(r.Block)) }
