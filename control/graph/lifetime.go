package graph

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/tensor"
)

// Buffer lifetimes in the executor: every tensor a run makes has a ref
// counting what holds it, and the run releases its buffer when the count
// falls to zero (unless it is pinned or a tape observes).

// ref is the holder count of one tensor of a run: the node instances
// holding it and not yet run, the stacks holding it and the NextIteration
// values waiting with it. At zero its tensor is released unless pinned (a
// graph result, a loop constant) or a tape observes. A counter travelling
// with the value, where a map keyed by the tensor cost two or three
// lookups per input (10% of a traced RNN gradient's time).
type ref struct {
	n      int32
	pinned bool
}

// refSlab hands out a run's refs from chunks kept between runs.
type refSlab struct {
	chunks [][]ref
	next   int // refs used: chunk next/refChunk, index next%refChunk
}

const refChunk = 256

func (s *refSlab) get() *ref {
	c, i := s.next/refChunk, s.next%refChunk
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, make([]ref, refChunk))
	}
	s.next++
	r := &s.chunks[c][i]
	*r = ref{}
	return r
}

// reset makes every ref free again (at the end of a run, which holds no
// value any more).
func (s *refSlab) reset() { s.next = 0 }

// pin marks v's tensor as never released by this run.
func pin(v value) {
	if v.ref != nil {
		v.ref.pinned = true
	}
}

// madeBy sets outs to the results of an op run on inputs: each a new
// tensor with a ref of its own, or, where the op handed back one of its
// inputs (or one tensor twice), that value's ref, so that the tensor is
// counted once however many values carry it.
func (e *executor) madeBy(outs []value, res []*tensor.Tensor, inputs []value) {
next:
	for i, t := range res {
		for _, v := range inputs {
			if v.t == t {
				outs[i] = value{t: t, ref: v.ref}
				continue next
			}
		}
		for _, o := range outs[:i] {
			if o.t == t {
				outs[i] = o
				continue next
			}
		}
		outs[i] = e.fresh(t)
	}
}

// fresh is the value of a tensor the run has just made or received, with
// a ref of its own (none for nil, which holds nothing).
func (e *executor) fresh(t *tensor.Tensor) value {
	v := value{t: t}
	if t != nil {
		v.ref = e.refs.get()
	}
	return v
}

// hold counts a live value handed to input i of a node instance.
func (e *executor) hold(in *instance, i int, v value) {
	if v.dead || v.ref == nil {
		return
	}
	if len(in.held) < len(in.inputs) {
		in.held = slices.Grow(in.held[:0], len(in.inputs))[:len(in.inputs)]
		clear(in.held)
	}
	in.held[i] = true
	v.ref.n++
}

// push is what a stack holds of t: t itself, held until popped, or its
// contents swapped out to host memory where the execution swaps (t is on
// the swapping device, row-major, and not pinned) and the copy could be
// queued.
func (e *executor) push(v value) stacked {
	t := v.t
	if e.swap != nil && v.ref != nil && !v.ref.pinned && t.Device() == e.g.device() && t.IsRowMajor() {
		if n, ok := tensor.ByteSize(t.DType(), t.Shape()); ok {
			if h, err := e.swap.SwapOut(t.Buffer(), n); err == nil {
				return stacked{swapped: h, dtype: t.DType(), shape: t.Shape()}
			}
		}
	}
	if v.ref != nil {
		v.ref.n++
	}
	return stacked{t: t, ref: v.ref}
}

// pop is the tensor of a stacked value, swapped back in where it was
// swapped out (held once, as a pushed tensor is, for the caller's drop);
// a failure to swap in fails the execution at node n.
func (e *executor) pop(n *Node, s stacked) value {
	if s.swapped == nil {
		return value{t: s.t, ref: s.ref}
	}
	buf, err := e.swap.SwapIn(s.swapped)
	if err != nil {
		panic(tensor.NewError("graph", "StackPop", err, nil, "", "%v: swapping a %v%v value back in: %v", n, s.dtype, s.shape, err))
	}
	t, err := backend.FromBuffer(buf, s.dtype, s.shape)
	if err != nil {
		buf.Device().Free(buf)
		panic(tensor.NewError("graph", "StackPop", err, nil, "", "%v: %v", n, err))
	}
	v := e.fresh(t)
	v.ref.n++
	return v
}

// drop undoes hold once the instance has run (its outputs, which may be
// the same tensor, already delivered and held) and releases the tensor's
// buffer when nothing holds it any more.
func (e *executor) drop(v value) {
	if v.dead || v.ref == nil {
		return
	}
	if v.ref.n--; v.ref.n > 0 {
		return
	}
	if e.release && !v.ref.pinned {
		v.t.Release()
	}
}
