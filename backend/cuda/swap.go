package cuda

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/eagerflow/eagerflow/device"
)

// Swapping (device.Swapper): a value moves to page-locked host memory and
// back by copies queued on the stream, so the host never waits for them.
// A host block is reused only once the stream has passed the copy that
// reads it: blocks swapped back in wait in pending until the next stream
// synchronisation moves them to the free lists.

// hostPool keeps page-locked host blocks by power-of-two size class.
type hostPool struct {
	mu           sync.Mutex
	free         map[int][][]byte
	pending      []retired
	retirements  uint64 // blocks retired so far: the next one's number
	pendingBytes int
	swaps        int // values swapped out, for tests
}

// retired is a block read by a queued copy, and when it was retired.
type retired struct {
	block []byte
	seq   uint64
}

// swapped is a value's bytes in a page-locked block.
type swapped struct {
	dev     *Device
	block   []byte
	n       int
	cleanup runtime.Cleanup
}

func (s *swapped) Size() int { return s.n }

// streamSync waits for the stream (inside ctx.Do); then the host blocks
// that copies queued before it read are free again. Those are the blocks
// retired before it began: another goroutine may queue a copy, and retire
// its block, while the stream is waited for, and that copy is not yet
// done when the wait ends; and waits may run at once on several
// goroutines, each freeing what was retired before its own began.
func (d *Device) streamSync() error {
	p := &d.host
	p.mu.Lock()
	before := p.retirements
	p.mu.Unlock()
	if err := d.ctx.StreamSynchronize(d.s); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.pending[:0]
	for _, r := range p.pending {
		if r.seq >= before {
			kept = append(kept, r)
			continue
		}
		c := classOf(len(r.block))
		p.free[c] = append(p.free[c], r.block)
		p.pendingBytes -= len(r.block)
	}
	clear(p.pending[len(kept):]) // no hold on the freed blocks
	p.pending = kept
	return nil
}

// hostBlock returns a page-locked block of at least n bytes.
func (d *Device) hostBlock(n int) ([]byte, error) {
	c := classOf(n)
	p := &d.host
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		p.mu.Unlock()
		return b, nil
	}
	p.mu.Unlock()
	var b []byte
	err := d.ctx.Do(func() (err error) { b, err = d.ctx.MemAllocHost(1 << c); return })
	return b, err
}

// retire returns a block read by a copy queued on the stream: free once
// the stream passes it.
func (d *Device) retire(b []byte) {
	p := &d.host
	p.mu.Lock()
	p.pending = append(p.pending, retired{block: b, seq: p.retirements})
	p.retirements++
	p.pendingBytes += len(b)
	p.mu.Unlock()
}

// maxPending bounds the page-locked bytes that copies queued since the
// last synchronisation read (CopyFromHost's blocks): beyond, a copy waits
// for the stream first, which frees them.
const maxPending = 64 << 20

// pendingFull reports whether the blocks waiting for the stream hold
// maxPending bytes or more.
func (d *Device) pendingFull() bool {
	d.host.mu.Lock()
	defer d.host.mu.Unlock()
	return d.host.pendingBytes >= maxPending
}

// SwapOut queues a copy of the first n bytes of b to a page-locked host
// block and returns it; b may be freed at once (the stream's order keeps
// the copy ahead of b's next user).
func (d *Device) SwapOut(b device.Buffer, n int) (device.Swapped, error) {
	gb, err := bufOf(b, d, "source")
	if err != nil {
		return nil, err
	}
	block, err := d.hostBlock(n)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		if err := d.ctx.Do(func() error { return d.ctx.MemcpyDtoH(block[:n], gb.ptr, d.s) }); err != nil {
			d.retire(block)
			return nil, err
		}
	}
	s := &swapped{dev: d, block: block, n: n}
	// A value never swapped back in (an execution that failed) gives its
	// block back when it is collected.
	s.cleanup = runtime.AddCleanup(s, d.retire, block)
	d.host.mu.Lock()
	d.host.swaps++
	d.host.mu.Unlock()
	return s, nil
}

// SwapIn queues the copy of s back into a new buffer.
func (d *Device) SwapIn(s device.Swapped) (device.Buffer, error) {
	sw, ok := s.(*swapped)
	if !ok || sw.dev != d || sw.block == nil {
		return nil, errSwapped(d)
	}
	b, err := d.Alloc(sw.n)
	if err != nil {
		return nil, err
	}
	if sw.n > 0 {
		if err := d.ctx.Do(func() error { return d.ctx.MemcpyHtoD(b.(*buffer).ptr, sw.block[:sw.n], d.s) }); err != nil {
			d.Free(b)
			return nil, err
		}
	}
	sw.cleanup.Stop()
	d.retire(sw.block)
	sw.block = nil
	return b, nil
}

func errSwapped(d *Device) error {
	return fmt.Errorf("cuda: %s: not a value this device swapped out, or one already swapped back in", d.name)
}
