package nccl

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/tensor"
)

// operand is a tensor made ready for NCCL: row-major on the GPU, with
// its NCCL type and device address, and what to release after queueing.
type operand struct {
	t    *tensor.Tensor
	typ  cu.NCCLType
	ptr  cu.Ptr
	temp []*tensor.Tensor
}

func (o *operand) release() {
	for _, t := range o.temp {
		t.Release()
	}
}

// types maps dtypes to NCCL's (bool travels as bytes and is not reduced).
var types = map[tensor.DType]cu.NCCLType{
	tensor.Float32: cu.NCCLFloat32, tensor.Float64: cu.NCCLFloat64, tensor.Int32: cu.NCCLInt32,
	tensor.Int64: cu.NCCLInt64, tensor.Uint8: cu.NCCLUint8, tensor.Bool: cu.NCCLUint8,
	tensor.BFloat16: cu.NCCLBFloat16, tensor.Float16: cu.NCCLFloat16,
}

// TakesHalves is true: NCCL reduces bfloat16 and float16 as such (half
// the bytes of float32), each step in float32 and rounded back
// (collective.HalfEngine).
func (c *Comm) TakesHalves() bool { return true }

// check checks what a call is given (t, or the tensor its result is
// shaped like) and returns its NCCL type.
func (c *Comm) check(call string, t *tensor.Tensor, reduce bool) (cu.NCCLType, error) {
	if err := c.usable(call); err != nil { // before touching the GPU, which a stalled peer may hold
		return 0, err
	}
	if t == nil {
		return 0, c.errorf(call, "nil tensor")
	}
	typ, ok := types[t.DType()]
	switch {
	case !ok:
		return 0, c.errorf(call, "dtype %v", t.DType())
	case reduce && t.DType() == tensor.Bool:
		return 0, c.errorf(call, "bool tensors cannot be reduced; Cast them to a number first")
	}
	return typ, nil
}

// prepare checks t and returns it as an operand on the GPU.
func (c *Comm) prepare(call string, t *tensor.Tensor, reduce bool) (*operand, error) {
	typ, err := c.check(call, t, reduce)
	if err != nil {
		return nil, err
	}
	o := &operand{t: t, typ: typ}
	if t.Device() != c.gpu {
		moved, err := t.To(c.gpu)
		if err != nil {
			return nil, c.errorf(call, "copying %v from %s to %s: %v", t.Shape(), t.Device().Name(), c.gpu.Name(), err)
		}
		o.t = moved
		o.temp = append(o.temp, moved)
	}
	if !o.t.IsRowMajor() {
		rm := o.t.Contiguous()
		o.temp = append(o.temp, rm)
		o.t = rm
	}
	p, err := c.raw.Ptr(o.t.Buffer())
	if err != nil {
		o.release()
		return nil, c.errorf(call, "%v", err)
	}
	o.ptr = p
	return o, nil
}

// result allocates a tensor on the GPU for a collective's output.
func (c *Comm) result(call string, dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, cu.Ptr, error) {
	out, err := tensor.Empty(c.gpu, dt, shape)
	if err != nil {
		return nil, 0, c.errorf(call, "result %v%v: %v", dt, shape, err)
	}
	p, err := c.raw.Ptr(out.Buffer())
	if err != nil {
		out.Release()
		return nil, 0, c.errorf(call, "%v", err)
	}
	return out, p, nil
}

// reduction maps op for dtype dt (Mean is NCCL's average, on floats).
func (c *Comm) reduction(call string, op collective.Op, dt tensor.DType) (cu.NCCLOp, error) {
	switch op {
	case collective.Sum:
		return cu.NCCLSum, nil
	case collective.Mean:
		if !dt.IsFloat() {
			return 0, c.errorf(call, "Mean of %v: a mean needs floats", dt)
		}
		return cu.NCCLAvg, nil
	case collective.Max:
		return cu.NCCLMax, nil
	case collective.Min:
		return cu.NCCLMin, nil
	}
	return 0, c.errorf(call, "unknown op %v", op)
}

// reducing is prepare for a reduction with op.
func (c *Comm) reducing(call string, t *tensor.Tensor, op collective.Op) (*operand, cu.NCCLOp, error) {
	in, err := c.prepare(call, t, true)
	if err != nil {
		return nil, 0, err
	}
	nop, err := c.reduction(call, op, t.DType())
	if err != nil {
		in.release()
		return nil, 0, err
	}
	return in, nop, nil
}

// collect runs one collective from in (checked) to a new tensor of dt and
// shape.
func (c *Comm) collect(call string, in *operand, dt tensor.DType, shape tensor.Shape,
	fn func(nc cu.NCCLComm, send, recv cu.Ptr, s cu.Stream) error) (*tensor.Tensor, error) {
	defer in.release()
	out, recv, err := c.result(call, dt, shape)
	if err != nil {
		return nil, err
	}
	if out.NumElements() == 0 {
		return out, nil
	}
	if err := c.queue(call, func(nc cu.NCCLComm, s cu.Stream) error { return fn(nc, in.ptr, recv, s) }); err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}

// AllReduce combines t across every rank with op (Mean: NCCL's average);
// every rank gets the result, a new tensor on the GPU of t's dtype and
// shape.
func (c *Comm) AllReduce(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	return c.ops.AllReduce(t, op)
}

// Broadcast returns root's t on every rank, on the GPU (t gives the dtype
// and shape on the others, whose values are not read).
func (c *Comm) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	return c.ops.Broadcast(t, root)
}

// AllGather stacks every rank's t in rank order: [Size, t's shape...], on
// the GPU.
func (c *Comm) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	return c.ops.AllGather(t)
}

// ReduceScatter combines t across ranks with op and returns this rank's
// block along the first dimension, whose size must be a multiple of Size:
// [t.Dim(0)/Size, ...], on the GPU.
func (c *Comm) ReduceScatter(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	return c.ops.ReduceScatter(t, op)
}

// engine is what communicates for the Comm's collective ops
// (collective.Ops): NCCL's calls on the tensors as they are.
type engine Comm

func (e *engine) AllReduce(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	const call = "AllReduce"
	in, nop, err := c.reducing(call, t, op)
	if err != nil {
		return nil, err
	}
	n := t.NumElements()
	return c.collect(call, in, t.DType(), t.Shape(), func(nc cu.NCCLComm, send, recv cu.Ptr, s cu.Stream) error {
		return nc.AllReduce(send, recv, n, in.typ, nop, s)
	})
}

// AllReduceInPlace is AllReduce writing the result over t
// (collective.InPlace): t must be a row-major tensor on the GPU that
// nothing else reads or writes until the GPU has run the collective.
func (c *Comm) AllReduceInPlace(t *tensor.Tensor, op collective.Op) error {
	const call = "AllReduceInPlace"
	if t != nil && (t.Device() != c.gpu || !t.IsRowMajor()) {
		return c.errorf(call, "%s on %s: want a row-major tensor on %s", tensor.Describe(t), t.Device().Name(), c.gpu.Name())
	}
	if err := collective.CheckUntraced("nccl: "+call, t); err != nil {
		return err
	}
	in, nop, err := c.reducing(call, t, op)
	if err != nil {
		return err
	}
	defer in.release()
	if t.NumElements() == 0 {
		return nil
	}
	return c.queue(call, func(nc cu.NCCLComm, s cu.Stream) error {
		return nc.AllReduce(in.ptr, in.ptr, t.NumElements(), in.typ, nop, s)
	})
}

func (e *engine) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	const call = "Broadcast"
	if root < 0 || root >= c.size {
		return nil, c.errorf(call, "root %d outside [0, %d)", root, c.size)
	}
	typ, err := c.check(call, t, false)
	if err != nil {
		return nil, err
	}
	in := &operand{t: t, typ: typ}
	if c.rank == root {
		if in, err = c.prepare(call, t, false); err != nil {
			return nil, err
		}
	}
	n := t.NumElements()
	return c.collect(call, in, t.DType(), t.Shape(), func(nc cu.NCCLComm, send, recv cu.Ptr, s cu.Stream) error {
		if c.rank != root {
			send = recv // not read off the root
		}
		return nc.Broadcast(send, recv, n, in.typ, root, s)
	})
}

func (e *engine) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	const call = "AllGather"
	in, err := c.prepare(call, t, false)
	if err != nil {
		return nil, err
	}
	n := t.NumElements()
	return c.collect(call, in, t.DType(), append(tensor.Shape{c.size}, t.Shape()...), func(nc cu.NCCLComm, send, recv cu.Ptr, s cu.Stream) error {
		return nc.AllGather(send, recv, n, in.typ, s)
	})
}

func (e *engine) ReduceScatter(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	const call = "ReduceScatter"
	if t == nil || t.Rank() == 0 || t.Dim(0)%c.size != 0 {
		return nil, c.errorf(call, "the first dimension of %v must be a multiple of the size %d", tensor.Describe(t), c.size)
	}
	in, nop, err := c.reducing(call, t, op)
	if err != nil {
		return nil, err
	}
	shape := t.Shape().Clone()
	shape[0] /= c.size
	n := t.NumElements() / c.size
	return c.collect(call, in, t.DType(), shape, func(nc cu.NCCLComm, send, recv cu.Ptr, s cu.Stream) error {
		return nc.ReduceScatter(send, recv, n, in.typ, nop, s)
	})
}

// peer checks the other end of a Send or Recv.
func (c *Comm) peer(call string, r, tag int) error {
	switch {
	case r < 0 || r >= c.size || tag < 0:
		return c.errorf(call, "rank %d (of %d), tag %d", r, c.size, tag)
	case r == c.rank:
		return c.errorf(call, "rank %d is this rank: NCCL cannot send to itself outside a group; copy the tensor instead", r)
	}
	return nil
}

// Send queues t for rank to. NCCL has no tags (tag must be at least 0 and
// is not matched): the receiver's Recvs from this rank take what its
// Sends give, in order.
func (c *Comm) Send(t *tensor.Tensor, to, tag int) error {
	const call = "Send"
	if err := c.peer(call, to, tag); err != nil {
		return err
	}
	if err := collective.CheckUntraced("nccl: "+call, t); err != nil {
		return err
	}
	in, err := c.prepare(call, t, false)
	if err != nil {
		return err
	}
	defer in.release()
	if t.NumElements() == 0 {
		return nil
	}
	return c.queue(call, func(nc cu.NCCLComm, s cu.Stream) error {
		return nc.Send(in.ptr, t.NumElements(), in.typ, to, s)
	})
}

// Recv receives from rank from a tensor shaped like like, on the GPU.
func (c *Comm) Recv(like *tensor.Tensor, from, tag int) (*tensor.Tensor, error) {
	const call = "Recv"
	if err := c.peer(call, from, tag); err != nil {
		return nil, err
	}
	if err := collective.CheckUntraced("nccl: "+call, like); err != nil {
		return nil, err
	}
	typ, err := c.check(call, like, false)
	if err != nil {
		return nil, err
	}
	n := like.NumElements()
	return c.collect(call, &operand{typ: typ}, like.DType(), like.Shape().Clone(), func(nc cu.NCCLComm, _, recv cu.Ptr, s cu.Stream) error {
		return nc.Recv(recv, n, typ, from, s)
	})
}
