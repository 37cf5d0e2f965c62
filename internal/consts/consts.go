// Package consts keeps the constant tensors that library code makes again
// and again off the host (a gradient rule's scalars, a tape's zeros for
// the outputs no gradient reached): on a GPU each fresh one is a fill
// launched, a training step's worth of them a dozen launches. Each call
// returns a view of a tensor made once for its device, dtype, value and
// shape and kept here: the view is the caller's (its own autodiff and
// trace state; Release drops its hold on the buffer, which the kept
// tensor holds still), the buffer everyone's, so nothing may write into
// it.
package consts

import (
	"math"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// At most maxEntries are kept (then the cache starts afresh; a constant
// dropped lives while something holds it), each of at most maxBytes.
const (
	maxEntries = 256
	maxBytes   = 1 << 20
)

var cache struct {
	sync.Mutex
	m map[key]*tensor.Tensor
}

type key struct {
	dev   device.Device
	dt    tensor.DType
	bits  uint64
	shape string
}

// Full returns a dt tensor of shape filled with v on dev: fresh on the
// host, while dev records (device.CaptureState: its memory would be the
// recording's) and above maxBytes; else a view of the shared one.
func Full(dev device.Device, dt tensor.DType, v float64, shape tensor.Shape) *tensor.Tensor {
	n, ok := shape.Size()
	if dev == device.Host() || !ok || n*dt.Size() > maxBytes {
		return tensor.FullOn(dev, dt, v, shape...)
	}
	if c, ok := dev.(device.CaptureState); ok && c.Capturing() {
		return tensor.FullOn(dev, dt, v, shape...)
	}
	k := key{dev, dt, math.Float64bits(v), shape.String()}
	cache.Lock()
	defer cache.Unlock()
	t := cache.m[k]
	if t == nil {
		t = tensor.FullOn(dev, dt, v, shape...)
		if cache.m == nil || len(cache.m) >= maxEntries {
			cache.m = map[key]*tensor.Tensor{}
		}
		cache.m[k] = t
	}
	return t.View(t.Shape(), nil)
}
