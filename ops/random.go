package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Random draws whose place in the stream is a tensor: a traced function
// reads it as an argument, so that every call of its graph (and every
// replay of a device's recording of it) draws afresh, where a draw made
// in Go while tracing would be frozen into the graph.

// RngBernoulliAtAttrs are RngBernoulliAt's attributes: the stream's key
// (tensor.RNG.Key), the element of the starts vector and the blocks past
// it the draw begins at, the probability of a 1, and the result's dtype
// and shape.
type RngBernoulliAtAttrs struct {
	Key    [2]uint32
	Slot   int
	Offset uint64
	P      float64
	DType  tensor.DType
	Shape  tensor.Shape
}

func (a RngBernoulliAtAttrs) String() string {
	return fmt.Sprintf("key=%x slot=%d offset=%d p=%v %v%v", a.Key, a.Slot, a.Offset, a.P, a.DType, a.Shape)
}

var rngBernoulliAtOp = eager.Register(&eager.Op{
	Name: "RngBernoulliAt", Inputs: 1, DTypes: []tensor.DType{tensor.Int64},
	NonDifferentiable: true, // an integer position in, a draw out
	Infer: func(c *eager.Call) []eager.Out {
		a, starts := c.Attrs.(RngBernoulliAtAttrs), c.Inputs[0]
		if starts.Rank() != 1 {
			c.Fail(tensor.ErrShape, "starts must be a vector, got %v", starts.Shape())
		}
		if a.Slot < 0 || a.Slot >= starts.Dim(0) {
			c.Fail(tensor.ErrAttr, "slot %d is outside starts of %d elements", a.Slot, starts.Dim(0))
		}
		if !(a.P >= 0 && a.P <= 1) {
			c.Fail(tensor.ErrAttr, "probability %v is outside [0, 1]", a.P)
		}
		if !a.DType.Valid() {
			c.Fail(tensor.ErrDType, "invalid dtype %v", a.DType)
		}
		for _, d := range a.Shape {
			if d < 0 {
				c.Fail(tensor.ErrShape, "negative dimension in shape %v", a.Shape)
			}
		}
		if _, ok := tensor.ByteSize(a.DType, a.Shape); !ok {
			c.Fail(tensor.ErrShape, "shape %v has more elements than an int can count", a.Shape)
		}
		return c.Out1(a.DType, a.Shape.Clone())
	},
})

// RngBernoulliAt returns tensor.RandBernoulli's values (1 with
// probability p, else 0, of dtype dt and the given shape) drawn from block
// starts[slot] + offset of the stream of key (a tensor.RNG's Key), read
// where starts is (an Int64 vector on the op's device) when the op runs:
// the values tensor.RandBernoulliAt gives there. A traced function that
// takes starts as an argument draws anew at every call, bit for bit what
// tensor.RandBernoulli draws from an RNG whose Reserve returned the same
// block (nn's Dropout in a traced training step). No gradient. It panics
// with a *tensor.Error for starts of another dtype or rank, a slot outside
// it, p outside [0, 1] or a bad dtype or shape.
func RngBernoulliAt(starts *tensor.Tensor, slot int, offset uint64, key [2]uint32, dt tensor.DType, p float64, shape ...int) *tensor.Tensor {
	needInputs("RngBernoulliAt", starts)
	return eager.Run1(rngBernoulliAtOp, RngBernoulliAtAttrs{Key: key, Slot: slot, Offset: offset, P: p, DType: dt, Shape: tensor.Shape(shape).Clone()}, starts)
}

// DropoutAt is Dropout whose mask is drawn by RngBernoulliAt (slot and
// offset of starts, the stream of key): bit for bit Dropout's result where
// Dropout's RNG would have drawn its mask from that block, and the same
// gradient (the mask's product). It panics as Dropout and RngBernoulliAt
// do.
func DropoutAt(x *tensor.Tensor, rate float64, starts *tensor.Tensor, slot int, offset uint64, key [2]uint32) *tensor.Tensor {
	needInputs("DropoutAt", x, starts)
	defer asOp("DropoutAt")
	return dropWith("DropoutAt", x, rate, func(p float64) *tensor.Tensor {
		return RngBernoulliAt(starts, slot, offset, key, x.DType(), p, x.Shape()...)
	})
}
