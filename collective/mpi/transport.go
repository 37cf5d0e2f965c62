//go:build linux || darwin

package mpi

import (
	"runtime"
	"unsafe"

	"github.com/eagerflow/eagerflow/collective"
)

// Transport returns a collective.Transport over a duplicate of
// MPI_COMM_WORLD (its tags are its own): MPI_Isend, MPI_Irecv and
// MPI_Test, each under the Comm's lock like every other call, and none
// waiting. It is what a collective.Rendezvous runs on:
//
//	t, err := comm.Transport()   // every rank, at the same point: MPI_Comm_dup is collective
//	rdv, err := collective.NewRendezvous(t)
//	defer rdv.Close()            // before comm.Close
func (c *Comm) Transport() (collective.Transport, error) {
	var pin runtime.Pinner
	dup := new(uintptr)
	if err := c.run("Transport", 0, &pin, c.l.commDup, c.l.commWorld, ptr(&pin, dup)); err != nil {
		return nil, err
	}
	if err := c.now("Transport", c.l.commSetErrhandler, *dup, c.l.errorsReturn); err != nil {
		return nil, err
	}
	return &transport{c: c, comm: *dup, live: map[*request]bool{}}, nil
}

// now makes one MPI call that does not wait (a nonblocking start, a test)
// under the Comm's lock, without the watch on calls that may wait.
func (c *Comm) now(what string, fn uintptr, args ...uintptr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(what, fn, args...)
}

func (c *Comm) nowLocked(what string, fn uintptr, args ...uintptr) error {
	switch {
	case c.broken != nil:
		return c.broken
	case c.closed:
		return c.errorf(what, "the communicator is closed")
	}
	if code := call(fn, args...); code != 0 {
		return c.fail(what, code)
	}
	return nil
}

type transport struct {
	c      *Comm
	comm   uintptr // the duplicate communicator
	closed bool
	live   map[*request]bool // requests not yet complete, under c.mu
}

// request is a transfer in flight: its MPI_Request, and the buffer and
// handle pinned for MPI until it completes.
type request struct {
	t      *transport
	handle *uintptr // MPI_Request: a pointer in Open MPI, an int in MPICH
	flag   *int32
	pin    runtime.Pinner
	done   bool
}

func (t *transport) Rank() int { return t.c.rank }
func (t *transport) Size() int { return t.c.size }

// start posts a nonblocking send or receive of b with peer and tag.
func (t *transport) start(what string, fn uintptr, b []byte, peer, tag int) (collective.Request, error) {
	if peer < 0 || peer >= t.c.size || tag < 0 {
		return nil, t.c.errorf(what, "rank %d (of %d), tag %d", peer, t.c.size, tag)
	}
	r := &request{t: t, handle: new(uintptr), flag: new(int32)}
	h := ptr(&r.pin, r.handle)
	ptr(&r.pin, r.flag)
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.closed {
		r.pin.Unpin()
		return nil, t.c.errorf(what, "the transport is closed")
	}
	if err := t.c.nowLocked(what, fn, addr(&r.pin, b), uintptr(len(b)), t.c.l.byte, uintptr(peer), uintptr(tag), t.comm, h); err != nil {
		r.pin.Unpin()
		return nil, err
	}
	t.live[r] = true
	return r, nil
}

func (t *transport) Isend(b []byte, to, tag int) (collective.Request, error) {
	return t.start("MPI_Isend", t.c.l.isend, b, to, tag)
}

func (t *transport) Irecv(b []byte, from, tag int) (collective.Request, error) {
	return t.start("MPI_Irecv", t.c.l.irecv, b, from, tag)
}

// Test asks MPI_Test; a completed request lets go of its memory.
func (r *request) Test() (bool, error) {
	c := r.t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.done {
		return true, nil
	}
	*r.flag = 0
	if err := c.nowLocked("MPI_Test", c.l.test, uintptr(ptrOf(r.handle)), uintptr(ptrOf(r.flag)), c.l.statusIgnore); err != nil {
		return false, err
	}
	if *r.flag != 0 {
		r.done = true
		delete(r.t.live, r)
		r.pin.Unpin()
	}
	return r.done, nil
}

// Close cancels the requests still in flight (the posted receives of a
// rendezvous) and frees the duplicate communicator. A cancelled request's
// memory stays pinned: MPI may still touch it until it is freed.
func (t *transport) Close() error {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if c.closed || c.broken != nil {
		return nil // MPI is finalized or stuck: nothing to free
	}
	var first error
	for r := range t.live {
		for _, fn := range []uintptr{c.l.cancel, c.l.requestFree} {
			if err := c.nowLocked("MPI_Cancel", fn, uintptr(ptrOf(r.handle))); err != nil && first == nil {
				first = err
			}
		}
		c.kept = append(c.kept, &r.pin)
	}
	clear(t.live)
	comm := new(uintptr)
	*comm = t.comm
	var pin runtime.Pinner
	defer pin.Unpin()
	if err := c.nowLocked("MPI_Comm_free", c.l.commFree, ptr(&pin, comm)); err != nil && first == nil {
		first = err
	}
	return first
}

// ptrOf is p's address, for memory already pinned.
func ptrOf[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// Rendezvous returns a collective.Rendezvous on a new Transport: what a
// pipeline (nn.PipelineTrainStep) or a graph's cross-process Send and
// Recv meet through. Every rank calls it at the same point (the
// Transport's MPI_Comm_dup is collective), and closes it before the Comm.
func (c *Comm) Rendezvous() (*collective.Rendezvous, error) {
	t, err := c.Transport()
	if err != nil {
		return nil, err
	}
	return collective.NewRendezvous(t)
}
