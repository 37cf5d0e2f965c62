package ops

import (
	"github.com/eagerflow/eagerflow/device"
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
func ScalarLike(x *tensor.Tensor, v float64) *tensor.Tensor {
	needInputs("ScalarLike", x)
	defer asOp("ScalarLike")
	return tensor.FullOn(x.Device(), x.DType(), v)
}

// ZerosLike returns zeros of x's dtype and shape on x's device.
func ZerosLike(x *tensor.Tensor) *tensor.Tensor {
	needInputs("ZerosLike", x)
	defer asOp("ZerosLike")
	return tensor.FullOn(x.Device(), x.DType(), 0, x.Shape()...)
}

// OnesLike returns ones of x's dtype and shape on x's device.
func OnesLike(x *tensor.Tensor) *tensor.Tensor {
	needInputs("OnesLike", x)
	defer asOp("OnesLike")
	return tensor.FullOn(x.Device(), x.DType(), 1, x.Shape()...)
}

// FullLike returns x's dtype and shape filled with v, on x's device.
func FullLike(x *tensor.Tensor, v float64) *tensor.Tensor {
	needInputs("FullLike", x)
	defer asOp("FullLike")
	return tensor.FullOn(x.Device(), x.DType(), v, x.Shape()...)
}
