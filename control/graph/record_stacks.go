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
// its gradient's pops replay at every iteration without the host.
//
// Where the loop's condition bounds its iterations (MaxIterations), the
// count cannot pass the capacity. Where it does not, the capacity is a
// guess (the depth the trace saw, Node.Depth, or what a run went to), and
// each push also marks a count past it (device.LimitCounter): the copy,
// clamped, stays inside the buffer, the stack's peak is kept and the
// recording's overflow flag set, so that the run's results are known to
// be wrong and the recording is made again with buffers that hold the
// peak (Recorded.Run).

// liveStack is a stack of one recording: its buffer [capacity, shape...],
// its position vector, and the element's shape.
//
// A stack whose capacity is a guess also has its node and its peak (an
// Int64 scalar: the deepest count past the capacity, 0 where none).
type liveStack struct {
	buf, at *tensor.Tensor
	shape   tensor.Shape
	node    *Node
	peak    *tensor.Tensor
}

// guessed reports whether Stack node n's depth is not known, the
// recording's capacity then a guess that a run checks.
func guessed(n *Node) bool { return n.Capacity <= 0 }

// capacity is how many values the recording's stack of node n holds: its
// known depth, else what lg.depths says (a run went that deep), else the
// depth the trace saw (at least 1).
func (lg *loopGraph) capacity(n *Node) int {
	if !guessed(n) {
		return n.Capacity
	}
	if c := lg.depths[n]; c > 0 {
		return c
	}
	return max(n.Depth, 1)
}

// newStack makes the stack of Stack node n on the graph's device and
// returns its handle (its position vector, zero); a stack of guessed
// capacity gets its peak, and the run its overflow flag (lg.over).
func (lg *loopGraph) newStack(n *Node) *tensor.Tensor {
	spec, dev := lg.stacks[n], lg.g.device()
	shape := append(tensor.Shape{lg.capacity(n)}, spec.Shape...)
	buf, err := tensor.Empty(dev, spec.DType, shape)
	if err != nil {
		panic(err)
	}
	at := tensor.FullOn(dev, tensor.Int64, 0, len(shape))
	s := &liveStack{buf: buf, at: at, shape: spec.Shape, node: n}
	if guessed(n) {
		s.peak = tensor.FullOn(dev, tensor.Int64, 0)
		if lg.over == nil {
			lg.over = tensor.FullOn(dev, tensor.Bool, 0)
		}
	}
	lg.live[at] = s
	return at
}

// push copies x onto the stack of handle h and counts it.
func (lg *loopGraph) push(h, x *tensor.Tensor) {
	s := lg.live[h]
	lg.copyAt(s, s.buf.Buffer(), x.Buffer(), append([]int{0}, tensor.Strides(x.Shape(), x.Layout())...), true)
	if s.peak == nil {
		s.count(1)
		return
	}
	err := s.at.Device().(device.LimitCounter).AddAtLimit(s.at.Buffer(), 1, int64(s.buf.Dim(0)), s.peak.Buffer(), lg.over.Buffer())
	if err != nil {
		panic(err)
	}
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

// guessedStacks returns the stacks of the last run whose capacity is a
// guess.
func (lg *loopGraph) guessedStacks() []*liveStack {
	var out []*liveStack
	for _, s := range lg.live {
		if s.peak != nil {
			out = append(out, s)
		}
	}
	return out
}
