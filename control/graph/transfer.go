package graph

import (
	"strconv"
	"sync"

	"github.com/eagerflow/eagerflow/tensor"
)

// Values that cross processes: an op node whose attributes are a Sender
// or a Receiver (package collective's Rendezvous.Send and Recv) moves a
// value to or from another process's graph through a rendezvous, as
// TensorFlow's Send and Recv do between partitions. The executor runs such
// a node whether its inputs are live or dead (a dead value is posted as a
// dead flag, so that the other side's Recv yields dead: a branch not
// taken there too), tags it with its frame iterations (so that a loop's
// iterations, which may overlap, meet their own values), and waits for a
// receive without holding up the nodes that can run meanwhile.

// Sender is the attributes of an op node that posts its input to another
// process.
type Sender interface {
	// SendTagged posts x, or the dead flag (x is nil then), under the
	// node's key and tag.
	SendTagged(tag string, x *tensor.Tensor, dead bool) error
}

// Receiver is the attributes of an op node whose output comes from
// another process.
type Receiver interface {
	// ReceiveTagged calls done once the value under the node's key and
	// tag has arrived (done must not block).
	ReceiveTagged(tag string, done func(t *tensor.Tensor, dead bool, err error))
}

// IterationTag names the iteration iters of the frames around a node
// (outermost first; none at the top level): "" at the top level, "/2"
// at iteration 2 of a loop, "/2/0" in the first iteration of a loop
// inside it. An eager call has the top level's tag.
func IterationTag(iters []int) string {
	var b []byte
	for _, it := range iters {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(it), 10)
	}
	return string(b)
}

// tagOf is the iteration tag of an instance at (f, iter).
func tagOf(f *frameInst, iter int) string {
	var iters []int
	for ; f.parent != nil; f, iter = f.parent, f.parentIter {
		iters = append(iters, iter)
	}
	for i, j := 0, len(iters)-1; i < j; i, j = i+1, j-1 {
		iters[i], iters[j] = iters[j], iters[i]
	}
	return IterationTag(iters)
}

// isTransfer reports whether op node n is a Sender or a Receiver.
func isTransfer(n *Node) bool {
	switch n.Attrs.(type) {
	case Sender, Receiver:
		return true
	}
	return false
}

// arrival is a receive that completed, waiting for the executor.
type arrival struct {
	k    instKey
	in   *instance
	t    *tensor.Tensor
	dead bool
	err  error
}

// mailbox collects the receives that complete on the rendezvous's
// goroutine for the executor's.
type mailbox struct {
	mu     sync.Mutex
	queue  []arrival
	signal chan struct{}
}

func (m *mailbox) put(a arrival) {
	m.mu.Lock()
	m.queue = append(m.queue, a)
	m.mu.Unlock()
	select {
	case m.signal <- struct{}{}:
	default:
	}
}

// take waits for completed receives and returns them.
func (m *mailbox) take() []arrival {
	for {
		m.mu.Lock()
		q := m.queue
		m.queue = nil
		m.mu.Unlock()
		if len(q) > 0 {
			return q
		}
		<-m.signal
	}
}

// transfer runs a Sender or Receiver node instance (dead or not) and
// reports whether n is one. A receive completes later (waitReceives).
func (e *executor) transfer(k instKey, in *instance, dead bool) bool {
	n := k.node
	switch a := n.Attrs.(type) {
	case Sender:
		var x *tensor.Tensor
		if !dead {
			x = in.inputs[0].t
		}
		if err := a.SendTagged(tagOf(k.frame, k.iter), x, dead); err != nil {
			panic(tensor.NewError("graph", n.Op.Name, err, nil, "", "%v: %v", n, err))
		}
		e.stats.runs++
		e.complete(k, in, nil, dead)
	case Receiver:
		if e.mail == nil {
			e.mail = &mailbox{signal: make(chan struct{}, 1)}
		}
		e.receiving++
		mail := e.mail
		a.ReceiveTagged(tagOf(k.frame, k.iter), func(t *tensor.Tensor, dead bool, err error) {
			mail.put(arrival{k: k, in: in, t: t, dead: dead, err: err})
		})
	default:
		return false
	}
	return true
}

// waitReceives waits for at least one pending receive and completes what
// arrived; it reports whether any receive was pending.
func (e *executor) waitReceives() bool {
	if e.receiving == 0 {
		return false
	}
	for _, a := range e.mail.take() {
		e.receiving--
		if a.err != nil {
			panic(tensor.NewError("graph", a.k.node.Op.Name, a.err, nil, "", "%v: %v", a.k.node, a.err))
		}
		e.stats.runs++
		v := e.fresh(a.t)
		v.dead = a.dead
		e.complete(a.k, a.in, []value{v}, a.dead)
	}
	return true
}
