package ops

import (
	"math"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// on moves a freshly made host tensor to dev (no copy when dev is the CPU).
func on(t *tensor.Tensor, dev device.Device) *tensor.Tensor {
	out, err := t.To(dev)
	if err != nil {
		panic(err)
	}
	return out
}

// ScalarLike returns a rank-0 tensor holding v in x's dtype, on x's device.
// Off the host it is a constant shared with every other call for the same
// device, dtype and value (made once: on a GPU each is a fill launched):
// Release leaves it alone, and nothing must write into its buffer.
func ScalarLike(x *tensor.Tensor, v float64) *tensor.Tensor {
	needInputs("ScalarLike", x)
	defer asOp("ScalarLike")
	return scalarOn(x.Device(), x.DType(), v)
}

// ZerosLike returns zeros of x's dtype and shape on x's device (for a
// scalar x, ScalarLike's shared constant off the host).
func ZerosLike(x *tensor.Tensor) *tensor.Tensor {
	needInputs("ZerosLike", x)
	defer asOp("ZerosLike")
	if x.Rank() == 0 {
		return scalarOn(x.Device(), x.DType(), 0)
	}
	return tensor.FullOn(x.Device(), x.DType(), 0, x.Shape()...)
}

// OnesLike returns ones of x's dtype and shape on x's device (for a
// scalar x, ScalarLike's shared constant off the host).
func OnesLike(x *tensor.Tensor) *tensor.Tensor {
	needInputs("OnesLike", x)
	defer asOp("OnesLike")
	if x.Rank() == 0 {
		return scalarOn(x.Device(), x.DType(), 1)
	}
	return tensor.FullOn(x.Device(), x.DType(), 1, x.Shape()...)
}

// scalars are the shared rank-0 constants off the host, by device, dtype
// and value: gradient rules, losses and pooling make the same few every
// step. At most maxScalars are kept (then the cache starts afresh; a
// constant dropped lives while something holds it).
var scalars struct {
	sync.Mutex
	m map[scalarKey]*tensor.Tensor
}

type scalarKey struct {
	dev  device.Device
	dt   tensor.DType
	bits uint64
}

const maxScalars = 256

// scalarOn is a rank-0 dt tensor of v on dev: fresh on the host and while
// dev records (its memory would be the recording's), else shared
// (plumb.FlagPinned).
func scalarOn(dev device.Device, dt tensor.DType, v float64) *tensor.Tensor {
	if dev == device.Host() {
		return tensor.FullOn(dev, dt, v)
	}
	if c, ok := dev.(device.CaptureState); ok && c.Capturing() {
		return tensor.FullOn(dev, dt, v)
	}
	key := scalarKey{dev, dt, math.Float64bits(v)}
	scalars.Lock()
	defer scalars.Unlock()
	if t := scalars.m[key]; t != nil {
		return t
	}
	t := tensor.FullOn(dev, dt, v)
	plumb.Tensor.SetFlags(t, plumb.FlagPinned)
	if scalars.m == nil || len(scalars.m) >= maxScalars {
		scalars.m = map[scalarKey]*tensor.Tensor{}
	}
	scalars.m[key] = t
	return t
}

// FullLike returns x's dtype and shape filled with v, on x's device.
func FullLike(x *tensor.Tensor, v float64) *tensor.Tensor {
	needInputs("FullLike", x)
	defer asOp("FullLike")
	return tensor.FullOn(x.Device(), x.DType(), v, x.Shape()...)
}
