package collective

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Rendezvous is where the values a graph sends between processes meet:
// TensorFlow's rendezvous, on a Transport. A sender posts a tensor, or a
// dead flag (the value of a branch not taken), under a key; the receiver
// asks for the key and gets it whenever it arrives, in whatever order the
// sender posted its keys. Values posted twice under one key are taken in
// order. The sender never waits for the receiver; a receiver waits at
// most the timeout (10 minutes; SetTimeout), then fails naming the key
// and the rank it waited for.
//
// On the wire each value is a header of headerBytes (the key, the dead
// flag, dtype and shape) followed, for a live non-empty value, by its
// bytes; a goroutine of the Rendezvous keeps a receive posted for every
// rank's next header and drives the transfers in flight.
type Rendezvous struct {
	t       Transport
	mu      sync.Mutex
	arrived map[rvKey][]arrival
	waiting map[rvKey][]*rvWaiter
	sends   []Request // in flight, with the buffers they read
	bufs    [][]byte
	holds   []*tensor.Tensor // per send in flight: a view keeping its bytes alive (nil: none)
	peers   []*peerState
	err     error // the transport failed, or Close: every later call fails with it
	timeout time.Duration
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

type rvKey struct {
	from int
	key  string
}

type arrival struct {
	t    *tensor.Tensor
	dead bool
}

type rvWaiter struct {
	from  int
	key   string
	since time.Time
	done  func(t *tensor.Tensor, dead bool, err error)
}

// peerState is the receiving side of one rank's messages: the posted
// header receive, and once a header came, the receive of its bytes.
type peerState struct {
	rank   int
	hdr    []byte
	hdrReq Request
	h      header
	body   []byte
	t      *tensor.Tensor // the value being received, body its bytes
	bodyRq Request
}

// The transport's tags: headers and the bytes that follow them.
const (
	headerTag = 1
	bodyTag   = 2
)

// DefaultRendezvousTimeout is how long a receive waits before it fails.
const DefaultRendezvousTimeout = 10 * time.Minute

// NewRendezvous starts a rendezvous on t (every rank makes one on its own
// transport). Close it when done.
func NewRendezvous(t Transport) (*Rendezvous, error) {
	if t == nil {
		return nil, errors.New("collective: NewRendezvous: the transport is nil")
	}
	r := &Rendezvous{t: t, arrived: map[rvKey][]arrival{}, waiting: map[rvKey][]*rvWaiter{},
		timeout: DefaultRendezvousTimeout, wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	for p := range t.Size() {
		ps := &peerState{rank: p, hdr: make([]byte, headerBytes)}
		req, err := t.Irecv(ps.hdr, p, headerTag)
		if err != nil {
			return nil, fmt.Errorf("%w: rendezvous: posting a receive from rank %d: %v", ErrCollective, p, err)
		}
		ps.hdrReq = req
		r.peers = append(r.peers, ps)
	}
	go r.progress()
	return r, nil
}

// Rank and Size are the transport's.
func (r *Rendezvous) Rank() int { return r.t.Rank() }
func (r *Rendezvous) Size() int { return r.t.Size() }

// SetTimeout sets how long a receive waits (0: DefaultRendezvousTimeout).
func (r *Rendezvous) SetTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultRendezvousTimeout
	}
	r.mu.Lock()
	r.timeout = d
	r.mu.Unlock()
}

func (r *Rendezvous) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: rendezvous on rank %d of %d: %s", ErrCollective, r.t.Rank(), r.t.Size(), fmt.Sprintf(format, args...))
}

// Post sends t (or, when dead, the dead flag alone: t may be nil) to
// rank to under key, and returns without waiting for the receiver. t is
// copied to the host first; its dtype and shape travel with it.
func (r *Rendezvous) Post(to int, key string, t *tensor.Tensor, dead bool) error {
	h := header{key: key, dead: dead}
	var body []byte
	var held *tensor.Tensor
	if !dead {
		if t == nil {
			return r.errorf("Post %q to rank %d: a nil tensor that is not dead", key, to)
		}
		host := t
		if t.Device() != device.Host() {
			moved, err := t.To(device.Host())
			if err != nil {
				return r.errorf("Post %q: copying %v from %s: %v", key, t.Shape(), t.Device().Name(), err)
			}
			host = moved
		}
		h.dtype, h.shape = t.DType(), t.Shape()
		// The bytes go out as they are, held by a view of their own
		// until the send completes (tensors do not change).
		held = host.Contiguous()
		if held == t { // the caller's: a handle of our own
			held = held.View(held.Shape(), nil)
		}
		body = held.HostBytes()
		h.bytes = len(body)
	}
	hdr, err := h.encode()
	if err != nil {
		return r.errorf("Post to rank %d: %v", to, err)
	}
	if to < 0 || to >= r.t.Size() {
		return r.errorf("Post %q: rank %d outside [0, %d)", key, to, r.t.Size())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	// The header and its bytes go out together: another Post to the same
	// rank must not come between them.
	for _, m := range []struct {
		b   []byte
		tag int
	}{{hdr, headerTag}, {body, bodyTag}} {
		if m.tag == bodyTag && len(body) == 0 {
			if held != nil {
				held.Release()
			}
			break
		}
		req, err := r.t.Isend(m.b, to, m.tag)
		if err != nil {
			r.err = r.errorf("Post %q to rank %d: %v", key, to, err)
			return r.err
		}
		var hold *tensor.Tensor
		if m.tag == bodyTag {
			hold, held = held, nil
		}
		r.sends, r.bufs, r.holds = append(r.sends, req), append(r.bufs, m.b), append(r.holds, hold)
	}
	r.nudge()
	return nil
}

// Await calls done with the value rank from posts under key, once it has
// arrived (at once if it has): the tensor, a new one on the host, or
// dead. done runs on the rendezvous's goroutine or the caller's, and must
// not block. An error (a failed transport, the timeout, Close) comes
// instead of a value.
func (r *Rendezvous) Await(from int, key string, done func(t *tensor.Tensor, dead bool, err error)) {
	if from < 0 || from >= r.t.Size() {
		done(nil, false, r.errorf("Await %q: rank %d outside [0, %d)", key, from, r.t.Size()))
		return
	}
	k := rvKey{from, key}
	r.mu.Lock()
	if q := r.arrived[k]; len(q) > 0 {
		a := q[0]
		r.pop(r.arrived, k)
		r.mu.Unlock()
		done(a.t, a.dead, nil)
		return
	}
	if err := r.err; err != nil {
		r.mu.Unlock()
		done(nil, false, err)
		return
	}
	r.waiting[k] = append(r.waiting[k], &rvWaiter{from: from, key: key, since: time.Now(), done: done})
	r.nudge()
	r.mu.Unlock()
}

// Receive waits for the value rank from posts under key.
func (r *Rendezvous) Receive(from int, key string) (*tensor.Tensor, bool, error) {
	type result struct {
		t    *tensor.Tensor
		dead bool
		err  error
	}
	ch := make(chan result, 1)
	r.Await(from, key, func(t *tensor.Tensor, dead bool, err error) { ch <- result{t, dead, err} })
	res := <-ch
	return res.t, res.dead, res.err
}

// pop drops the first entry of m[k].
func (r *Rendezvous) pop(m any, k rvKey) {
	switch m := m.(type) {
	case map[rvKey][]arrival:
		if m[k] = m[k][1:]; len(m[k]) == 0 {
			delete(m, k)
		}
	case map[rvKey][]*rvWaiter:
		if m[k] = m[k][1:]; len(m[k]) == 0 {
			delete(m, k)
		}
	}
}

// nudge wakes the progress goroutine (r.mu held or not).
func (r *Rendezvous) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Close stops the rendezvous and closes its transport; waiting receives
// fail.
func (r *Rendezvous) Close() error {
	r.mu.Lock()
	if r.err == nil {
		r.err = r.errorf("closed")
	}
	r.mu.Unlock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.stopped
	r.failAll(r.err)
	return r.t.Close()
}

// progress drives the transfers in flight until Close: it polls them,
// and while nothing moves, it yields the processor between polls for up
// to spinFor while a receiver waits (a sleep shorter than a millisecond
// takes a millisecond where the process has nothing else to run: Go's
// poller waits in whole milliseconds, and a rank bound to one core is
// such a process; the yield lets runnable goroutines go first), else
// sleeps from 5 µs up to 1 ms; a Post or Await wakes it at once.
func (r *Rendezvous) progress() {
	defer close(r.stopped)
	idle := time.Duration(0)
	last := time.Now() // the last time anything moved or was asked
	for {
		if r.poll() {
			idle, last = 0, time.Now()
			continue
		}
		r.mu.Lock()
		waiting := len(r.waiting) > 0
		r.mu.Unlock()
		if waiting && time.Since(last) < spinFor {
			select {
			case <-r.stop:
				return
			case <-r.wake:
				last = time.Now()
			default:
				runtime.Gosched()
			}
			continue
		}
		idle = min(max(2*idle, 5*time.Microsecond), time.Millisecond)
		timer := time.NewTimer(idle)
		select {
		case <-r.stop:
			timer.Stop()
			return
		case <-r.wake:
			idle, last = 0, time.Now()
		case <-timer.C:
		}
		timer.Stop()
	}
}

// spinFor is how long progress keeps polling, yielding in between, once
// nothing moves while a receiver waits, before it sleeps between polls.
const spinFor = 20 * time.Millisecond

// poll tests every transfer in flight once, delivers what arrived and
// fails receives past the timeout; it reports whether anything moved.
func (r *Rendezvous) poll() bool {
	var calls []func()
	r.mu.Lock()
	moved := false
	if r.err == nil {
		moved = r.pollLocked(&calls)
	}
	r.mu.Unlock()
	for _, c := range calls {
		c()
	}
	return moved
}

func (r *Rendezvous) pollLocked(calls *[]func()) bool {
	moved := false
	n := 0
	for i, req := range r.sends {
		done, err := req.Test()
		if err != nil {
			r.fail(r.errorf("a send failed: %v", err), calls)
			return true
		}
		if !done {
			r.sends[n], r.bufs[n], r.holds[n] = req, r.bufs[i], r.holds[i]
			n++
		} else if r.holds[i] != nil {
			r.holds[i].Release() // its bytes are sent
		}
	}
	moved = n < len(r.sends)
	clear(r.sends[n:])
	clear(r.bufs[n:])
	clear(r.holds[n:])
	r.sends, r.bufs, r.holds = r.sends[:n], r.bufs[:n], r.holds[:n]
	for _, p := range r.peers {
		for {
			got, err := r.step(p, calls)
			if err != nil {
				r.fail(err, calls)
				return true
			}
			if !got {
				break
			}
			moved = true
		}
	}
	now := time.Now()
	for k, ws := range r.waiting {
		for len(ws) > 0 && now.Sub(ws[0].since) > r.timeout {
			w := ws[0]
			ws = ws[1:]
			err := fmt.Errorf("%w: rank %d waited %v for %q from rank %d (not sent: the rank hangs, died, or posts under another key)",
				ErrTimeout, r.t.Rank(), r.timeout.Round(time.Millisecond), w.key, w.from)
			*calls = append(*calls, func() { w.done(nil, false, fmt.Errorf("%w: rendezvous: %w", ErrCollective, err)) })
			moved = true
		}
		if len(ws) == 0 {
			delete(r.waiting, k)
		} else {
			r.waiting[k] = ws
		}
	}
	return moved
}

// step advances p's receiving side by one completed transfer, if one
// completed; it reports whether one did.
func (r *Rendezvous) step(p *peerState, calls *[]func()) (bool, error) {
	if p.bodyRq == nil {
		done, err := p.hdrReq.Test()
		if err != nil {
			return false, r.errorf("receiving from rank %d: %v", p.rank, err)
		}
		if !done {
			return false, nil
		}
		h, err := decodeHeader(p.hdr)
		if err != nil {
			return false, r.errorf("a message from rank %d: %v", p.rank, err)
		}
		p.h = h
		if h.bytes > 0 {
			p.t = backend.MustEmptyHost(h.dtype, h.shape)
			p.body = p.t.HostBytes() // received in place: no copy after
			if p.bodyRq, err = r.t.Irecv(p.body, p.rank, bodyTag); err != nil {
				return false, r.errorf("receiving %q from rank %d: %v", h.key, p.rank, err)
			}
			return true, nil
		}
	} else {
		done, err := p.bodyRq.Test()
		if err != nil {
			return false, r.errorf("receiving %q from rank %d: %v", p.h.key, p.rank, err)
		}
		if !done {
			return false, nil
		}
	}
	// A whole value: hand it over, and post the next header's receive.
	a := arrival{dead: p.h.dead}
	if !p.h.dead {
		a.t = p.t
		if a.t == nil { // a value of no bytes
			a.t = backend.MustEmptyHost(p.h.dtype, p.h.shape)
		}
	}
	p.body, p.bodyRq, p.t = nil, nil, nil
	r.deliver(rvKey{p.rank, p.h.key}, a, calls)
	req, err := r.t.Irecv(p.hdr, p.rank, headerTag)
	if err != nil {
		return false, r.errorf("posting a receive from rank %d: %v", p.rank, err)
	}
	p.hdrReq = req
	return true, nil
}

func (r *Rendezvous) deliver(k rvKey, a arrival, calls *[]func()) {
	if ws := r.waiting[k]; len(ws) > 0 {
		w := ws[0]
		r.pop(r.waiting, k)
		*calls = append(*calls, func() { w.done(a.t, a.dead, nil) })
		return
	}
	r.arrived[k] = append(r.arrived[k], a)
}

// fail makes err the rendezvous's error and fails every waiting receive.
func (r *Rendezvous) fail(err error, calls *[]func()) {
	r.err = err
	for k, ws := range r.waiting {
		for _, w := range ws {
			*calls = append(*calls, func() { w.done(nil, false, err) })
		}
		delete(r.waiting, k)
	}
}

func (r *Rendezvous) failAll(err error) {
	var calls []func()
	r.mu.Lock()
	r.fail(err, &calls)
	r.mu.Unlock()
	for _, c := range calls {
		c()
	}
}

// header is what precedes a value on the wire.
type header struct {
	key   string
	dead  bool
	dtype tensor.DType
	shape tensor.Shape
	bytes int
}

// headerBytes is a header's size on the wire: a magic number, the dead
// flag, the dtype, the rank, the key's length, the body's length, up to
// maxRank dims and up to maxKey bytes of key.
const (
	headerBytes = 512
	maxRank     = 8
	headerFixed = 4 + 1 + 1 + 1 + 2 + 8 + 8*maxRank
	maxKey      = headerBytes - headerFixed
	magic       = 0x52564546 // "EFVR"
)

var errHeader = errors.New("not a rendezvous header")

func (h header) encode() ([]byte, error) {
	switch {
	case len(h.key) > maxKey:
		return nil, fmt.Errorf("key %.40q... is %d bytes, at most %d", h.key, len(h.key), maxKey)
	case len(h.shape) > maxRank:
		return nil, fmt.Errorf("%q: rank %d, at most %d", h.key, len(h.shape), maxRank)
	}
	b := make([]byte, headerBytes)
	binary.LittleEndian.PutUint32(b, magic)
	if h.dead {
		b[4] = 1
	}
	b[5], b[6] = byte(h.dtype), byte(len(h.shape))
	binary.LittleEndian.PutUint16(b[7:], uint16(len(h.key)))
	binary.LittleEndian.PutUint64(b[9:], uint64(h.bytes))
	for i, d := range h.shape {
		binary.LittleEndian.PutUint64(b[17+8*i:], uint64(d))
	}
	copy(b[headerFixed:], h.key)
	return b, nil
}

func decodeHeader(b []byte) (header, error) {
	if len(b) != headerBytes || binary.LittleEndian.Uint32(b) != magic || b[4] > 1 || int(b[6]) > maxRank {
		return header{}, errHeader
	}
	h := header{dead: b[4] == 1, dtype: tensor.DType(b[5]), bytes: int(binary.LittleEndian.Uint64(b[9:]))}
	n := int(binary.LittleEndian.Uint16(b[7:]))
	if n > maxKey {
		return header{}, errHeader
	}
	h.key = string(b[headerFixed : headerFixed+n])
	if !h.dead {
		if h.dtype == tensor.Invalid || int(h.dtype) >= tensor.NumDTypes {
			return header{}, fmt.Errorf("%w: %q has dtype %d", errHeader, h.key, b[5])
		}
		h.shape = make(tensor.Shape, b[6])
		for i := range h.shape {
			h.shape[i] = int(binary.LittleEndian.Uint64(b[17+8*i:]))
		}
		if size, ok := tensor.ByteSize(h.dtype, h.shape); !ok || size != h.bytes {
			return header{}, fmt.Errorf("%w: %q says %v%v in %d bytes", errHeader, h.key, h.dtype, h.shape, h.bytes)
		}
	}
	return h, nil
}
