package cuda

import (
	"fmt"
	"time"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/device"
)

// The device's queue timed by CUDA events (device.Timer), for package
// profile: a mark is a timed event recorded on the device's stream. On the
// emulator the times are its clock's, a nominal cost model (package emu).

// timing returns the context's event timing, or an error naming the
// driver that has none.
func (d *Device) timing() (cu.Timing, error) {
	t, ok := d.ctx.(cu.Timing)
	if !ok {
		return nil, fmt.Errorf("cuda: %s: the driver (%s) times no events", d.name, d.drv.Name())
	}
	return t, nil
}

// Mark records a timed event behind the work queued so far.
func (d *Device) Mark() (device.Mark, error) {
	t, err := d.timing()
	if err != nil {
		return 0, err
	}
	var e cu.Event
	err = d.ctx.Do(func() (err error) { e, err = t.TimedEventRecord(d.s); return })
	return device.Mark(e), err
}

// Between waits for b and returns the device time from a to b.
func (d *Device) Between(a, b device.Mark) (time.Duration, error) {
	t, err := d.timing()
	if err != nil {
		return 0, err
	}
	var ms float32
	err = d.ctx.Do(func() (err error) { ms, err = t.EventElapsed(cu.Event(a), cu.Event(b)); return })
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Forget frees a mark.
func (d *Device) Forget(m device.Mark) {
	if t, err := d.timing(); err == nil {
		_ = d.ctx.Do(func() error { return t.EventDestroy(cu.Event(m)) })
	}
}

var _ device.Timer = (*Device)(nil)
