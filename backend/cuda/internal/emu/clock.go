package emu

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// The emulator's clock: a nominal time for the work a stream runs, so
// that timed events (cu.Timing, package profile's device times) give
// figures on machines without a GPU. It is a cost model, not a
// measurement: a launch costs launchNs plus its instructions at the
// device's nominal issue rate (128 lanes a multiprocessor at 1.7 GHz),
// device memory moves at deviceBytesPerNs, host copies at hostBytesPerNs
// and GEMMs at gemmFlopsPerNs. Orders of magnitude, and which op costs
// more than which, are what it tells.
const (
	launchNs         = 2000
	laneGHz          = 1.7
	deviceBytesPerNs = 3000 // 3 TB/s
	hostBytesPerNs   = 25   // 25 GB/s
	gemmFlopsPerNs   = 50e3 // 50 TFLOP/s
)

// tick advances the clock by ns (c.mu held, as the stream's work runs).
func (c *Context) tick(ns float64) { c.now += ns }

// launchNs is the nominal time of a launch that ran steps instructions.
func (c *Context) launchTime(steps int64) float64 {
	return launchNs + float64(steps)/(float64(max(c.cfg.SMs, 1))*128*laneGHz)
}

// timedEvent is an event of TimedEventRecord: the stream it was recorded
// on and, once the stream has passed it, the clock then.
type timedEvent struct {
	s    cu.Stream
	done bool
	at   float64
}

// TimedEventRecord makes an event and records it on s: when s reaches it,
// it takes the clock's time.
func (c *Context) TimedEventRecord(s cu.Stream) (cu.Event, error) {
	const call = "cuEventRecord"
	ev := &timedEvent{s: s}
	var e cu.Event
	err := c.enqueue(call, s, func() error {
		e = cu.Event(c.handle())
		c.events[e] = ev
		return nil
	}, func() error {
		ev.done, ev.at = true, c.now
		return nil
	})
	return e, err
}

// EventElapsed runs end's stream up to it where it has not passed it yet
// and returns the nominal milliseconds between the events.
func (c *Context) EventElapsed(start, end cu.Event) (float32, error) {
	const call = "cuEventElapsedTime"
	if err := c.enter(call); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	a, okA := c.events[start]
	b, okB := c.events[end]
	if !okA || !okB {
		return 0, cu.Errorf(call, cu.ErrorInvalidHandle, "event %#x or %#x was not recorded with timing", uintptr(start), uintptr(end))
	}
	if !b.done {
		st, err := c.stream(call, b.s)
		if err != nil {
			return 0, err
		}
		if err := c.runLocked(st); err != nil {
			return 0, err
		}
	}
	if !a.done {
		return 0, cu.Errorf(call, cu.ErrorNotReady, "the start event has not been reached")
	}
	return float32((b.at - a.at) / 1e6), nil
}

// EventDestroy frees a timed event.
func (c *Context) EventDestroy(e cu.Event) error {
	const call = "cuEventDestroy"
	if err := c.enter(call); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if _, ok := c.events[e]; !ok {
		return cu.Errorf(call, cu.ErrorInvalidHandle, "event %#x", uintptr(e))
	}
	delete(c.events, e)
	return nil
}

var _ cu.Timing = (*Context)(nil)
