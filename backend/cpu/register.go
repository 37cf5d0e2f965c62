package cpu

import (
	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// kernels is one CPU kernel per key dtype of an op; nil entries are
// skipped. elementwise, when set, is the op's float32 loops for fusion.
type kernels struct {
	f32, f64, i32, i64, u8, b eager.Kernel
	bf16, f16                 eager.Kernel // the half types
	f8e4m3, f8e5m2            eager.Kernel // the 8-bit floats
	elementwise               *eager.ElementwiseF32
}

// register registers k's kernels for the op named op on CPU devices.
func (k kernels) register(op string) {
	for dt, fn := range map[tensor.DType]eager.Kernel{
		tensor.Float32: k.f32, tensor.Float64: k.f64, tensor.Int32: k.i32,
		tensor.Int64: k.i64, tensor.Uint8: k.u8, tensor.Bool: k.b,
		tensor.BFloat16: k.bf16, tensor.Float16: k.f16, tensor.Float8E4M3: k.f8e4m3, tensor.Float8E5M2: k.f8e5m2,
	} {
		if fn != nil {
			eager.RegisterKernel(op, device.CPU, dt, fn)
		}
	}
	if k.elementwise != nil {
		eager.RegisterElementwise(op, device.CPU, k.elementwise)
	}
}

// allTypes is every dtype a tensor can have.
var allTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool,
	tensor.BFloat16, tensor.Float16, tensor.Float8E4M3, tensor.Float8E5M2}

// anyDType registers k for the op named op and every dtype (for kernels
// that move bytes without looking at them).
func anyDType(op string, k eager.Kernel) {
	for _, dt := range allTypes {
		eager.RegisterKernel(op, device.CPU, dt, k)
	}
}

// data is t's elements in host memory.
func data[T tensor.Elem](t *tensor.Tensor) []T { return backend.HostData[T](t) }

// deviceOf is the CPU device the call runs on.
func deviceOf(c *eager.Call) *device.CPUDevice {
	if d, ok := c.Device.(*device.CPUDevice); ok {
		return d
	}
	return device.Host()
}
