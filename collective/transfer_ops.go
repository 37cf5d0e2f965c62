package collective

import (
	"fmt"
	"strings"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Send and Recv on a Rendezvous are ops (eager.Op, Ordered): called
// eagerly they post and wait at once; inside a traced function
// (control/trace) they are nodes of the graph, which the executor runs as
// TensorFlow runs Send and Recv between partitions (control/graph's
// Sender and Receiver): a send on a branch not taken posts a dead flag
// and the receive yields dead, each iteration of a loop has its own key,
// and a receive waits without holding up the rest of the graph. So a
// function whose ranks exchange values (a pipeline's stages, a model
// split across processes, each rank tracing its own part) is traced once
// per rank and runs from its graphs afterwards.

var sendOp, recvOp *eager.Op

type sendAttrs struct {
	r    *Rendezvous
	to   int
	name string
}

func (a sendAttrs) String() string { return fmt.Sprintf("to=%d name=%q", a.to, a.name) }

// SendTagged posts x under the op's name and tag (graph.Sender).
func (a sendAttrs) SendTagged(tag string, x *tensor.Tensor, dead bool) error {
	return a.r.Post(a.to, a.name+"#"+tag, x, dead)
}

type recvAttrs struct {
	r     *Rendezvous
	from  int
	name  string
	dtype tensor.DType
	shape tensor.Shape
	dev   device.Device
}

// Remote is true: the value comes from another process (control/trace
// refuses to keep it as a constant of a trace).
func (recvAttrs) Remote() bool { return true }

func (a recvAttrs) String() string {
	return fmt.Sprintf("from=%d name=%q %v%v", a.from, a.name, a.dtype, a.shape)
}

// ReceiveTagged takes the value under the op's name and tag
// (graph.Receiver), checked against the dtype and shape the receive
// expects and moved to its device.
func (a recvAttrs) ReceiveTagged(tag string, done func(t *tensor.Tensor, dead bool, err error)) {
	key := a.name + "#" + tag
	a.r.Await(a.from, key, func(t *tensor.Tensor, dead bool, err error) {
		if err == nil && !dead {
			t, err = a.accept(key, t)
		}
		done(t, dead, err)
	})
}

// accept checks a received value and moves it where the receive wants it.
func (a recvAttrs) accept(key string, t *tensor.Tensor) (*tensor.Tensor, error) {
	if t.DType() != a.dtype || !t.Shape().Equal(a.shape) {
		return nil, a.r.errorf("Recv %q from rank %d: got %v%v, expected %v%v", key, a.from, t.DType(), t.Shape(), a.dtype, a.shape)
	}
	if a.dev == nil || a.dev == device.Host() {
		return t, nil
	}
	moved, err := t.To(a.dev)
	t.Release()
	if err != nil {
		return nil, a.r.errorf("Recv %q: copying to %s: %v", key, a.dev.Name(), err)
	}
	return moved, nil
}

func init() {
	sendOp = eager.Register(&eager.Op{
		Name: "Send", Inputs: 1, DTypes: movable, AnyLayout: true, ViewOwns: true, Ordered: true, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			if _, ok := c.Attrs.(sendAttrs); !ok {
				c.Fail(tensor.ErrAttr, "needs a rendezvous (call Rendezvous.Send)")
			}
			return nil
		},
		View: func(c *eager.Call, _ []eager.Out) []*tensor.Tensor {
			if err := c.Attrs.(sendAttrs).SendTagged("", c.Inputs[0], false); err != nil {
				c.Fail(&engineError{err}, "%v", err)
			}
			return []*tensor.Tensor{}
		},
	})
	recvOp = eager.Register(&eager.Op{
		Name: "Recv", Inputs: 1, AnyLayout: true, ViewOwns: true, Ordered: true, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			a, ok := c.Attrs.(recvAttrs)
			if !ok {
				c.Fail(tensor.ErrAttr, "needs a rendezvous (call Rendezvous.Recv)")
			}
			return c.Out1(a.dtype, a.shape)
		},
		View: func(c *eager.Call, _ []eager.Out) []*tensor.Tensor {
			a := c.Attrs.(recvAttrs)
			a.dev = c.Inputs[0].Device() // where like is now (a graph node keeps its trace's)
			type result struct {
				t    *tensor.Tensor
				dead bool
				err  error
			}
			ch := make(chan result, 1)
			a.ReceiveTagged("", func(t *tensor.Tensor, dead bool, err error) { ch <- result{t, dead, err} })
			res := <-ch
			if res.err == nil && res.dead {
				res.err = a.r.errorf("Recv %q from rank %d: the value is dead (sent from a branch not taken), and an eager receive needs one", a.name, a.from)
			}
			if res.err != nil {
				c.Fail(&engineError{res.err}, "%v", res.err)
			}
			return []*tensor.Tensor{res.t}
		},
	})
}

// checkName refuses names the keys could confuse.
func (r *Rendezvous) checkName(call, name string) error {
	if name == "" || strings.Contains(name, "#") {
		return r.errorf("%s: name %q: want a non-empty name without '#'", call, name)
	}
	return nil
}

// Send sends x to rank to under name, as an op. Called eagerly it posts
// x and returns (the receiver need not be waiting); inside a traced
// function it is a node that posts on every call (a dead flag where it
// sits on a branch not taken), keyed by name and the iterations of the
// loops around it. Within one function a name names one edge: one Send
// per name and iteration, matched by one Recv on the receiving rank.
func (r *Rendezvous) Send(x *tensor.Tensor, to int, name string) error {
	if err := r.checkName("Send", name); err != nil {
		return err
	}
	if x == nil {
		return r.errorf("Send %q: nil tensor", name)
	}
	_, err := r.runOp(sendOp, sendAttrs{r: r, to: to, name: name}, x)
	return err
}

// Recv receives from rank from the value sent under name, which must have
// like's dtype and shape; it is on like's device. Called eagerly it waits
// for the value (at most the rendezvous's timeout); inside a traced
// function it is a node that receives on every call, yielding dead where
// the sender's Send sat on a branch not taken. Only like's dtype, shape
// and device are read; inside a traced function like must be a value of
// the trace (an argument, or computed from one: ops.ZerosLike of an
// argument), else the receive, like any op on captured tensors alone,
// runs once, while tracing.
func (r *Rendezvous) Recv(like *tensor.Tensor, from int, name string) (*tensor.Tensor, error) {
	if err := r.checkName("Recv", name); err != nil {
		return nil, err
	}
	if like == nil {
		return nil, r.errorf("Recv %q: nil like", name)
	}
	return r.runOp(recvOp, recvAttrs{r: r, from: from, name: name, dtype: like.DType(), shape: like.Shape().Clone(), dev: like.Device()}, like)
}

// runOp runs a Send or Recv op; the error is the rendezvous's as it
// wrote it, or the op's wrapping ErrCollective.
func (r *Rendezvous) runOp(op *eager.Op, attrs any, x *tensor.Tensor) (out *tensor.Tensor, err error) {
	err = tensor.Catch(func() {
		if outs := eager.Run(op, attrs, x); len(outs) > 0 {
			out = outs[0]
		}
	})
	return out, engineErr(err)
}
