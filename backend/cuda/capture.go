package cuda

import (
	"errors"
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/goid"
)

// Recordings (device.Capturer) through CUDA graphs: Capture captures the
// device's stream while fn queues its work, then instantiates the graph.
// The memory fn allocates comes from a pool the recording keeps
// (graphPool), allocated outside the stream's order so that the capture
// does not record it: a buffer freed during the capture is reused by a
// later allocation of the capture, in the same order at every replay, and
// never by anyone else. A recording's index checks write slots of its
// own, which its replays queue for the next synchronisation.

// graphPool is a recording's memory: every block it allocated, the free
// ones by size class, and its index checks.
type graphPool struct {
	free      map[int][]cu.Ptr
	all       []cu.Ptr
	checks    []indexCheck
	checkArea cu.Ptr
}

// poolAllocLocked returns nbytes of p's memory (d.mu held).
func (d *Device) poolAllocLocked(p *graphPool, nbytes int) (device.Buffer, error) {
	class := classOf(nbytes)
	if free := p.free[class]; len(free) > 0 {
		ptr := free[len(free)-1]
		p.free[class] = free[:len(free)-1]
		return d.track(&buffer{dev: d, ptr: ptr, size: nbytes, class: class, pool: p}), nil
	}
	var ptr cu.Ptr
	err := d.ctx.Do(func() (err error) { ptr, err = d.ctx.MemAlloc(1<<class, 0); return })
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %d bytes for a recording: %v", device.ErrOutOfMemory, d.name, nbytes, err)
	}
	p.all = append(p.all, ptr)
	return d.track(&buffer{dev: d, ptr: ptr, size: nbytes, class: class, pool: p}), nil
}

// Capturing reports whether a capture is in progress on d
// (device.CaptureState).
func (d *Device) Capturing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.capturing != nil
}

// Capture records the work fn queues on d (device.Capturer).
func (d *Device) Capture(fn func() error) (rec device.Recording, err error) {
	g, ok := d.ctx.(cu.Graphs)
	if !ok {
		return nil, fmt.Errorf("%w: the driver (%s) has no CUDA graphs", device.ErrCapture, d.drv.Name())
	}
	pool := &graphPool{free: map[int][]cu.Ptr{}}
	d.releasing.Lock() // a release under way finishes first
	d.mu.Lock()
	if d.capturing != nil {
		d.mu.Unlock()
		d.releasing.Unlock()
		return nil, fmt.Errorf("%w: %s is capturing already", device.ErrCapture, d.name)
	}
	for d.hostWork > 0 { // other goroutines' copies finish first
		d.captureEnded.Wait()
	}
	d.capturing, d.capturer = pool, goid.Current()
	d.mu.Unlock()
	d.releasing.Unlock()
	if err := d.ctx.Do(func() error { return g.BeginCapture(d.s) }); err != nil {
		d.endCapture(pool)
		return nil, fmt.Errorf("%w: %v", device.ErrCapture, err)
	}
	fnErr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				e, ok := r.(error)
				if !ok || !(waitedWhileCapturing(e) || errors.Is(e, device.ErrCapture)) {
					d.abandonCapture(g, pool)
					panic(r)
				}
				err = e
			}
		}()
		return fn()
	}()
	var exec cu.GraphExec
	endErr := d.ctx.Do(func() (err error) { exec, err = g.EndCapture(d.s); return })
	d.stopCapturing()
	if fnErr == nil && endErr == nil {
		return &recording{d: d, g: g, exec: exec, pool: pool}, nil
	}
	if endErr == nil {
		_ = d.ctx.Do(func() error { return g.GraphDestroy(exec) })
	}
	d.releasePool(pool)
	if fnErr != nil && !waitedWhileCapturing(fnErr) && !errors.Is(fnErr, device.ErrCapture) {
		return nil, fnErr
	}
	return nil, fmt.Errorf("%w: %v", device.ErrCapture, errors.Join(fnErr, endErr))
}

// waitedWhileCapturing reports whether err is a wait for the stream during
// its capture, which the driver refuses.
func waitedWhileCapturing(err error) bool {
	var ce *cu.Error
	return errors.As(err, &ce) && (ce.Code == cu.ErrorCaptureUnsupported || ce.Code == cu.ErrorCaptureInvalidated)
}

// abandonCapture ends a capture that fn left by a panic.
func (d *Device) abandonCapture(g cu.Graphs, pool *graphPool) {
	var exec cu.GraphExec
	if d.ctx.Do(func() (err error) { exec, err = g.EndCapture(d.s); return }) == nil {
		_ = d.ctx.Do(func() error { return g.GraphDestroy(exec) })
	}
	d.endCapture(pool)
}

// endCapture clears the capture in progress and frees its pool.
func (d *Device) endCapture(pool *graphPool) {
	d.stopCapturing()
	d.releasePool(pool)
}

// stopCapturing clears the capture in progress and runs the releases
// that waited for its end.
func (d *Device) stopCapturing() {
	d.mu.Lock()
	d.capturing, d.capturer = nil, 0
	waiting := d.afterCapture
	d.afterCapture = nil
	d.captureEnded.Broadcast()
	d.mu.Unlock()
	for _, fn := range waiting {
		fn()
	}
}

// outsideCapture runs release now, or at the end of the capture in
// progress, unless that capture is of pool. A recording dropped by the
// program is released by the collector's cleanup goroutine at any time,
// and while a stream captures, waiting for it or freeing memory would
// invalidate the capture; d.releasing keeps a capture from beginning
// while a release that found none runs.
func (d *Device) outsideCapture(pool *graphPool, release func()) {
	// No capture may begin between the check and the release's end (the
	// collector runs this on a goroutine of its own).
	d.releasing.Lock()
	defer d.releasing.Unlock()
	d.mu.Lock()
	if d.capturing != nil && d.capturing != pool {
		d.afterCapture = append(d.afterCapture, release)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	release()
}

// releasePool frees a recording's memory once the stream has done the
// work queued before (after any capture in progress).
func (d *Device) releasePool(p *graphPool) { d.outsideCapture(p, func() { d.freePool(p) }) }

func (d *Device) freePool(p *graphPool) {
	_ = d.ctx.Do(func() error {
		if err := d.streamSync(); err != nil {
			return err
		}
		for _, ptr := range p.all {
			_ = d.ctx.MemFree(ptr, 0)
		}
		return nil
	})
	d.mu.Lock()
	// Checks of this pool's area still queued go with it.
	d.checks = slices.DeleteFunc(d.checks, func(ch indexCheck) bool { return ch.area == p.checkArea && p.checkArea != 0 })
	// Under d.mu: the collector's cleanup of one of the pool's buffers
	// (reclaim) appends to p.free meanwhile.
	p.all, p.free = nil, map[int][]cu.Ptr{}
	d.mu.Unlock()
}

// recording is an instantiated graph and its memory.
type recording struct {
	d        *Device
	g        cu.Graphs
	exec     cu.GraphExec
	pool     *graphPool
	released bool
}

// Replay queues the graph, and its index checks for the next
// synchronisation.
func (r *recording) Replay() error {
	if r.released {
		return fmt.Errorf("cuda: a released recording replayed")
	}
	d := r.d
	if err := d.ctx.Do(func() error { return r.g.GraphLaunch(r.exec, d.s) }); err != nil {
		return err
	}
	d.mu.Lock()
	d.checks = append(d.checks, r.pool.checks...)
	d.mu.Unlock()
	return nil
}

// Alloc returns memory of the recording.
func (r *recording) Alloc(n int) (device.Buffer, error) {
	if err := device.CheckAlloc(r.d, n); err != nil {
		return nil, err
	}
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	return r.d.poolAllocLocked(r.pool, n)
}

// Release frees the graph and its memory.
func (r *recording) Release() {
	if r.released {
		return
	}
	r.released = true
	r.d.outsideCapture(r.pool, func() {
		_ = r.d.ctx.Do(func() error { return r.g.GraphDestroy(r.exec) })
		r.d.freePool(r.pool)
	})
}

// CaptureWhile records a loop run on the device (device.LoopCapturer):
// a condition of the graph, set from pred by kernels.SetConditional before
// a WHILE node, whose body is body's work and the setting of the
// condition again from the buffer body returns.
func (d *Device) CaptureWhile(pred device.Buffer, body func() (device.Buffer, error)) error {
	return d.captureBody(pred, false, true, body)
}

// CaptureIf records a branch run on the device (device.LoopCapturer): a
// condition set from pred (or its negation) before an IF node whose body
// is body's work.
func (d *Device) CaptureIf(pred device.Buffer, negate bool, body func() error) error {
	return d.captureBody(pred, negate, false, func() (device.Buffer, error) { return nil, body() })
}

// captureBody records a WHILE (loop) or IF node on a condition set from
// pred, negated or not, with body's work inside; a loop's body returns
// the predicate of its next pass.
func (d *Device) captureBody(pred device.Buffer, negate, loop bool, body func() (device.Buffer, error)) error {
	loops, ok := d.ctx.(cu.GraphLoops)
	if !ok {
		return fmt.Errorf("%w: the driver (%s) has no conditional nodes", device.ErrCapture, d.drv.Name())
	}
	if !d.Capturing() {
		return fmt.Errorf("cuda: a conditional node recorded outside a capture of %s", d.name)
	}
	f, err := d.function("graph", kernels.SetConditional)
	if err != nil {
		// The driver did not link cudaGraphSetConditional.
		return fmt.Errorf("%w: %v", device.ErrCapture, err)
	}
	var h cu.CondHandle
	if err := d.ctx.Do(func() (err error) { h, err = loops.NewCondition(d.s); return }); err != nil {
		return fmt.Errorf("%w: %v", device.ErrCapture, err)
	}
	if err := d.setCondition(f, h, pred, negate); err != nil {
		return err
	}
	begin := loops.BeginIf
	if loop {
		begin = loops.BeginWhile
	}
	if err := d.ctx.Do(func() error { return begin(d.s, h) }); err != nil {
		return fmt.Errorf("%w: %v", device.ErrCapture, err)
	}
	ended := false
	end := func() error {
		ended = true
		return d.ctx.Do(func() error { return loops.EndBody(d.s) })
	}
	defer func() {
		if !ended { // body panicked: the capture goes on outside the node
			_ = end()
		}
	}()
	next, bodyErr := body()
	if bodyErr == nil && loop {
		bodyErr = d.setCondition(f, h, next, false)
	}
	if err := end(); err != nil && bodyErr == nil {
		return fmt.Errorf("%w: %v", device.ErrCapture, err)
	}
	return bodyErr
}

// setCondition queues f, kernels.SetConditional, setting h from the bool
// at the start of pred, or from its negation.
func (d *Device) setCondition(f cu.Function, h cu.CondHandle, pred device.Buffer, negate bool) error {
	b, ok := pred.(*buffer)
	if !ok || b.dev != d {
		return fmt.Errorf("%w: a predicate is not a buffer of %s", device.ErrCapture, d.name)
	}
	var neg uint32
	if negate {
		neg = 1
	}
	return d.launchFunction(f, 1, 1, newArgs().U64(uint64(h)).Ptr(b.ptr).U32(neg))
}

var (
	_ device.Capturer     = (*Device)(nil)
	_ device.LoopCapturer = (*Device)(nil)
)

// awaitOthersCaptureLocked waits, d.mu held, while another goroutine
// captures: work queued now would be recorded into its graph (or, a wait
// for the stream, refused), and memory taken from its pool.
func (d *Device) awaitOthersCaptureLocked() {
	for d.capturing != nil && d.capturer != goid.Current() {
		d.captureEnded.Wait()
	}
}

// hostWorkBegins marks host work (a copy to or from the host, a wait)
// begun, once no other goroutine's capture is in progress, and returns
// the function that marks it done; a capture begins only when none is
// under way.
func (d *Device) hostWorkBegins() (done func()) {
	d.mu.Lock()
	d.awaitOthersCaptureLocked()
	d.hostWork++
	d.mu.Unlock()
	return d.hostWorkDone
}

func (d *Device) hostWorkDone() {
	d.mu.Lock()
	d.hostWork--
	if d.hostWork == 0 {
		d.captureEnded.Broadcast()
	}
	d.mu.Unlock()
}
