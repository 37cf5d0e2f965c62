package collective

import (
	"fmt"
	"sync"
)

// Transport moves bytes between the ranks of a job without waiting for
// the other side: the ground a Rendezvous stands on. collective/mpi's
// Comm.Transport gives one over MPI (MPI_Isend, MPI_Irecv, MPI_Test on a
// communicator of its own); Loopback gives ranks within one process.
//
// Messages from one rank to another with the same tag arrive in the order
// they were sent (MPI's non-overtaking rule), and a receive takes exactly
// as many bytes as were sent.
type Transport interface {
	Rank() int
	Size() int
	// Isend starts sending b to rank to with tag; b must not change until
	// the request completes.
	Isend(b []byte, to, tag int) (Request, error)
	// Irecv starts receiving the next message from rank from with tag into
	// b, which must be its exact size.
	Irecv(b []byte, from, tag int) (Request, error)
	// Close ends this rank's use of the transport; requests in flight are
	// cancelled.
	Close() error
}

// Request is a transfer in flight.
type Request interface {
	// Test reports whether the transfer completed, and its error.
	Test() (bool, error)
}

// Loopback returns the transports of n ranks of one process, connected
// to each other in memory: for tests, and for a job of one process.
func Loopback(n int) []Transport {
	net := &loopNet{queues: map[loopKey]*loopQueue{}}
	out := make([]Transport, n)
	for r := range out {
		out[r] = &loopback{net: net, rank: r, size: n}
	}
	return out
}

type loopKey struct{ from, to, tag int }

// loopQueue is one (from, to, tag) channel: messages sent and not yet
// taken, and receives posted and not yet given one, both in order.
type loopQueue struct {
	sent   [][]byte
	posted []*loopRequest
}

type loopNet struct {
	mu     sync.Mutex
	queues map[loopKey]*loopQueue
}

type loopback struct {
	net        *loopNet
	rank, size int
	closed     bool
}

type loopRequest struct {
	net  *loopNet
	buf  []byte
	done bool
	err  error
}

func (r *loopRequest) Test() (bool, error) {
	r.net.mu.Lock()
	defer r.net.mu.Unlock()
	return r.done, r.err
}

func (l *loopback) Rank() int { return l.rank }
func (l *loopback) Size() int { return l.size }

func (l *loopback) check(call string, peer int) error {
	switch {
	case l.closed:
		return fmt.Errorf("%w: loopback: %s on rank %d: the transport is closed", ErrCollective, call, l.rank)
	case peer < 0 || peer >= l.size:
		return fmt.Errorf("%w: loopback: %s on rank %d: rank %d outside [0, %d)", ErrCollective, call, l.rank, peer, l.size)
	}
	return nil
}

func (l *loopback) queue(k loopKey) *loopQueue {
	q := l.net.queues[k]
	if q == nil {
		q = &loopQueue{}
		l.net.queues[k] = q
	}
	return q
}

// match hands sent messages to posted receives, in order.
func (q *loopQueue) match() {
	for len(q.sent) > 0 && len(q.posted) > 0 {
		msg, r := q.sent[0], q.posted[0]
		q.sent, q.posted = q.sent[1:], q.posted[1:]
		if len(msg) != len(r.buf) {
			r.err = fmt.Errorf("%w: loopback: a message of %d bytes arrived where %d were expected", ErrCollective, len(msg), len(r.buf))
		}
		copy(r.buf, msg)
		r.done = true
	}
}

func (l *loopback) Isend(b []byte, to, tag int) (Request, error) {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	if err := l.check("Isend", to); err != nil {
		return nil, err
	}
	q := l.queue(loopKey{l.rank, to, tag})
	q.sent = append(q.sent, append([]byte(nil), b...)) // buffered: done at once
	q.match()
	return &loopRequest{net: l.net, done: true}, nil
}

func (l *loopback) Irecv(b []byte, from, tag int) (Request, error) {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	if err := l.check("Irecv", from); err != nil {
		return nil, err
	}
	r := &loopRequest{net: l.net, buf: b}
	q := l.queue(loopKey{from, l.rank, tag})
	q.posted = append(q.posted, r)
	q.match()
	return r, nil
}

func (l *loopback) Close() error {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	l.closed = true
	for k, q := range l.net.queues {
		if k.to != l.rank {
			continue
		}
		for _, r := range q.posted {
			r.done, r.err = true, fmt.Errorf("%w: loopback: rank %d closed its transport", ErrCollective, l.rank)
		}
		q.posted = nil
	}
	return nil
}
