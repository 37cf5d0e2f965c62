package collective

import (
	"fmt"
	"sync"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Single returns a communicator of one process (rank 0 of 1) that needs
// no engine: every collective returns a copy of its input on the host (a
// mean or a sum over one rank is the value itself), and Send to rank 0
// queues a copy that Recv from rank 0 with the same tag takes, in order.
// Code written for N ranks runs unchanged in one process with it, and it
// is the host side of an NCCL communicator on a machine without MPI. It
// checks its arguments as the engines do.
func Single() Comm {
	s := &single{queued: map[int][]*tensor.Tensor{}}
	s.ops = &Ops{Comm: s, Engine: (*singleEngine)(s)}
	return s
}

type single struct {
	ops    *Ops
	mu     sync.Mutex
	closed bool
	queued map[int][]*tensor.Tensor // by tag: sent, not yet received
}

func (s *single) Rank() int { return 0 }
func (s *single) Size() int { return 1 }

func (s *single) errorf(call, format string, args ...any) error {
	return fmt.Errorf("%w: single: %s: %s", ErrCollective, call, fmt.Sprintf(format, args...))
}

// copyOf checks t and returns a row-major copy of it on the host.
func (s *single) copyOf(call string, t *tensor.Tensor, reduce bool) (*tensor.Tensor, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return nil, s.errorf(call, "the communicator is closed")
	case t == nil:
		return nil, s.errorf(call, "nil tensor")
	case reduce && t.DType() == tensor.Bool:
		return nil, s.errorf(call, "bool tensors cannot be reduced; Cast them to a number first")
	}
	host, err := t.To(device.Host())
	if err != nil {
		return nil, s.errorf(call, "copying %v from %s: %v", t.Shape(), t.Device().Name(), err)
	}
	c := host.Contiguous()
	out := backend.MustEmptyHost(t.DType(), t.Shape())
	copy(out.HostBytes(), c.HostBytes())
	if c != t && c != host {
		c.Release()
	}
	if host != t {
		host.Release()
	}
	return out, nil
}

func (s *single) checkOp(call string, op Op, dt tensor.DType) error {
	switch {
	case op > Min:
		return s.errorf(call, "unknown op %v", op)
	case op == Mean && !dt.IsFloat():
		return s.errorf(call, "Mean of %v: a mean needs floats", dt)
	}
	return nil
}

func (s *single) reduced(call string, t *tensor.Tensor, op Op) (*tensor.Tensor, error) {
	if t != nil {
		if err := s.checkOp(call, op, t.DType()); err != nil {
			return nil, err
		}
	}
	return s.copyOf(call, t, true)
}

func (e *singleEngine) AllReduce(t *tensor.Tensor, op Op) (*tensor.Tensor, error) {
	s := (*single)(e)
	return s.reduced("AllReduce", t, op)
}

func (e *singleEngine) ReduceScatter(t *tensor.Tensor, op Op) (*tensor.Tensor, error) {
	s := (*single)(e)
	if t != nil && t.Rank() == 0 {
		return nil, s.errorf("ReduceScatter", "a scalar has no first dimension to scatter")
	}
	return s.reduced("ReduceScatter", t, op)
}

func (e *singleEngine) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	s := (*single)(e)
	if root != 0 {
		return nil, s.errorf("Broadcast", "root %d outside [0, 1)", root)
	}
	return s.copyOf("Broadcast", t, false)
}

func (e *singleEngine) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	s := (*single)(e)
	out, err := s.copyOf("AllGather", t, false)
	if err != nil {
		return nil, err
	}
	return reshaped(out, append(tensor.Shape{1}, t.Shape()...)), nil
}

// singleEngine is what communicates (copies) for Single's collective ops.
type singleEngine single

func (s *single) AllReduce(t *tensor.Tensor, op Op) (*tensor.Tensor, error) {
	return s.ops.AllReduce(t, op)
}
func (s *single) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	return s.ops.Broadcast(t, root)
}
func (s *single) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) { return s.ops.AllGather(t) }
func (s *single) ReduceScatter(t *tensor.Tensor, op Op) (*tensor.Tensor, error) {
	return s.ops.ReduceScatter(t, op)
}

func (s *single) Send(t *tensor.Tensor, to, tag int) error {
	if to != 0 || tag < 0 {
		return s.errorf("Send", "rank %d (of 1), tag %d", to, tag)
	}
	if err := CheckUntraced("single: Send", t); err != nil {
		return err
	}
	c, err := s.copyOf("Send", t, false)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.queued[tag] = append(s.queued[tag], c)
	s.mu.Unlock()
	return nil
}

func (s *single) Recv(like *tensor.Tensor, from, tag int) (*tensor.Tensor, error) {
	if from != 0 || tag < 0 || like == nil {
		return nil, s.errorf("Recv", "rank %d (of 1), tag %d, like %v", from, tag, tensor.Describe(like))
	}
	if err := CheckUntraced("single: Recv", like); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queued[tag]
	if len(q) == 0 {
		return nil, s.errorf("Recv", "nothing was sent with tag %d (a Recv would wait forever)", tag)
	}
	t := q[0]
	if t.DType() != like.DType() || t.NumElements() != like.NumElements() {
		return nil, s.errorf("Recv", "tag %d holds %v, the receiver expects %v", tag, tensor.Describe(t), tensor.Describe(like))
	}
	s.queued[tag] = q[1:]
	return reshaped(t, like.Shape().Clone()), nil
}

// reshaped is t, which the caller owns, as a tensor of shape.
func reshaped(t *tensor.Tensor, shape tensor.Shape) *tensor.Tensor {
	v := t.View(shape, nil)
	t.Release()
	return v
}

func (s *single) Barrier() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.errorf("Barrier", "the communicator is closed")
	}
	return nil
}

func (s *single) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
