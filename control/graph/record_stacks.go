package graph

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// A loop gradient's stacks in a recording (record_loops.go): a Stack is
// a buffer of Node.Capacity elements of its push's dtype and shape and a
// position vector [count, 0, ...] (Int64, one entry a dimension of the
// buffer) on the device, zeroed where the Stack runs; a push copies its
// value into the buffer at the count and adds one to it, a pop takes one
// off and copies the value there out, each at the position the device
// holds when it runs (device.PositionCopier), so that a loop's pushes and
// its gradient's pops replay at every iteration without the host. The
// count cannot pass the capacity: the loop's condition bounds its
// iterations (MaxIterations).

// liveStack is a stack of one recording: its buffer [capacity, shape...],
// its position vector, and the element's shape.
type liveStack struct {
	buf, at *tensor.Tensor
	shape   tensor.Shape
}

// newStack makes the stack of Stack node n on the graph's device and
// returns its handle (its position vector, zero).
func (lg *loopGraph) newStack(n *Node) *tensor.Tensor {
	spec, dev := lg.stacks[n], lg.g.device()
	shape := append(tensor.Shape{n.Capacity}, spec.Shape...)
	buf, err := tensor.Empty(dev, spec.DType, shape)
	if err != nil {
		panic(err)
	}
	at := tensor.FullOn(dev, tensor.Int64, 0, len(shape))
	lg.live[at] = &liveStack{buf: buf, at: at, shape: spec.Shape}
	return at
}

// push copies x onto the stack of handle h and counts it.
func (lg *loopGraph) push(h, x *tensor.Tensor) {
	s := lg.live[h]
	lg.copyAt(s, s.buf.Buffer(), x.Buffer(), append([]int{0}, tensor.Strides(x.Shape(), x.Layout())...), true)
	s.count(1)
}

// pop takes the top value off the stack of handle h.
func (lg *loopGraph) pop(h *tensor.Tensor) *tensor.Tensor {
	s := lg.live[h]
	s.count(-1)
	out, err := tensor.Empty(s.buf.Device(), s.buf.DType(), s.shape)
	if err != nil {
		panic(err)
	}
	lg.copyAt(s, out.Buffer(), s.buf.Buffer(), nil, false)
	return out
}

// copyAt copies one element of s between the buffer (at the count) and a
// value of the element's shape (strides xSt; row-major where nil): into
// the buffer (toBuf, from src) or out of it (into dst).
func (lg *loopGraph) copyAt(s *liveStack, dst, src device.Buffer, xSt []int, toBuf bool) {
	box := append(tensor.Shape{1}, s.shape...)
	bufSt := tensor.Strides(s.buf.Shape(), nil)
	if xSt == nil {
		xSt = append([]int{0}, tensor.Strides(s.shape, nil)...)
	}
	bounds := make([]int, len(box))
	bounds[0] = s.buf.Dim(0) - 1
	dSt, sSt := xSt, bufSt
	if toBuf {
		dSt, sSt = bufSt, xSt
	}
	err := lg.g.device().(device.PositionCopier).CopyAt(dst, dSt, src, sSt, box, s.buf.DType().Size(), s.at.Buffer(), toBuf, bounds, bufSt)
	if err != nil {
		panic(err)
	}
}

// count adds delta to the stack's count, on the device.
func (s *liveStack) count(delta int64) {
	if err := s.at.Device().(device.PositionCopier).AddAt(s.at.Buffer(), delta); err != nil {
		panic(err)
	}
}
