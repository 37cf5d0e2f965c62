// Package consts keeps the constant tensors that library code makes again
// and again off the host (a gradient rule's scalars, a tape's zeros for
// the outputs no gradient reached): on a GPU each fresh one is a fill
// launched, a training step's worth of them a dozen launches. A tensor it
// returns is shared by every caller asking for the same device, dtype,
// value and shape (made once, plumb.FlagPinned: Release leaves it alone),
// and nothing may write into it.
package consts

import (
	"math"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
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
// recording's) and above maxBytes; else shared.
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
	if t := cache.m[k]; t != nil {
		return t
	}
	t := tensor.FullOn(dev, dt, v, shape...)
	plumb.Tensor.SetFlags(t, plumb.FlagPinned)
	if cache.m == nil || len(cache.m) >= maxEntries {
		cache.m = map[key]*tensor.Tensor{}
	}
	cache.m[k] = t
	return t
}
