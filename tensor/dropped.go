package tensor

import (
	"sync/atomic"

	"github.com/eagerflow/eagerflow/device"
)

// droppedBuffer stands in for the buffer of a tensor whose values were let
// go: it knows the device and size and holds no memory.
type droppedBuffer struct {
	dev  device.Device
	size int
	refs atomic.Int32
}

func (b *droppedBuffer) Device() device.Device { return b.dev }
func (b *droppedBuffer) Size() int             { return b.size }
func (b *droppedBuffer) Refs() *atomic.Int32   { return &b.refs }

// withoutValues returns a tensor with t's dtype, shape, layout and autodiff
// record but none of its values: reading them panics with ErrDropped, and
// Release does nothing. It holds no reference to t's buffer, so a tape that
// keeps it in place of t (for a gradient rule that reads only the shape)
// lets the garbage collector take t's memory unless someone else holds t.
func (t *Tensor) withoutValues() *Tensor {
	if t.buf == nil || t.ValuesDropped() {
		return t // released already, or a stand-in itself
	}
	d := &Tensor{dtype: t.dtype, shape: t.shape, layout: t.layout, flags: t.flags,
		buf: &droppedBuffer{dev: t.Device(), size: t.buf.Size()}}
	d.ad.Store(t.ad.Load())
	return d
}

// ValuesDropped reports whether t is such a stand-in.
func (t *Tensor) ValuesDropped() bool {
	_, ok := t.buf.(*droppedBuffer)
	return ok
}
