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
	defer asOp("ScalarLike")
	return on(tensor.FullOf(x.DType(), v), x.Device())
}

// ZerosLike returns zeros of x's dtype and shape on x's device.
func ZerosLike(x *tensor.Tensor) *tensor.Tensor {
	defer asOp("ZerosLike")
	return on(tensor.Zeros(x.DType(), x.Shape()...), x.Device())
}

// OnesLike returns ones of x's dtype and shape on x's device.
func OnesLike(x *tensor.Tensor) *tensor.Tensor {
	defer asOp("OnesLike")
	return on(tensor.Ones(x.DType(), x.Shape()...), x.Device())
}

// FullLike returns x's dtype and shape filled with v, on x's device.
func FullLike(x *tensor.Tensor, v float64) *tensor.Tensor {
	defer asOp("FullLike")
	return on(tensor.FullOf(x.DType(), v, x.Shape()...), x.Device())
}
