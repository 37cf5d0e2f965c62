package collective

import (
	"errors"
	"fmt"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The collectives on tensors as ops of the registry (eager.Op, Ordered):
// a Comm implementation runs AllReduce, Broadcast, AllGather and
// ReduceScatter through Ops, so that a tape records them and
// differentiates through them (Horovod's rule: the gradient of an
// all-reduce is the all-reduce of the gradients), and a trace records them
// as graph nodes that communicate on every call of the traced function.

// Engine is what communicates: a Comm's collectives on the tensors they
// are given, which nothing records. An implementation of Comm keeps its
// engine behind an Ops.
type Engine interface {
	AllReduce(t *tensor.Tensor, op Op) (*tensor.Tensor, error)
	Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error)
	AllGather(t *tensor.Tensor) (*tensor.Tensor, error)
	ReduceScatter(t *tensor.Tensor, op Op) (*tensor.Tensor, error)
}

// Ops runs an Engine's collectives as ops: an implementation of Comm makes
// one when it opens and answers its AllReduce, Broadcast, AllGather and
// ReduceScatter with Ops' methods. Comm is the communicator the gradient
// rules call (so that gradients of gradients are recorded too).
//
// What that gives every Comm: under a tape, the gradient of each input
// (AllReduce: the all-reduce of the output gradients, Mean's and Sum's
// alike; Max and Min: that sum where the input holds the extreme, shared
// between ties; Broadcast: their sum on the root, zeros elsewhere;
// AllGather: this rank's block of their sum; ReduceScatter: every rank's
// output gradient gathered), which every rank's backward pass must then
// run too, as its forward pass did. Inside a traced function
// (control/trace), a node that communicates on every call; every rank
// must call the traced function with the same shapes and take the same
// branches and trip counts, as it must eagerly, and the graph then runs
// the collectives in the same order on every rank.
type Ops struct {
	Comm   Comm
	Engine Engine
}

// collectiveAttrs are the collective ops' attributes.
type collectiveAttrs struct {
	ops   *Ops
	op    Op
	root  int
	bcast bool // a Broadcast: off the root, the result is the root's
}

func (a collectiveAttrs) String() string {
	return fmt.Sprintf("op=%v root=%d rank=%d size=%d", a.op, a.root, a.ops.Comm.Rank(), a.ops.Comm.Size())
}

// Remote reports whether the result comes from other processes alone (a
// broadcast off its root): control/trace then refuses to keep it as a
// constant of a trace.
func (a collectiveAttrs) Remote() bool {
	return a.bcast && a.ops.Comm.Rank() != a.root
}

// TargetDevice is where the results are: the communicator's device
// (graph passes and the conformance table ask it).
func (a collectiveAttrs) TargetDevice() device.Device { return DeviceOf(a.ops.Comm) }

// engineError carries an engine's error through the op's panic, so that
// the caller gets it as the engine wrote it.
type engineError struct{ err error }

func (e *engineError) Error() string { return e.err.Error() }
func (e *engineError) Unwrap() error { return e.err }

var allReduceOp, broadcastOp, allGatherOp, reduceScatterOp *eager.Op

// movable are the dtypes the collective ops take (the engines reduce all
// but Bool, and say so; bfloat16 and float16 reach an engine as float32
// unless it is a HalfEngine).
var movable = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool, tensor.BFloat16, tensor.Float16}

// declare registers a collective op whose view calls run on the engine.
func declare(name string, dtypes []tensor.DType, infer func(c *eager.Call, a collectiveAttrs) []eager.Out,
	run func(a collectiveAttrs, x *tensor.Tensor) (*tensor.Tensor, error), grad eager.GradFunc, reads eager.GradReads) *eager.Op {
	return eager.Register(&eager.Op{
		Name: name, Inputs: 1, DTypes: dtypes, AnyLayout: true, ViewOwns: true, Ordered: true,
		Infer: func(c *eager.Call) []eager.Out {
			a, ok := c.Attrs.(collectiveAttrs)
			if !ok || a.ops == nil {
				c.Fail(tensor.ErrAttr, "needs a communicator's Ops (call the Comm's method)")
			}
			return infer(c, a)
		},
		// The communication is the op's whole work, whichever device its
		// input is on: the engine returns a tensor of its own.
		View: func(c *eager.Call, specs []eager.Out) []*tensor.Tensor {
			out, err := run(c.Attrs.(collectiveAttrs), c.Inputs[0])
			if err != nil {
				c.Fail(&engineError{err}, "%v", err)
			}
			return []*tensor.Tensor{out}
		},
		Grad: grad, GradReads: reads,
	})
}

func init() {
	same := func(c *eager.Call, _ collectiveAttrs) []eager.Out {
		return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape())
	}
	allReduceOp = declare("AllReduce", movable, same,
		func(a collectiveAttrs, x *tensor.Tensor) (*tensor.Tensor, error) {
			return a.ops.Engine.AllReduce(x, a.op)
		},
		allReduceGrad, eager.ReadsAll)
	broadcastOp = declare("Broadcast", movable, same,
		func(a collectiveAttrs, x *tensor.Tensor) (*tensor.Tensor, error) {
			return a.ops.Engine.Broadcast(x, a.root)
		},
		broadcastGrad, eager.ReadsNothing)
	allGatherOp = declare("AllGather", movable,
		func(c *eager.Call, a collectiveAttrs) []eager.Out {
			return c.Out1(c.Inputs[0].DType(), append(tensor.Shape{a.ops.Comm.Size()}, c.Inputs[0].Shape()...))
		},
		func(a collectiveAttrs, x *tensor.Tensor) (*tensor.Tensor, error) { return a.ops.Engine.AllGather(x) },
		allGatherGrad, eager.ReadsNothing)
	reduceScatterOp = declare("ReduceScatter", movable,
		func(c *eager.Call, a collectiveAttrs) []eager.Out {
			x, size := c.Inputs[0], a.ops.Comm.Size()
			if x.Rank() == 0 || x.Dim(0)%size != 0 {
				c.Fail(ErrCollective, "the first dimension of %v must be a multiple of the size %d", tensor.Describe(x), size)
			}
			shape := x.Shape().Clone()
			shape[0] /= size
			return c.Out1(x.DType(), shape)
		},
		func(a collectiveAttrs, x *tensor.Tensor) (*tensor.Tensor, error) {
			return a.ops.Engine.ReduceScatter(x, a.op)
		},
		reduceScatterGrad, eager.ReadsAll)
}

// run runs one collective op on t; the error is the engine's as it wrote
// it, or the op's (a bad shape) wrapping ErrCollective.
//
// MPI has no 16-bit floats: a bfloat16 or float16 tensor travels, and is
// reduced, as float32 (both conversions exact), and the result is rounded
// to its dtype once, after the reduction; an engine that takes them
// (HalfEngine: NCCL) gets them as they are, half the bytes.
func (o *Ops) run(op *eager.Op, a collectiveAttrs, t *tensor.Tensor) (out *tensor.Tensor, err error) {
	a.ops = o
	native := false
	if h, ok := o.Comm.(HalfEngine); ok {
		native = h.TakesHalves()
	}
	err = tensor.Catch(func() {
		if dt := t.DType(); dt.IsHalf() && !native {
			out = ops.Cast(eager.Run1(op, a, ops.Cast(t, tensor.Float32)), dt)
			return
		}
		out = eager.Run1(op, a, t)
	})
	return out, engineErr(err)
}

// HalfEngine is a Comm whose collectives take bfloat16 and float16
// tensors as they are (NCCL: reduced in float32 a step at a time and
// rounded back at each, so that with more than two ranks a sum may differ
// in its last place from one rounded once), so that Ops does not widen
// them to float32 first.
type HalfEngine interface{ TakesHalves() bool }

// engineErr is the error of a collective op: the engine's as it wrote
// it, or the op's (a bad argument) wrapping ErrCollective.
func engineErr(err error) error {
	var ee *engineError
	if errors.As(err, &ee) {
		return ee.err
	}
	if err != nil && !errors.Is(err, ErrCollective) {
		err = fmt.Errorf("%w: %w", ErrCollective, err)
	}
	return err
}

// AllReduce is Comm.AllReduce as an op. (Arguments an engine refuses
// before it communicates, a nil tensor or a shape ReduceScatter cannot
// split, go to the engine, whose error names them.)
func (o *Ops) AllReduce(t *tensor.Tensor, op Op) (*tensor.Tensor, error) {
	if t == nil {
		return o.Engine.AllReduce(t, op)
	}
	return o.run(allReduceOp, collectiveAttrs{op: op}, t)
}

// Broadcast is Comm.Broadcast as an op.
func (o *Ops) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	if t == nil {
		return o.Engine.Broadcast(t, root)
	}
	return o.run(broadcastOp, collectiveAttrs{root: root, bcast: true}, t)
}

// AllGather is Comm.AllGather as an op.
func (o *Ops) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	if t == nil {
		return o.Engine.AllGather(t)
	}
	return o.run(allGatherOp, collectiveAttrs{}, t)
}

// ReduceScatter is Comm.ReduceScatter as an op.
func (o *Ops) ReduceScatter(t *tensor.Tensor, op Op) (*tensor.Tensor, error) {
	if t == nil || t.Rank() == 0 || t.Dim(0)%o.Comm.Size() != 0 {
		return o.Engine.ReduceScatter(t, op)
	}
	return o.run(reduceScatterOp, collectiveAttrs{op: op}, t)
}

// must is the check of a gradient rule's collectives: an error panics as
// the op's.
func must(g *eager.Grad) func(*tensor.Tensor, error) *tensor.Tensor {
	return func(t *tensor.Tensor, err error) *tensor.Tensor {
		if err != nil {
			g.Fail(err, "in the gradient: %v", err)
		}
		return t
	}
}

// onInput is dx moved to the device of the op's input i.
func onInput(g *eager.Grad, dx *tensor.Tensor, i int) *tensor.Tensor {
	return ops.ToDevice(dx, g.Inputs[i].Device())
}

// extremeShare is, for a Max or Min reduction whose result is y (on the
// communicator's device, shaped like x there), x's share of the gradient
// sum: 1/k where x holds the extreme that k ranks hold, 0 elsewhere.
func extremeShare(g *eager.Grad, c Comm, x, y *tensor.Tensor) *tensor.Tensor {
	x = ops.ToDevice(x, y.Device())
	holds := ops.Cast(ops.Eq(x, y), x.DType())
	return ops.Div(holds, must(g)(c.AllReduce(holds, Sum)))
}

func allReduceGrad(g *eager.Grad) []*tensor.Tensor {
	a, dy := g.Attrs.(collectiveAttrs), g.OutGrads[0]
	c := a.ops.Comm
	switch a.op {
	case Sum, Mean:
		return []*tensor.Tensor{onInput(g, must(g)(c.AllReduce(dy, a.op)), 0)}
	}
	sum := must(g)(c.AllReduce(dy, Sum))
	return []*tensor.Tensor{onInput(g, ops.Mul(sum, extremeShare(g, c, g.Inputs[0], g.Outputs[0])), 0)}
}

func broadcastGrad(g *eager.Grad) []*tensor.Tensor {
	a, dy := g.Attrs.(collectiveAttrs), g.OutGrads[0]
	sum := must(g)(a.ops.Comm.AllReduce(dy, Sum))
	if a.ops.Comm.Rank() != a.root {
		sum = ops.ZerosLike(sum) // this rank's value was not read
	}
	return []*tensor.Tensor{onInput(g, sum, 0)}
}

func allGatherGrad(g *eager.Grad) []*tensor.Tensor {
	a, dy := g.Attrs.(collectiveAttrs), g.OutGrads[0]
	mine := must(g)(a.ops.Comm.ReduceScatter(dy, Sum)) // [1, x's shape...]
	return []*tensor.Tensor{onInput(g, ops.Reshape(mine, g.Inputs[0].Shape()...), 0)}
}

func reduceScatterGrad(g *eager.Grad) []*tensor.Tensor {
	a, dy := g.Attrs.(collectiveAttrs), g.OutGrads[0]
	c, shape := a.ops.Comm, g.Inputs[0].Shape()
	// Every rank's block of the result took from this rank's block of x.
	all := ops.Reshape(must(g)(c.AllGather(dy)), shape...)
	switch a.op {
	case Sum:
	case Mean:
		all = ops.Mul(all, tensor.Scalar(1/float64(c.Size())))
	default:
		y := ops.Reshape(must(g)(c.AllGather(g.Outputs[0])), shape...)
		all = ops.Mul(all, extremeShare(g, c, g.Inputs[0], y))
	}
	return []*tensor.Tensor{onInput(g, all, 0)}
}
