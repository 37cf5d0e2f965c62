package ops

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/consts"
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
// Off the host it is a view of a constant shared with every other call
// for the same device, dtype and value (made once: on a GPU each was a
// fill launched): the tensor is the caller's (watch or release it as any
// other), its buffer shared, so nothing must write into it.
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

// scalarOn is a rank-0 dt tensor of v on dev: fresh on the host, shared
// elsewhere (internal/consts).
func scalarOn(dev device.Device, dt tensor.DType, v float64) *tensor.Tensor {
	return consts.Full(dev, dt, v, nil)
}

// FullLike returns x's dtype and shape filled with v, on x's device.
func FullLike(x *tensor.Tensor, v float64) *tensor.Tensor {
	needInputs("FullLike", x)
	defer asOp("FullLike")
	return tensor.FullOn(x.Device(), x.DType(), v, x.Shape()...)
}
