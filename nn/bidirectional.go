package nn

import (
	"fmt"
	"sync"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Bidirectional runs two recurrent cells over a sequence, FromStart
// from its first step and FromEnd from its last (Keras's Bidirectional,
// PyTorch's bidirectional recurrent layers), each from a zero state:
// x [N, T, in] -> [N, T, h₁+h₂] with ReturnSequences, where step t holds
// FromStart's output after x[0..t] beside FromEnd's after x[T-1..t];
// else [N, h₁+h₂], each cell's last output (FromStart's after x[T-1],
// FromEnd's after x[0]: PyTorch's final states, h_n, side by side).
// Each runs as RNN runs a cell (control.Scan, the input's share of the
// gates in one product). The cells' variables need names of their own.
type Bidirectional struct {
	FromStart, FromEnd Cell
	ReturnSequences    bool

	once     sync.Once
	fwd, bwd *RNN // the runners, made at the first call
}

// Forward runs both cells and puts their outputs side by side.
func (b *Bidirectional) Forward(x *tensor.Tensor) *tensor.Tensor {
	mustArgs("Bidirectional", arg{"x", x}, arg{"FromStart", b.FromStart}, arg{"FromEnd", b.FromEnd})
	if x.Rank() != 3 {
		panic(tensor.NewError("nn", "Bidirectional", tensor.ErrShape, []*tensor.Tensor{x}, "", "x must be [N, T, in], got %v", x.Shape()))
	}
	if x.Dim(1) == 0 && !b.ReturnSequences {
		panic(tensor.NewError("nn", "Bidirectional", tensor.ErrShape, []*tensor.Tensor{x}, "", "a sequence of no steps has no last output (ReturnSequences gives [N, 0, hidden])"))
	}
	b.once.Do(func() {
		b.fwd, b.bwd = &RNN{Cell: b.FromStart, ReturnSequences: true}, &RNN{Cell: b.FromEnd, ReturnSequences: true}
	})
	reversed := func(s *tensor.Tensor) *tensor.Tensor { return ops.Index(s, ":", "::-1") }
	fwd := b.fwd.Forward(x)
	bwd := b.bwd.Forward(reversed(x)) // step t: after x[T-1..T-1-t]
	if !b.ReturnSequences {
		t := x.Dim(1)
		return ops.Concatenate(-1, ops.Index(fwd, ":", t-1), ops.Index(bwd, ":", t-1))
	}
	return ops.Concatenate(-1, fwd, reversed(bwd))
}

// Variables returns FromStart's variables, then FromEnd's.
func (b *Bidirectional) Variables() []*tape.Variable {
	return append(append([]*tape.Variable{}, b.FromStart.Variables()...), b.FromEnd.Variables()...)
}

// String describes both cells (Describe).
func (b *Bidirectional) String() string {
	seq := "last outputs"
	if b.ReturnSequences {
		seq = "sequences"
	}
	return fmt.Sprintf("Bidirectional: %s, %s, %s", describeCell(b.FromStart), describeCell(b.FromEnd), seq)
}
