package ops

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// DType sets used by declarations.
var (
	floatTypes   = []tensor.DType{tensor.Float32, tensor.Float64}
	numericTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8}
	allTypes     = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool}
)

// cpuKernels registers one CPU kernel per dtype; nil entries are skipped.
type cpuKernels struct {
	f32, f64, i32, i64, u8, b eager.Kernel
	elementwise               *eager.ElementwiseF32 // the float32 loops, for fusion
}

func (k cpuKernels) register(op *eager.Op) *eager.Op {
	for dt, fn := range map[tensor.DType]eager.Kernel{
		tensor.Float32: k.f32, tensor.Float64: k.f64, tensor.Int32: k.i32,
		tensor.Int64: k.i64, tensor.Uint8: k.u8, tensor.Bool: k.b,
	} {
		if fn != nil {
			eager.RegisterKernel(op.Name, device.CPU, dt, fn)
		}
	}
	if k.elementwise != nil {
		eager.RegisterElementwise(op.Name, device.CPU, k.elementwise)
	}
	return op
}

// anyDType registers the same CPU kernel for every dtype (for kernels that
// move bytes without looking at them).
func anyDType(op *eager.Op, k eager.Kernel) *eager.Op {
	for _, dt := range allTypes {
		eager.RegisterKernel(op.Name, device.CPU, dt, k)
	}
	return op
}

func data[T tensor.Elem](t *tensor.Tensor) []T { return tensor.HostData[T](t) }

func cpu(c *eager.Call) *device.CPUDevice {
	if d, ok := c.Device.(*device.CPUDevice); ok {
		return d
	}
	return device.Host()
}

// normAxis maps a possibly negative axis into [0, rank) or fails the call.
func normAxis(c *eager.Call, axis, rank int) int {
	if axis < -rank || axis >= rank {
		c.Fail(tensor.ErrAxis, "axis %d is out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis
}
